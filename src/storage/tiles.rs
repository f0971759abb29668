//! Tiled indexes: a tensor cut into blocks of a declared size per
//! dimension (`CREATE INDEX a_t ON a (i, j) USING (tiles(256, 256))`), as
//! the tensor-relational algebra stores a matrix for blocked products.
//!
//! A [`TiledIndex`] keeps the *block coordinates* of the blocks that hold
//! at least one stored entry (coordinate `c` of a level lies in block
//! `c / size`), sorted in the index's level order like the levels of a
//! fibertree, and per present block a dense tile: `size₁ × size₂ × …`
//! values, row-major in level order, absent cells 0. A block at the end of
//! a dimension that is not a multiple of its size is a full tile too; the
//! cells past the dimension stay 0. Only a tensor with one `DOUBLE` value
//! column can be tiled.
//!
//! The index also says whether every value is finite: a dense kernel over
//! the tiles multiplies the 0 of absent cells, which the reference never
//! does (`0 × ∞` is NaN), so the executor does not use the tiles of a
//! tensor holding a NaN or an infinity.

use std::fmt;

use arrow::array::AsArray;
use arrow::datatypes::Float64Type;
use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::storage::fibertree::{IndexSpec, named_order};
use crate::storage::{Dimension, Tensor, ValueType};

/// The largest tile size along one dimension.
pub const MAX_TILE_SIZE: u64 = 1 << 16;

/// The most cells one tile may hold (128 MiB of values).
pub const MAX_TILE_CELLS: u64 = 1 << 24;

/// Which tiled index: a dimension order (positions in the tensor's stored
/// order, outermost first) and a tile size per level.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TileSpec {
    /// The dimension of each level, outermost first.
    pub order: Vec<usize>,
    /// The tile size of each level.
    pub sizes: Vec<u64>,
}

impl TileSpec {
    /// A tiled index over `order` with tiles of `sizes` (checked by
    /// [`TileSpec::validate`] when built).
    pub fn new(order: Vec<usize>, sizes: Vec<u64>) -> TileSpec {
        TileSpec { order, sizes }
    }

    /// Checks that the order is a permutation of the tensor's dimensions,
    /// that there is a size per level, each from 1 to [`MAX_TILE_SIZE`],
    /// and that a tile holds at most [`MAX_TILE_CELLS`] cells.
    pub fn validate(&self, dims: &[Dimension]) -> Result<()> {
        IndexSpec::compressed(self.order.clone()).validate(dims)?;
        if self.sizes.len() != self.order.len() {
            return Err(Error::Invalid(format!(
                "{} gives {} tile sizes for {} dimensions; give one per dimension",
                self.format(),
                self.sizes.len(),
                self.order.len()
            )));
        }
        if let Some(size) = self.sizes.iter().find(|&&s| s == 0 || s > MAX_TILE_SIZE) {
            return Err(Error::Invalid(format!(
                "{} has tile size {size}; a tile size is from 1 to {MAX_TILE_SIZE}",
                self.format()
            )));
        }
        if self.cells().is_none_or(|cells| cells > MAX_TILE_CELLS) {
            return Err(Error::Invalid(format!(
                "{} makes tiles of more than {MAX_TILE_CELLS} cells; choose smaller tiles",
                self.format()
            )));
        }
        Ok(())
    }

    /// The cells of one tile (`None` on overflow).
    pub fn cells(&self) -> Option<u64> {
        self.sizes.iter().try_fold(1u64, |n, &s| n.checked_mul(s))
    }

    /// `tiles(256,256)`: the format as `USING` spells it.
    pub fn format(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(u64::to_string).collect();
        format!("tiles({})", sizes.join(","))
    }

    /// The spec with dimension names, e.g. `(i,j) tiles(256,256)`.
    pub fn named(&self, dims: &[Dimension]) -> String {
        format!("{} {}", named_order(&self.order, dims), self.format())
    }

