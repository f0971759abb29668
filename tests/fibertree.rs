//! Fibertree indexes checked against a `BTreeMap` model of the tensor: for
//! random tensors, every dimension order and a variety of level formats, a
//! full traversal yields exactly the stored entries with their values, and
//! at every fiber `len`, iteration, `lookup`, `seek` and `slots` agree with
//! the model.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use einsql::Error;
use einsql::storage::fibertree::{FiberTree, IndexSpec, LeafValues, LevelFormat, dense_limit};
use einsql::storage::{Coo, DimensionSpec, Tensor, ValueData};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use LevelFormat::{Bytemap, Compressed, Dense, Hashed};

/// What a random tensor is made of; the tensor itself is built in the test.
#[derive(Clone, Debug)]
struct Input {
    sizes: Vec<u64>,
    entries: Vec<Vec<i64>>,
    values: Vec<i64>,
    /// 0: Int64, 1: Float64, 2: Boolean, 3: a bag (no value column).
    kind: u8,
}

impl Input {
    fn tensor(&self) -> Tensor {
        let n = self.sizes.len();
        let dims = self
            .sizes
            .iter()
            .enumerate()
            .map(|(d, &s)| DimensionSpec::new(format!("d{d}"), Some(s)))
            .collect();
        let coords = (0..n)
            .map(|d| self.entries.iter().map(|e| e[d]).collect())
            .collect();
        let data = match self.kind {
            0 => Some(ValueData::Int64(self.values.clone())),
            1 => Some(ValueData::Float64(
                self.values.iter().map(|&v| v as f64).collect(),
            )),
            2 => Some(ValueData::Boolean(
                self.values.iter().map(|&v| v > 0).collect(),
            )),
            _ => None,
        };
        Tensor::from_coo(Coo {
            dims,
            coords,
            values: data.into_iter().map(|d| ("v".to_string(), d)).collect(),
            column_order: None,
        })
        .expect("valid random tensor")
    }
}

/// 1–5 dimensions, sizes from 1 to 2^40, up to 48 entries whose coordinates
/// are skewed towards 0 and 1 (so there are duplicates and heavy fibers).
fn inputs() -> impl Strategy<Value = Input> {
    let size = prop_oneof![
        6 => 1u64..=5,
        2 => 6u64..=40,
        1 => Just(3_000_000u64),
        1 => Just(1u64 << 40),
    ];
    (prop::collection::vec(size, 1..=5), 0u8..4)
        .prop_flat_map(|(sizes, kind)| {
            let entry = prop::collection::vec(any::<u64>(), sizes.len());
            let raw = prop::collection::vec((entry, -50i64..50), 0..48);
            (Just(sizes), Just(kind), raw)
        })
        .prop_map(|(sizes, kind, raw)| {
            let skew = |r: u64, size: u64| {
                let range = if r.is_multiple_of(3) {
                    size
                } else {
                    size.min(2)
                };
                ((r / 3) % range) as i64
            };
            let entries = raw
                .iter()
                .map(|(e, _)| e.iter().zip(&sizes).map(|(&r, &s)| skew(r, s)).collect())
                .collect();
            let values = raw.iter().map(|&(_, v)| v).collect();
            Input {
                sizes,
                entries,
                values,
                kind,
            }
        })
}

fn format() -> impl Strategy<Value = LevelFormat> {
    prop_oneof![Just(Dense), Just(Compressed), Just(Hashed), Just(Bytemap)]
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            out.push(p);
        }
    }
    out
}

/// One value of a column, comparable across types.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cell {
    Bool(bool),
    Int(i64),
    Float(u64),
}

fn cell(array: &ArrayRef, i: usize) -> Cell {
    match array.data_type() {
        DataType::Boolean => Cell::Bool(array.as_boolean().value(i)),
        DataType::Int64 => Cell::Int(array.as_primitive::<Int64Type>().value(i)),
        DataType::Float64 => Cell::Float(array.as_primitive::<Float64Type>().value(i).to_bits()),
        other => panic!("unexpected value type {other}"),
    }
}

fn leaf_cell(values: LeafValues<'_>, i: usize) -> Cell {
    match values {
        LeafValues::Boolean(b) => Cell::Bool(b.value(i)),
        LeafValues::Int64(v) => Cell::Int(v[i]),
        LeafValues::Float64(v) => Cell::Float(v[i].to_bits()),
        LeafValues::Int128(v) => panic!("the generated tensors hold no HUGEINT ({})", v[i]),
    }
}

/// The tensor's entries keyed by their coordinates in `order`, with their
/// row in the stored batch.
fn model(tensor: &Tensor, order: &[usize]) -> BTreeMap<Vec<i64>, usize> {
    (0..tensor.nnz())
        .map(|row| (order.iter().map(|&d| tensor.coords(d)[row]).collect(), row))
        .collect()
}

/// The number of parent positions of every level, and whether a dense or
/// bytemap level exceeds the documented allocation limit.
fn expected_fibers(
    tensor: &Tensor,
    spec: &IndexSpec,
    model: &BTreeMap<Vec<i64>, usize>,
) -> (Vec<u64>, bool) {
    let limit = dense_limit(tensor.nnz());
    let mut fibers = vec![1u64];
    for (k, (&d, format)) in spec.order.iter().zip(&spec.formats).enumerate() {
        let above = *fibers.last().unwrap();
        let next = if matches!(format, Dense | Bytemap) {
            match above.checked_mul(tensor.dims()[d].size) {
                Some(slots) if slots <= limit => slots,
                _ => return (fibers, true),
            }
        } else {
            model
                .keys()
                .map(|key| &key[..=k])
                .collect::<BTreeSet<_>>()
                .len() as u64
        };
        fibers.push(next);
    }
    (fibers, false)
}

fn check_tree(
    tree: &FiberTree,
    tensor: &Tensor,
    model: &BTreeMap<Vec<i64>, usize>,
    fibers: &[u64],
) -> Result<(), TestCaseError> {
    let n = tree.levels().len();
    prop_assert_eq!(tree.nnz(), tensor.nnz());
    for (level, &f) in tree.levels().iter().zip(fibers) {
        prop_assert_eq!(level.fibers() as u64, f);
        prop_assert!(level.fiber(level.fibers()).is_empty());
    }
    // A full traversal yields exactly the model's entries, in order, with
    // the tensor's values.
    let mut visited = Vec::new();
    tree.for_each_entry(|coords, leaf| visited.push((coords.to_vec(), leaf)));
    prop_assert_eq!(visited.len(), model.len());
    let columns = tensor.annotation_columns();
    for ((coords, leaf), (key, &row)) in visited.iter().zip(model) {
        prop_assert_eq!(coords, key);
        prop_assert!(tree.levels()[n - 1].contains(*leaf));
        for (c, column) in columns.iter().enumerate() {
            let expected = cell(column, row);
            prop_assert_eq!(cell(&tree.values()[c], *leaf), expected);
            prop_assert_eq!(leaf_cell(tree.leaf_values(c).unwrap(), *leaf), expected);
        }
    }
    check_fiber(tree, 0, 0, &mut Vec::new(), model)
}