    /// The most bytes the index takes over `tensor`: a tile per entry or
    /// per block, whichever is fewer, and its block coordinates. What
    /// building it is charged against the memory limit.
    pub fn estimated_bytes(&self, tensor: &Tensor) -> u64 {
        let blocks = self
            .order
            .iter()
            .zip(&self.sizes)
            .try_fold(1u64, |n, (&d, &s)| {
                let size = tensor.dims().get(d).map_or(1, |dim| dim.size);
                n.checked_mul(size.div_ceil(s.max(1)))
            })
            .unwrap_or(u64::MAX)
            .min(tensor.nnz() as u64);
        let per_block = self
            .cells()
            .unwrap_or(u64::MAX)
            .saturating_add(self.order.len() as u64)
            .saturating_mul(8);
        blocks.saturating_mul(per_block)
    }
}

impl fmt::Display for TileSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let order: Vec<String> = self.order.iter().map(usize::to_string).collect();
        write!(f, "({}) {}", order.join(","), self.format())
    }
}

/// A tiled index over a tensor; see the module documentation.
#[derive(Debug)]
pub struct TiledIndex {
    spec: TileSpec,
    /// The block coordinates of the present blocks, a row per block,
    /// sorted.
    blocks: Vec<Box<[i64]>>,
    /// The tile of each present block, in the order of `blocks`.
    tiles: Vec<Box<[f64]>>,
    /// Whether every stored value is finite.
    finite: bool,
}

impl TiledIndex {
    /// Builds the tiled index `spec` over `tensor`.
    ///
    /// Errors: an invalid spec (see [`TileSpec::validate`]), and a tensor
    /// that is not one `DOUBLE` value column over its dimensions.
    pub fn build(tensor: &Tensor, spec: &TileSpec) -> Result<TiledIndex> {
        spec.validate(tensor.dims())?;
        let values = match tensor.values() {
            [value] if !tensor.is_bag() && value.ty == ValueType::Float64 => tensor
                .annotation_columns()
                .first()
                .and_then(|array| array.as_primitive_opt::<Float64Type>()),
            _ => None,
        }
        .ok_or_else(|| {
            Error::Invalid(format!(
                "a tiled index needs a table with one DOUBLE value column; this one has {}",
                value_list(tensor)
            ))
        })?;
        let values = values.values();
        let cells = usize::try_from(spec.cells().unwrap_or(u64::MAX))
            .map_err(|_| Error::Invalid(format!("{} makes tiles too large", spec.format())))?;
        let sizes: Vec<i64> = spec
            .sizes
            .iter()
            .map(|&s| i64::try_from(s).unwrap_or(i64::MAX))
            .collect();
        // The offset of a cell in its tile: coordinate within the block
        // times the stride of its level, row-major.
        let mut strides = vec![1usize; sizes.len()];
        for level in (0..sizes.len().saturating_sub(1)).rev() {
            strides[level] = strides[level + 1] * spec.sizes[level + 1] as usize;
        }
        let coords: Vec<&[i64]> = spec.order.iter().map(|&d| tensor.coords(d)).collect();
        let mut slots: HashMap<Box<[i64]>, usize> = HashMap::new();
        let mut blocks: Vec<Box<[i64]>> = Vec::new();
        let mut tiles: Vec<Box<[f64]>> = Vec::new();
        let mut key = vec![0i64; sizes.len()];
        for (e, &value) in values.iter().enumerate() {
            let mut offset = 0usize;
            for (level, column) in coords.iter().enumerate() {
                let c = column[e];
                key[level] = c.div_euclid(sizes[level]);
                offset += c.rem_euclid(sizes[level]) as usize * strides[level];
            }
            let slot = match slots.get(key.as_slice()) {
                Some(&slot) => slot,
                None => {
                    let block: Box<[i64]> = key.clone().into_boxed_slice();
                    slots.insert(block.clone(), blocks.len());
                    blocks.push(block);
                    tiles.push(vec![0.0; cells].into_boxed_slice());
                    blocks.len() - 1
                }
            };
            tiles[slot][offset] = value;
        }
        let mut present: Vec<_> = blocks.into_iter().zip(tiles).collect();
        present.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let (blocks, tiles) = present.into_iter().unzip();
        Ok(TiledIndex {
            spec: spec.clone(),
            blocks,
            tiles,
            finite: values.iter().all(|v| v.is_finite()),
        })
    }