/// Checks the fiber of level `k` under `parent`, whose path is `prefix`,
/// then its children.
fn check_fiber(
    tree: &FiberTree,
    k: usize,
    parent: usize,
    prefix: &mut Vec<i64>,
    model: &BTreeMap<Vec<i64>, usize>,
) -> Result<(), TestCaseError> {
    let level = &tree.levels()[k];
    let fiber = level.fiber(parent);
    let children: BTreeSet<i64> = model
        .range(prefix.clone()..)
        .take_while(|(key, _)| key.starts_with(prefix))
        .map(|(key, _)| key[k])
        .collect();
    prop_assert_eq!(fiber.len(), children.len());
    prop_assert_eq!(fiber.is_empty(), children.is_empty());
    let iterated: Vec<(i64, usize)> = fiber.cursor().collect();
    let coords: Vec<i64> = iterated.iter().map(|&(c, _)| c).collect();
    prop_assert_eq!(&coords, &children.iter().copied().collect::<Vec<_>>());
    if let Some(sorted) = fiber.sorted_coords() {
        prop_assert_eq!(sorted, &coords[..]);
    }
    // Dense-addressed levels give every coordinate a slot at base + c.
    match fiber.slots() {
        Some((base, stride)) => {
            prop_assert!(level.format().is_dense_addressed());
            prop_assert_eq!(stride as u64, level.size());
            for &(c, child) in &iterated {
                prop_assert_eq!(child, base + c as usize);
            }
        }
        None => prop_assert!(!level.format().is_dense_addressed()),
    }
    let child_of: BTreeMap<i64, usize> = iterated.iter().copied().collect();
    prop_assert_eq!(child_of.len(), iterated.len());
    for &(_, child) in &iterated {
        prop_assert!(level.contains(child));
    }

    let size = level.size() as i64;
    let mut probes: BTreeSet<i64> = children.clone();
    probes.extend([i64::MIN, -1, size - 1, size, size + 1, i64::MAX]);
    probes.extend(0..size.min(8));
    let first_from = |c: i64| child_of.range(c..).next().map(|(&c, &p)| (c, p));
    for &c in &probes {
        prop_assert_eq!(fiber.lookup(c), child_of.get(&c).copied(), "lookup({})", c);
        let mut cursor = fiber.cursor();
        cursor.seek(c);
        prop_assert_eq!(
            cursor.current(),
            first_from(c),
            "seek({}) from the start",
            c
        );
    }
    // Seeks with rising targets, interleaved with advances, as leapfrog
    // intersection does them.
    let mut cursor = fiber.cursor();
    let mut expected = first_from(i64::MIN);
    for (i, &c) in probes.iter().enumerate() {
        cursor.seek(c);
        expected = expected.and_then(|(at, _)| first_from(c.max(at)));
        prop_assert_eq!(cursor.current(), expected, "seek({}) after others", c);
        if i % 3 == 1 {
            cursor.advance();
            expected = expected.and_then(|(at, _)| at.checked_add(1).and_then(first_from));
            prop_assert_eq!(cursor.current(), expected, "advance after seek({})", c);
        }
    }
    prop_assert_eq!(cursor.is_done(), expected.is_none());

    if k + 1 < tree.levels().len() {
        for &(c, child) in &iterated {
            prefix.push(c);
            check_fiber(tree, k + 1, child, prefix, model)?;
            prefix.pop();
        }
    }
    Ok(())
}

/// Whether the leaf coordinates and values are the tensor's own buffers.
fn shares_buffers(tree: &FiberTree, tensor: &Tensor) -> bool {
    let n = tensor.dims().len();
    let crd = tree.levels()[n - 1]
        .crd()
        .expect("a compressed or hashed leaf");
    crd.as_ptr() == tensor.coords(n - 1).as_ptr()
        && tree
            .values()
            .iter()
            .zip(tensor.annotation_columns())
            .all(|(a, b)| Arc::ptr_eq(a, b))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_order_and_format_matches_the_model(
        input in inputs(),
        mixed in prop::collection::vec(prop::collection::vec(format(), 5), 2),
    ) {
        let tensor = input.tensor();
        let n = tensor.dims().len();
        let mut combos: Vec<Vec<LevelFormat>> = [Compressed, Hashed, Dense, Bytemap]
            .iter()
            .map(|&f| vec![f; n])
            .collect();
        combos.extend(mixed.iter().map(|m| m[..n].to_vec()));
        for order in permutations(n) {
            let model = model(&tensor, &order);
            for formats in &combos {
                let spec = IndexSpec::new(order.clone(), formats.clone());
                let (fibers, refused) = expected_fibers(&tensor, &spec, &model);
                match FiberTree::build(&tensor, &spec) {
                    Ok(tree) => {
                        prop_assert!(!refused, "{} should be refused", spec);
                        check_tree(&tree, &tensor, &model, &fibers)?;
                        let leaf = formats[n - 1];
                        if spec.is_identity() && matches!(leaf, Compressed | Hashed) {
                            prop_assert!(shares_buffers(&tree, &tensor), "{} copies", spec);
                        }
                    }
                    Err(Error::Invalid(message)) => {
                        prop_assert!(refused, "{} refused: {}", spec, message);
                        prop_assert!(message.contains("limit"), "{}", message);
                    }
                    Err(other) => prop_assert!(false, "{}: {}", spec, other),
                }
            }
        }
    }
}

fn matrix(rows: &[(i64, i64, i64)], sizes: [u64; 2]) -> Tensor {
    Tensor::from_coo(Coo {
        dims: vec![
            DimensionSpec::new("i", Some(sizes[0])),
            DimensionSpec::new("j", Some(sizes[1])),
        ],
        coords: vec![
            rows.iter().map(|r| r.0).collect(),
            rows.iter().map(|r| r.1).collect(),
        ],
        values: vec![(
            "v".to_string(),
            ValueData::Int64(rows.iter().map(|r| r.2).collect()),
        )],
        column_order: None,
    })
    .unwrap()
}

#[test]
fn identity_order_shares_the_arrow_buffers() {
    let tensor = matrix(&[(0, 1, 5), (2, 0, 7), (0, 1, 1), (1, 2, 3)], [3, 3]);
    for leaf in [Compressed, Hashed] {
        let tree =
            FiberTree::build(&tensor, &IndexSpec::new(vec![0, 1], vec![Dense, leaf])).unwrap();
        assert!(shares_buffers(&tree, &tensor));
    }
    let transposed = FiberTree::build(&tensor, &IndexSpec::compressed(vec![1, 0])).unwrap();
    let mut entries = Vec::new();
    transposed.for_each_entry(|c, leaf| entries.push((c.to_vec(), leaf)));
    assert_eq!(
        entries,
        vec![(vec![0, 2], 0), (vec![1, 0], 1), (vec![2, 1], 2)]
    );
    let Some(LeafValues::Int64(values)) = transposed.leaf_values(0) else {
        panic!("Int64 values expected");
    };
    assert_eq!(values, &[7, 6, 3]);
}

#[test]
fn dense_leaf_values_have_fill_slots() {
    let tensor = matrix(&[(0, 1, 5), (1, 2, 3)], [2, 3]);
    let tree = FiberTree::build(
        &tensor,
        &IndexSpec::new(vec![0, 1], vec![Compressed, Dense]),
    )
    .unwrap();
    let leaf = &tree.levels()[1];
    assert_eq!(leaf.positions(), 6);
    let Some(LeafValues::Int64(values)) = tree.leaf_values(0) else {
        panic!("Int64 values expected");
    };
    assert_eq!(values, &[0, 5, 0, 0, 0, 3]);
    let present: Vec<bool> = (0..6).map(|p| leaf.contains(p)).collect();
    assert_eq!(present, [false, true, false, false, false, true]);
}

#[test]
fn specs_are_validated() {
    let tensor = matrix(&[(0, 1, 5)], [3, 3]);
    let invalid = |spec: IndexSpec| match FiberTree::build(&tensor, &spec) {
        Err(Error::Invalid(message)) => message,
        other => panic!("{spec} should be invalid, got {other:?}"),
    };
    assert_eq!(
        invalid(IndexSpec::compressed(vec![0])),
        "index order (0) lists 1 dimensions, the tensor has 2"
    );
    assert_eq!(
        invalid(IndexSpec::compressed(vec![1, 1])),
        "index order (1,1) lists dimension 1 twice"
    );
    assert_eq!(
        invalid(IndexSpec::compressed(vec![0, 2])),
        "index order (0,2) names dimension 2, the tensor has dimensions 0..2"
    );
    assert_eq!(
        invalid(IndexSpec::new(vec![1, 0], vec![Dense])),
        "index (1,0) gives 1 level formats for 2 levels"
    );
}