    /// The spec the index was built for.
    pub fn spec(&self) -> &TileSpec {
        &self.spec
    }

    /// The number of present blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether no block is present (the tensor is empty).
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The block coordinates of present block `b` (in level order).
    pub fn block(&self, b: usize) -> &[i64] {
        &self.blocks[b]
    }

    /// The tile of present block `b`, row-major in level order.
    pub fn tile(&self, b: usize) -> &[f64] {
        &self.tiles[b]
    }

    /// Whether every stored value is finite.
    pub fn is_finite(&self) -> bool {
        self.finite
    }

    /// The bytes the tiles and block coordinates take.
    pub fn bytes(&self) -> u64 {
        let per_block = self.spec.cells().unwrap_or(0) + self.spec.order.len() as u64;
        (self.blocks.len() as u64).saturating_mul(per_block * 8)
    }
}

/// `v DOUBLE, w BIGINT`: the value columns of a tensor, for errors.
fn value_list(tensor: &Tensor) -> String {
    if tensor.is_bag() {
        return "no value column (it is a bag)".to_string();
    }
    if tensor.values().is_empty() {
        return "no value column".to_string();
    }
    let columns: Vec<String> = tensor
        .values()
        .iter()
        .map(|v| format!("{} {}", v.name, v.ty.sql_name()))
        .collect();
    columns.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Coo, DimensionSpec, ValueData};

    fn matrix(rows: u64, cols: u64, entries: &[(i64, i64, f64)]) -> Tensor {
        Tensor::from_coo(Coo {
            dims: vec![
                DimensionSpec::new("i", Some(rows)),
                DimensionSpec::new("j", Some(cols)),
            ],
            coords: vec![
                entries.iter().map(|e| e.0).collect(),
                entries.iter().map(|e| e.1).collect(),
            ],
            values: vec![(
                "v".to_string(),
                ValueData::Float64(entries.iter().map(|e| e.2).collect()),
            )],
            column_order: None,
        })
        .unwrap()
    }

    /// Every stored entry read back from the tiles, and every other cell
    /// of every tile 0.
    fn check_round_trip(tensor: &Tensor, index: &TiledIndex) {
        let spec = index.spec();
        let (s0, s1) = (spec.sizes[0] as i64, spec.sizes[1] as i64);
        let mut seen = 0;
        for b in 0..index.len() {
            let block = index.block(b);
            for (offset, &value) in index.tile(b).iter().enumerate() {
                let (r, c) = (offset as i64 / s1, offset as i64 % s1);
                let cell = [block[0] * s0 + r, block[1] * s1 + c];
                let (i, j) = if spec.order == [0, 1] {
                    (cell[0], cell[1])
                } else {
                    (cell[1], cell[0])
                };
                let stored = (0..tensor.nnz())
                    .find(|&e| tensor.coords(0)[e] == i && tensor.coords(1)[e] == j);
                let expected = stored.map_or(0.0, |e| {
                    tensor.annotation_columns()[0]
                        .as_primitive::<Float64Type>()
                        .value(e)
                });
                assert_eq!(value, expected, "cell ({i}, {j}) of block {block:?}");
                seen += usize::from(stored.is_some());
            }
        }
        assert_eq!(seen, tensor.nnz());
    }

    #[test]
    fn blocks_are_sorted_and_edge_tiles_are_padded() {
        // 5 × 7 in 2 × 3 tiles: 3 × 3 blocks, the last row and column of
        // blocks cut short by the dimensions.
        let tensor = matrix(
            5,
            7,
            &[
                (4, 6, -1.5),
                (0, 0, 1.0),
                (1, 2, 2.0),
                (0, 3, 3.0),
                (3, 1, 0.0),
                (2, 5, -4.0),
            ],
        );
        let index = TiledIndex::build(&tensor, &TileSpec::new(vec![0, 1], vec![2, 3])).unwrap();
        let blocks: Vec<&[i64]> = (0..index.len()).map(|b| index.block(b)).collect();
        assert_eq!(
            blocks,
            [&[0, 0][..], &[0, 1], &[1, 0], &[1, 1], &[2, 2]],
            "present blocks, block-row-major"
        );
        assert!(index.tile(0).len() == 6 && index.is_finite());
        assert_eq!(index.bytes(), 5 * 8 * 8);
        check_round_trip(&tensor, &index);
        let transposed =
            TiledIndex::build(&tensor, &TileSpec::new(vec![1, 0], vec![3, 2])).unwrap();
        let blocks: Vec<&[i64]> = (0..transposed.len()).map(|b| transposed.block(b)).collect();
        assert_eq!(blocks, [&[0, 0][..], &[0, 1], &[1, 0], &[1, 1], &[2, 2]]);
        check_round_trip(&tensor, &transposed);
    }

    #[test]
    fn empty_and_single_entry_tensors() {
        let empty = matrix(0, 0, &[]);
        let index = TiledIndex::build(&empty, &TileSpec::new(vec![0, 1], vec![4, 4])).unwrap();
        assert!(index.is_empty() && index.bytes() == 0);
        let one = matrix(1000, 1000, &[(999, 3, 7.0)]);
        let index = TiledIndex::build(&one, &TileSpec::new(vec![0, 1], vec![256, 256])).unwrap();
        assert_eq!(index.len(), 1);
        assert_eq!(index.block(0), [3, 0]);
        assert_eq!(index.tile(0)[(999 - 768) * 256 + 3], 7.0);
        assert_eq!(index.tile(0).iter().filter(|&&v| v != 0.0).count(), 1);
    }

    #[test]
    fn non_finite_values_are_noted() {
        let tensor = matrix(2, 2, &[(0, 0, f64::INFINITY), (1, 1, 1.0)]);
        let index = TiledIndex::build(&tensor, &TileSpec::new(vec![0, 1], vec![2, 2])).unwrap();
        assert!(!index.is_finite());
    }

    #[test]
    fn invalid_specs_and_tensors_are_errors() {
        let tensor = matrix(4, 4, &[(0, 0, 1.0)]);
        let error = |spec: TileSpec| TiledIndex::build(&tensor, &spec).unwrap_err().to_string();
        assert!(error(TileSpec::new(vec![0, 1], vec![0, 2])).contains("tile size 0"));
        assert!(error(TileSpec::new(vec![0, 1], vec![2])).contains("1 tile sizes for 2"));
        assert!(error(TileSpec::new(vec![0, 1], vec![1 << 17, 1])).contains("from 1 to 65536"));
        assert!(error(TileSpec::new(vec![0, 1], vec![1 << 16, 1 << 16])).contains("more than"));
        assert!(error(TileSpec::new(vec![0, 0], vec![2, 2])).contains("twice"));
        let ints = Tensor::from_coo(Coo {
            dims: vec![DimensionSpec::new("i", None)],
            coords: vec![vec![0, 1]],
            values: vec![("n".to_string(), ValueData::Int64(vec![1, 2]))],
            column_order: None,
        })
        .unwrap();
        let message = TiledIndex::build(&ints, &TileSpec::new(vec![0], vec![2]))
            .unwrap_err()
            .to_string();
        assert!(message.contains("one DOUBLE value column; this one has n BIGINT"));
    }

    #[test]
    fn estimated_bytes_bound_the_built_ones() {
        let tensor = matrix(600, 300, &[(0, 0, 1.0), (599, 299, 2.0), (300, 0, 3.0)]);
        let spec = TileSpec::new(vec![0, 1], vec![256, 128]);
        let index = TiledIndex::build(&tensor, &spec).unwrap();
        assert_eq!(index.len(), 3);
        assert!(spec.estimated_bytes(&tensor) >= index.bytes());
        assert_eq!(spec.named(tensor.dims()), "(i,j) tiles(256,128)");
    }
}