#[test]
fn huge_dense_levels_are_refused() {
    let tensor = matrix(&[(0, 1, 5), (9, 3, 1)], [1 << 40, 4]);
    let spec = IndexSpec::new(vec![0, 1], vec![Dense, Compressed]);
    let err = FiberTree::build(&tensor, &spec).unwrap_err().to_string();
    assert!(
        err.contains("a dense level over dimension 'i' (size 1099511627776) under 1 fibers")
            && err.contains("limit of 4·nnz + 2^20 = 1048584"),
        "{err}"
    );
    // Under a compressed level, a dense level of 2 × 4 slots is fine.
    let spec = IndexSpec::new(vec![0, 1], vec![Compressed, Bytemap]);
    assert_eq!(
        FiberTree::build(&tensor, &spec).unwrap().levels()[1].positions(),
        8
    );
}

#[test]
fn display_and_names() {
    let spec = IndexSpec::new(vec![1, 0], vec![Compressed, Dense]);
    assert_eq!(spec.to_string(), "(1,0) compressed/dense");
    let tensor = matrix(&[(0, 1, 5)], [3, 3]);
    assert_eq!(spec.named(tensor.dims()), "(j,i) compressed/dense");
    assert_eq!(IndexSpec::identity(2), IndexSpec::compressed(vec![0, 1]));
    assert!(IndexSpec::identity(2).is_identity() && !spec.is_identity());
}

#[test]
fn tensor_index_caches_trees() {
    let tensor = matrix(&[(0, 1, 5), (2, 2, 1)], [3, 3]);
    let spec = IndexSpec::new(vec![1, 0], vec![Hashed, Bytemap]);
    let first = tensor.index(&spec).unwrap();
    let second = tensor.index(&spec).unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(tensor.built_indexes(), vec![spec]);
}

#[test]
fn scalars_have_no_levels() {
    let tensor = Tensor::from_coo(Coo {
        dims: Vec::new(),
        coords: Vec::new(),
        values: vec![("v".to_string(), ValueData::Float64(vec![3.5]))],
        column_order: None,
    })
    .unwrap();
    let tree = FiberTree::build(&tensor, &IndexSpec::identity(0)).unwrap();
    assert!(tree.levels().is_empty() && tree.root().is_none());
    let mut leaves = Vec::new();
    tree.for_each_entry(|coords, leaf| leaves.push((coords.len(), leaf)));
    assert_eq!(leaves, vec![(0, 0)]);
    let Some(LeafValues::Float64(values)) = tree.leaf_values(0) else {
        panic!("Float64 values expected");
    };
    assert_eq!(values, &[3.5]);
}

#[test]
fn larger_tensor_all_orders() {
    // 3-D, 20k entries with coordinates past 64 packed bits (comparison-sort
    // path) and one with small sizes (radix path); every order must list
    // the entries sorted.
    for sizes in [[1u64 << 40, 1 << 30, 7], [50, 60, 70]] {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound) as i64
        };
        let rows = 20_000;
        let coords: Vec<Vec<i64>> = (0..3)
            .map(|d| (0..rows).map(|_| next(sizes[d].min(1 << 20))).collect())
            .collect();
        let tensor = Tensor::from_coo(Coo {
            dims: (0..3)
                .map(|d| DimensionSpec::new(format!("d{d}"), Some(sizes[d])))
                .collect(),
            coords,
            values: Vec::new(),
            column_order: None,
        })
        .unwrap();
        for order in permutations(3) {
            let tree = FiberTree::build(&tensor, &IndexSpec::compressed(order.clone())).unwrap();
            let model = model(&tensor, &order);
            let mut visited = Vec::with_capacity(tensor.nnz());
            tree.for_each_entry(|c, leaf| visited.push((c.to_vec(), leaf)));
            assert_eq!(visited.len(), model.len());
            let annotation = &tensor.annotation_columns()[0];
            let multiplicities = annotation.as_primitive::<Int64Type>().values();
            let Some(LeafValues::Int64(values)) = tree.leaf_values(0) else {
                panic!("multiplicities expected");
            };
            for ((coords, leaf), (key, &row)) in visited.iter().zip(&model) {
                assert_eq!(coords, key);
                assert_eq!(values[*leaf], multiplicities[row]);
            }
        }
    }
}

#[test]
fn full_tensors_match_the_model_and_share_their_values() {
    // Every cell stored, of every value kind: the all-dense tree in stored
    // order takes the tensor's value columns as they are, and every tree
    // still lists exactly the entries.
    for sizes in [vec![1u64], vec![5], vec![3, 4], vec![2, 1, 3]] {
        let cells: Vec<Vec<i64>> = sizes.iter().fold(vec![Vec::new()], |cells, &s| {
            cells
                .iter()
                .flat_map(|c| (0..s as i64).map(move |k| [c.clone(), vec![k]].concat()))
                .collect()
        });
        for kind in 0..4 {
            let input = Input {
                sizes: sizes.clone(),
                entries: cells.iter().rev().cloned().collect(),
                values: (0..cells.len() as i64).map(|v| v * 7 % 5 - 2).collect(),
                kind,
            };
            let tensor = input.tensor();
            assert!(tensor.is_full());
            let n = sizes.len();
            for order in permutations(n) {
                let model = model(&tensor, &order);
                for formats in [vec![Dense; n], vec![Compressed; n]] {
                    let spec = IndexSpec::new(order.clone(), formats);
                    let tree = FiberTree::build(&tensor, &spec).unwrap();
                    let (fibers, refused) = expected_fibers(&tensor, &spec, &model);
                    assert!(!refused);
                    check_tree(&tree, &tensor, &model, &fibers).unwrap();
                }
            }
            let dense =
                FiberTree::build(&tensor, &IndexSpec::new((0..n).collect(), vec![Dense; n]))
                    .unwrap();
            assert!(
                dense
                    .values()
                    .iter()
                    .zip(tensor.annotation_columns())
                    .all(|(a, b)| Arc::ptr_eq(a, b))
            );
        }
    }
    assert!(!matrix(&[(0, 1, 5)], [1, 2]).is_full());
}

#[test]
fn lookups_in_nearly_consecutive_fibers_find_every_coordinate() {
    // Keys 1..300 with a few gaps (at the start, in the middle, in runs,
    // near the end), under two rows: a lookup searches only between the
    // positions that the first and last coordinates allow.
    let gaps = [2, 3, 50, 151, 152, 153, 298];
    let keys: Vec<i64> = (1..300).filter(|k| !gaps.contains(k)).collect();
    let mut rows: Vec<(i64, i64, i64)> = keys.iter().map(|&k| (0, k, k * 10)).collect();
    rows.extend(keys.iter().step_by(7).map(|&k| (1, k, -k)));
    let tensor = matrix(&rows, [2, 300]);
    let tree = FiberTree::build(&tensor, &IndexSpec::compressed(vec![0, 1])).unwrap();
    let level = &tree.levels()[1];
    for (row, expected) in [
        (0, keys.clone()),
        (1, keys.iter().step_by(7).copied().collect()),
    ] {
        let parent = tree.levels()[0].fiber(0).lookup(row).unwrap();
        let fiber = level.fiber(parent);
        let positions: BTreeMap<i64, usize> = fiber.cursor().collect();
        assert_eq!(positions.keys().copied().collect::<Vec<_>>(), expected);
        for c in (-3..305).chain([i64::MIN, i64::MIN + 1, i64::MAX - 1, i64::MAX]) {
            assert_eq!(
                fiber.lookup(c),
                positions.get(&c).copied(),
                "row {row}, lookup({c})"
            );
        }
    }
}
