//! Integration tests of the Matrix Market and FROSTT `.tns` readers and
//! writers: every dataset file against an independent reading (scipy for
//! `.mtx`, awk for `.tns`), round trips, targeted malformed inputs that must
//! name the file and line, and a fuzz test that feeds thousands of mutated
//! files to both readers and accepts only `Ok` or `Err`, never a panic.

mod common;

use common::Rng;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{Array, BooleanArray, Float64Array, Int64Array};
use einsql::io::{ReadOptions, matrix_market, tns};
use einsql::progress::{NoProgress, ProgressSink};
use einsql::storage::{Coo, Dictionary, DimensionSpec, Tensor, ValueData, ValueType};
use einsql::{Error, Result};
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// Helpers

/// One annotation value, compared exactly (floats bit for bit, all NaNs
/// equal).
#[derive(Clone, Copy, Debug)]
enum Value {
    Int(i128),
    Real(f64),
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (*self, *other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Real(a), Value::Real(b)) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            _ => false,
        }
    }
}

/// The stored entries of a tensor: coordinates and the annotation (value
/// or multiplicity), in stored order.
fn entries(tensor: &Tensor) -> Vec<(Vec<i64>, Value)> {
    let column = &tensor.annotation_columns()[0];
    let value = |k: usize| -> Value {
        if let Some(a) = column.as_any().downcast_ref::<Float64Array>() {
            Value::Real(a.value(k))
        } else if let Some(a) = column.as_any().downcast_ref::<Int64Array>() {
            Value::Int(i128::from(a.value(k)))
        } else if let Some(a) = column.as_any().downcast_ref::<BooleanArray>() {
            Value::Int(i128::from(a.value(k)))
        } else {
            panic!("unexpected annotation type {:?}", column.data_type())
        }
    };
    (0..tensor.nnz())
        .map(|k| {
            let coords = (0..tensor.dims().len())
                .map(|d| tensor.coords(d)[k])
                .collect();
            (coords, value(k))
        })
        .collect()
}

fn sizes(tensor: &Tensor) -> Vec<u64> {
    tensor.dims().iter().map(|d| d.size).collect()
}

fn names(tensor: &Tensor) -> Vec<String> {
    tensor
        .dims()
        .iter()
        .map(|d| d.name.clone())
        .chain(tensor.values().iter().map(|v| v.name.clone()))
        .collect()
}

fn read_mtx(path: &Path) -> Result<Tensor> {
    matrix_market::read(path, &ReadOptions::default(), &NoProgress)
}

fn read_tns(path: &Path) -> Result<Tensor> {
    tns::read(path, &ReadOptions::default(), &NoProgress)
}

/// Writes `text` to a fresh file named `name` in `dir`.
fn file(dir: &tempfile::TempDir, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write test file");
    path
}

/// Asserts that `result` is a file-format error at `line` of `path` whose
/// message contains `contains`, and that the displayed error names the
/// file and line.
#[track_caller]
fn assert_error_at<T: std::fmt::Debug>(result: Result<T>, path: &Path, line: u64, contains: &str) {
    match result {
        Err(error @ Error::FileFormat { .. }) => {
            let shown = error.to_string();
            let Error::FileFormat {
                path: p,
                line: l,
                message,
            } = error
            else {
                unreachable!()
            };
            assert_eq!(p, path, "{shown}");
            assert_eq!(l, line, "wrong line in: {shown}");
            assert!(
                message.contains(contains),
                "'{shown}' does not mention '{contains}'"
            );
            assert!(
                shown.starts_with(&format!("{}:{line}: ", path.display())),
                "{shown}"
            );
        }
        other => panic!("expected a file-format error at line {line} ({contains}), got {other:?}"),
    }
}

fn mtx_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dataset folder") {
            let path = entry.expect("dataset entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "mtx") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

// ---------------------------------------------------------------------------
// Every dataset matrix against scipy

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Real,
    Integer,
    Pattern,
}

/// Σ v, Σ (i+1)·v and Σ (j+1)·v over the expanded entries (a pattern
/// entry counts 1).
#[derive(Clone, Copy, Debug)]
enum Sums {
    Int([i128; 3]),
    Real([f64; 3]),
}

fn int(sum: i128, row_weighted: i128, col_weighted: i128) -> Sums {
    Sums::Int([sum, row_weighted, col_weighted])
}

fn real(sum: f64, row_weighted: f64, col_weighted: f64) -> Sums {
    Sums::Real([sum, row_weighted, col_weighted])
}

/// The first and last entries in (row, column) order, 0-based.
#[derive(Clone, Copy, Debug)]
enum Ends {
    None,
    Int([(i64, i64, i128); 2]),
    Real([(i64, i64, f64); 2]),
}

fn ints(ends: [(i64, i64, i128); 2]) -> Ends {
    Ends::Int(ends)
}

fn reals(ends: [(i64, i64, f64); 2]) -> Ends {
    Ends::Real(ends)
}

#[derive(Clone, Debug)]
enum Expect {
    Matrix {
        kind: Kind,
        shape: [u64; 2],
        nnz: usize,
        sums: Sums,
        ends: Ends,
    },
    /// Loads exactly like another file of the table.
    SameAs(&'static str),
    /// Real values, listed entry by entry (for files whose values include
    /// infinities, which sums cannot check).
    Reals {
        shape: [u64; 2],
        entries: &'static [(i64, i64, f64)],
    },
    /// A malformed file: a file-format error at this line.
    Malformed { line: u64, contains: &'static str },
    /// Well-formed but unsupported.
    Unsupported(&'static str),
}

fn matrix(
    name: &'static str,
    kind: Kind,
    shape: [u64; 2],
    nnz: usize,
    sums: Sums,
    ends: Ends,
) -> (&'static str, Expect) {
    (
        name,
        Expect::Matrix {
            kind,
            shape,
            nnz,
            sums,
            ends,
        },
    )
}

/// What every `.mtx` file of the datasets must give. The `matrix(...)` rows
/// were recorded with scipy 1.17.1 (`scipy.io.mmread`, which expands
/// symmetric files and keeps explicit zeros, as we do): shape, nnz after
/// expansion, the three sums, and the first and last entries. Files scipy
/// rejects but that are valid here (no header, blank lines in the body) are
/// compared with their clean twin; files that are genuinely malformed were
/// checked by reading them.
fn expected() -> Vec<(&'static str, Expect)> {
    vec![
        matrix(
            "lagraph/A.mtx",
            Kind::Pattern,
            [7, 7],
            30,
            int(30, 122, 122),
            ints([(0, 1, 1), (6, 5, 1)]),
        ),
        matrix(
            "lagraph/A2.mtx",
            Kind::Pattern,
            [7, 7],
            30,
            int(30, 121, 121),
            ints([(0, 1, 1), (6, 5, 1)]),
        ),
        matrix(
            "lagraph/LFAT5.mtx",
            Kind::Real,
            [14, 14],
            46,
            real(12581499.907366203, 75521189.74052344, 75521189.74052343),
            reals([(0, 0, 1.57088), (13, 13, 1.57088)]),
        ),
        matrix(
            "lagraph/LFAT5_hypersparse.mtx",
            Kind::Real,
            [2000, 2000],
            46,
            real(12581499.907366203, 75521189.74052344, 75521189.74052343),
            reals([(0, 0, 1.57088), (13, 13, 1.57088)]),
        ),
        matrix(
            "lagraph/LFAT5_two.mtx",
            Kind::Real,
            [28, 28],
            92,
            real(25162999.814732417, 327183378.18417364, 327183378.1841737),
            reals([(0, 0, 1.57088), (27, 27, 1.57088)]),
        ),
        matrix(
            "lagraph/bcsstk13.mtx",
            Kind::Real,
            [2003, 2003],
            83883,
            real(
                30220739908119.46,
                2.9962305285615016e+16,
                2.996230528561501e+16,
            ),
            reals([(0, 0, 277281165.183), (2002, 2002, 5552681.3139)]),
        ),
        matrix(
            "lagraph/comments_cover.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(51, 200, 219),
            ints([(0, 1, 2), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/comments_full.mtx",
            Kind::Real,
            [3, 3],
            9,
            real(4.497, 9.817, 7.663),
            reals([(0, 0, 0.646), (2, 2, 0.498)]),
        ),
        matrix(
            "lagraph/comments_west0067.mtx",
            Kind::Real,
            [67, 67],
            295,
            real(f64::NAN, f64::NAN, f64::NAN),
            reals([(0, 0, f64::NAN), (66, 65, 1.0)]),
        ),
        matrix(
            "lagraph/cover.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(51, 200, 219),
            ints([(0, 1, 2), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/cover_structure.mtx",
            Kind::Pattern,
            [7, 7],
            12,
            int(12, 49, 49),
            ints([(0, 1, 1), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/cryg2500.mtx",
            Kind::Real,
            [2500, 2500],
            12349,
            real(-13508.421748371342, -2320192.345749356, 4047283.616945477),
            reals([
                (0, 0, -5679.837539484813),
                (2499, 2499, 0.001515403830141552),
            ]),
        ),
        matrix(
            "lagraph/empty.mtx",
            Kind::Real,
            [3, 4],
            0,
            real(0.0, 0.0, 0.0),
            Ends::None,
        ),
        matrix(
            "lagraph/full.mtx",
            Kind::Real,
            [3, 3],
            9,
            real(4.497, 9.817, 7.663),
            reals([(0, 0, 0.646), (2, 2, 0.498)]),
        ),
        matrix(
            "lagraph/full_symmetric.mtx",
            Kind::Real,
            [4, 4],
            16,
            real(282.2043402194977, 689.7993807792664, 689.7993807792664),
            reals([(0, 0, 10.762188911437988), (3, 3, 3.9635860919952393)]),
        ),
        matrix(
            "lagraph/jagmesh7.mtx",
            Kind::Pattern,
            [1138, 1138],
            7450,
            int(7450, 4237233, 4237233),
            ints([(0, 0, 1), (1137, 1137, 1)]),
        ),
        matrix(
            "lagraph/karate.mtx",
            Kind::Pattern,
            [34, 34],
            156,
            int(156, 2691, 2691),
            ints([(0, 1, 1), (33, 32, 1)]),
        ),
        matrix(
            "lagraph/ldbc-cdlp-directed-example.mtx",
            Kind::Integer,
            [8, 8],
            18,
            int(18, 77, 84),
            ints([(0, 1, 1), (7, 5, 1)]),
        ),
        matrix(
            "lagraph/ldbc-cdlp-undirected-example.mtx",
            Kind::Integer,
            [8, 8],
            24,
            int(24, 116, 116),
            ints([(0, 1, 1), (7, 6, 1)]),
        ),
        matrix(
            "lagraph/ldbc-directed-example-bool.mtx",
            Kind::Integer,
            [10, 10],
            17,
            int(17, 71, 82),
            ints([(0, 2, 1), (8, 3, 1)]),
        ),
        matrix(
            "lagraph/ldbc-directed-example-unweighted.mtx",
            Kind::Integer,
            [10, 10],
            17,
            int(17, 71, 82),
            ints([(0, 2, 1), (8, 3, 1)]),
        ),
        matrix(
            "lagraph/ldbc-directed-example.mtx",
            Kind::Real,
            [10, 10],
            17,
            real(7.049999999999999, 32.94, 30.32),
            reals([(0, 2, 0.5), (8, 3, 0.69)]),
        ),
        matrix(
            "lagraph/ldbc-undirected-example-unweighted.mtx",
            Kind::Integer,
            [9, 9],
            24,
            int(24, 111, 111),
            ints([(0, 1, 1), (8, 4, 1)]),
        ),
        matrix(
            "lagraph/ldbc-undirected-example.mtx",
            Kind::Real,
            [9, 9],
            24,
            real(11.36, 49.34, 49.34),
            reals([(0, 1, 0.9), (8, 4, 0.63)]),
        ),
        matrix(
            "lagraph/ldbc-wcc-example.mtx",
            Kind::Integer,
            [10, 10],
            30,
            int(30, 141, 141),
            ints([(0, 2, 1), (9, 2, 1)]),
        ),
        matrix(
            "lagraph/lp_afiro.mtx",
            Kind::Real,
            [27, 51],
            102,
            real(44.37, 836.888, 1207.01),
            reals([(0, 19, -1.0), (26, 49, 1.0)]),
        ),
        matrix(
            "lagraph/lp_afiro_structure.mtx",
            Kind::Pattern,
            [27, 51],
            102,
            int(102, 1527, 3057),
            ints([(0, 19, 1), (26, 49, 1)]),
        ),
        matrix(
            "lagraph/matrix_bool.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(7, 28, 30),
            ints([(0, 1, 1), (6, 4, 0)]),
        ),
        matrix(
            "lagraph/matrix_fp32_structure.mtx",
            Kind::Pattern,
            [7, 7],
            12,
            int(12, 49, 49),
            ints([(0, 1, 1), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/matrix_int16.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(43, -98127, 32974),
            ints([(0, 1, 32767), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/matrix_int32.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(43, -6442450767, 2147483854),
            ints([(0, 1, 2147483647), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/matrix_int64.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(51, -27670116110564327215, 9223372036854776022),
            ints([(0, 1, 9223372036854775807), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/matrix_int8.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(43, -207, 334),
            ints([(0, 1, 127), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/matrix_uint16.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(65579, 65713, 131278),
            ints([(0, 1, 65535), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/matrix_uint32.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(4294967339, 4294967473, 8589934798),
            ints([(0, 1, 4294967295), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/matrix_uint8.mtx",
            Kind::Integer,
            [7, 7],
            12,
            int(299, 433, 718),
            ints([(0, 1, 255), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/msf1.mtx",
            Kind::Integer,
            [6, 6],
            8,
            int(8, 24, 29),
            ints([(0, 1, 1), (5, 3, 1)]),
        ),
        matrix(
            "lagraph/msf2.mtx",
            Kind::Integer,
            [8, 8],
            12,
            int(35, 109, 198),
            ints([(0, 1, 2), (5, 7, 6)]),
        ),
        matrix(
            "lagraph/msf3.mtx",
            Kind::Integer,
            [5, 5],
            7,
            int(11, 26, 46),
            ints([(0, 1, 1), (3, 4, 1)]),
        ),
        matrix(
            "lagraph/olm1000.mtx",
            Kind::Real,
            [1000, 1000],
            3996,
            real(-48513.38687999104, -24256693.43999877, -24302720.483198456),
            reals([(0, 0, -5081.64368), (999, 999, -0.5)]),
        ),
        matrix(
            "lagraph/pushpull.mtx",
            Kind::Pattern,
            [4000, 4000],
            196305,
            int(196305, 300343373, 300343373),
            ints([(0, 7, 1), (3999, 3999, 1)]),
        ),
        matrix(
            "lagraph/sample.mtx",
            Kind::Pattern,
            [8, 8],
            12,
            int(12, 41, 59),
            ints([(0, 1, 1), (6, 7, 1)]),
        ),
        matrix(
            "lagraph/sample2.mtx",
            Kind::Pattern,
            [8, 8],
            28,
            int(28, 132, 132),
            ints([(0, 1, 1), (7, 6, 1)]),
        ),
        matrix(
            "lagraph/skew_fp32.mtx",
            Kind::Real,
            [6, 6],
            20,
            real(f64::NAN, f64::NAN, f64::NAN),
            reals([(0, 3, 0.12565), (5, 4, -0.1816)]),
        ),
        matrix(
            "lagraph/skew_fp64.mtx",
            Kind::Real,
            [6, 6],
            20,
            real(f64::NAN, f64::NAN, f64::NAN),
            reals([(0, 3, 0.12565458736262625), (5, 4, -0.18161721472946568)]),
        ),
        matrix(
            "lagraph/skew_int16.mtx",
            Kind::Integer,
            [6, 6],
            20,
            int(0, 120218, -120218),
            ints([(0, 3, 12), (5, 4, -18)]),
        ),
        matrix(
            "lagraph/skew_int32.mtx",
            Kind::Integer,
            [6, 6],
            20,
            int(0, 120000218, -120000218),
            ints([(0, 3, 12), (5, 4, -18)]),
        ),
        matrix(
            "lagraph/skew_int64.mtx",
            Kind::Integer,
            [6, 6],
            20,
            int(0, 36893488147419103446, -36893488147419103446),
            ints([(0, 3, 12), (5, 4, -18)]),
        ),
        matrix(
            "lagraph/skew_int8.mtx",
            Kind::Integer,
            [6, 6],
            20,
            int(0, 338, -338),
            ints([(0, 3, 12), (5, 4, -18)]),
        ),
        matrix(
            "lagraph/sources_7.mtx",
            Kind::Integer,
            [64, 1],
            64,
            int(248, 8108, 248),
            ints([(0, 0, 2), (63, 0, 6)]),
        ),
        matrix(
            "lagraph/structure.mtx",
            Kind::Pattern,
            [7, 7],
            12,
            int(12, 49, 49),
            ints([(0, 1, 1), (6, 4, 1)]),
        ),
        matrix(
            "lagraph/test_BF.mtx",
            Kind::Real,
            [7, 7],
            12,
            real(51.0, 200.0, 219.0),
            reals([(0, 1, 2.0), (6, 4, 1.0)]),
        ),
        matrix(
            "lagraph/test_FW_1000.mtx",
            Kind::Real,
            [1000, 1000],
            3996,
            real(505994.0, 252997000.0, 253453044.0),
            reals([(0, 0, 50.0), (999, 999, 0.0)]),
        ),
        matrix(
            "lagraph/test_FW_2003.mtx",
            Kind::Real,
            [2003, 2003],
            23973,
            real(1863353.0, 1804527649.0, 1804527649.0),
            reals([(0, 0, 27.0), (2001, 2001, 149.0)]),
        ),
        matrix(
            "lagraph/test_FW_2500.mtx",
            Kind::Real,
            [2500, 2500],
            7852,
            real(1444238.0, 629909260.0, 630080504.0),
            reals([(0, 0, 5679.0), (2493, 43, 1.0)]),
        ),
        matrix(
            "lagraph/tree-example.mtx",
            Kind::Integer,
            [6, 6],
            10,
            int(10, 37, 37),
            ints([(0, 2, 1), (5, 3, 1)]),
        ),
        matrix(
            "lagraph/west0067.mtx",
            Kind::Real,
            [67, 67],
            294,
            real(34.3087486, 2779.6141935100004, 1147.53225184),
            reals([(0, 7, -0.8341818), (66, 65, 1.0)]),
        ),
        matrix(
            "lagraph/zenios.mtx",
            Kind::Real,
            [2873, 2873],
            27191,
            real(250.7451176368464, 84670.75704305789, 84670.75704305789),
            reals([(0, 0, 0.0), (2872, 2872, 0.0)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l1.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 0, 0.0625), (1023, 1023, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l10.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 21, 0.0625), (1023, 982, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l11.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 13, 0.0625), (1023, 982, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l12.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 29, 0.0625), (1023, 1014, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l13.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 37, 0.0625), (1023, 1001, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l14.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 36, 0.0625), (1023, 1001, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l15.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 34, 0.0625), (1023, 1001, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l16.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 30, 0.0625), (1023, 1001, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l17.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 22, 0.0625), (1023, 1001, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l18.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 6, 0.0625), (1023, 1001, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l19.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 48, 0.0625), (1023, 1004, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l2.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 0, 0.0625), (1023, 1023, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l20.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 47, 0.0625), (1023, 1004, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l21.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 45, 0.0625), (1023, 1004, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l22.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 41, 0.0625), (1023, 1004, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l23.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 33, 0.0625), (1023, 1004, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l24.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 17, 0.0625), (1023, 1004, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l25.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 17, 0.0625), (1023, 1009, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l26.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 16, 0.0625), (1023, 1009, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l27.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 14, 0.0625), (1023, 1009, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l28.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 10, 0.0625), (1023, 1009, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l29.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 2, 0.0625), (1023, 1009, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l3.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 0, 0.0625), (1023, 1023, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l30.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 18, 0.0625), (1023, 1009, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l4.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 0, 0.0625), (1023, 1023, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l5.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 0, 0.0625), (1023, 1023, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l6.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 0, 0.0625), (1023, 1023, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l7.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 28, 0.0625), (1023, 982, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l8.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 27, 0.0625), (1023, 982, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/n1024-l9.mtx",
            Kind::Real,
            [1024, 1024],
            32768,
            real(2048.0, 1049600.0, 1049600.0),
            reals([(0, 25, 0.0625), (1023, 982, 0.0625)]),
        ),
        matrix(
            "lagraph_dnn/neuron1024-l120-categories_subset.mtx",
            Kind::Pattern,
            [1200, 1],
            19,
            int(19, 15405, 19),
            ints([(286, 0, 1), (1199, 0, 1)]),
        ),
        matrix(
            "lagraph_dnn/sparse-images-1024_subset.mtx",
            Kind::Pattern,
            [1200, 1024],
            122713,
            int(122713, 73390724, 64972332),
            ints([(0, 187, 1), (1199, 856, 1)]),
        ),
        matrix(
            "scipy_hb/abb313.mtx",
            Kind::Pattern,
            [313, 176],
            1557,
            int(1557, 249793, 114727),
            ints([(0, 113, 1), (312, 175, 1)]),
        ),
        matrix(
            "scipy_hb/illc1033.mtx",
            Kind::Real,
            [1033, 320],
            4732,
            real(932.8629726160801, 479914.460082596, 168409.43809886486),
            reals([(0, 0, 0.1889822365), (1032, 319, 0.06163941529)]),
        ),
        matrix(
            "scipy_hb/illc1850.mtx",
            Kind::Real,
            [1850, 712],
            8758,
            real(1891.0436206404238, 1663819.8247271325, 701836.3751787706),
            reals([(0, 0, 0.2773500981), (1849, 711, 0.06163941529)]),
        ),
        matrix(
            "scipy_hb/qh1484.mtx",
            Kind::Real,
            [1484, 1484],
            6110,
            real(
                1.777390603013536e+17,
                6.836116962282303e+19,
                2.204602002347799e+20,
            ),
            reals([(0, 0, -13.489), (1483, 1482, 376.99)]),
        ),
        matrix(
            "scipy_hb/rbs480a.mtx",
            Kind::Real,
            [480, 480],
            17088,
            real(-16608.0, -1096696.0, -4685652.0),
            reals([(0, 0, -22.0), (479, 80, -40.0)]),
        ),
        matrix(
            "scipy_hb/tols4000.mtx",
            Kind::Real,
            [4000, 4000],
            8784,
            real(-6319187710.488907, -8838304564865.312, -3783630458266.0254),
            reals([(0, 800, 1.0), (3999, 3999, -36.294)]),
        ),
        matrix(
            "scipy_hb/well1033.mtx",
            Kind::Real,
            [1033, 320],
            4732,
            real(537.0853381819485, 328616.8450459333, 61648.71190346708),
            reals([(0, 0, 0.1889822365), (1032, 319, -0.07482422514)]),
        ),
        matrix(
            "scipy_hb/well1850.mtx",
            Kind::Real,
            [1850, 712],
            8758,
            real(1119.2882276638657, 1080116.2977921288, 248493.30124755154),
            reals([(0, 0, 0.2773500981), (1849, 711, -0.07482422514)]),
        ),
        matrix(
            "scipy_hb/west0479.mtx",
            Kind::Real,
            [479, 479],
            1910,
            real(-1750540.0748997678, -409946830.43674076, -325117300.6375177),
            reals([(0, 82, 1.0), (478, 437, -0.1747406)]),
        ),
        matrix(
            "scipy_hb/west2021.mtx",
            Kind::Real,
            [2021, 2021],
            7353,
            real(
                -11635283.092682214,
                -15010485152.848038,
                -12154497961.075035,
            ),
            reals([(0, 82, 1.0), (2020, 1974, -0.06424497)]),
        ),
        matrix(
            "taco/2tensor.mtx",
            Kind::Real,
            [32, 32],
            3,
            real(510.1, 2147.6000000000004, 1124.3000000000002),
            reals([(0, 0, 101.0), (5, 2, 307.1)]),
        ),
        matrix(
            "taco/d33.mtx",
            Kind::Real,
            [3, 3],
            3,
            real(9.0, 23.0, 19.0),
            reals([(0, 1, 2.0), (2, 2, 4.0)]),
        ),
        matrix(
            "taco/ds33.mtx",
            Kind::Real,
            [3, 3],
            5,
            real(10.0, 19.0, 19.0),
            reals([(0, 1, 1.0), (2, 0, 3.0)]),
        ),
        matrix(
            "taco/rua_32.mtx",
            Kind::Real,
            [32, 32],
            126,
            real(192901.0, 3353605.0, 4070338.0),
            reals([(0, 0, 101.0), (31, 31, 3232.0)]),
        ),
        // scipy rejects these; they are valid (no header: real general; blank
        // lines and comments in the body are tolerated).
        (
            "lagraph/full_noheader.mtx",
            Expect::SameAs("lagraph/full.mtx"),
        ),
        (
            "lagraph/west0067_noheader.mtx",
            Expect::SameAs("lagraph/west0067.mtx"),
        ),
        (
            "lagraph/west0067_jumbled.mtx",
            Expect::SameAs("lagraph/west0067.mtx"),
        ),
        // Genuinely malformed or unsupported.
        (
            "lagraph/complex.mtx",
            Expect::Unsupported("complex values are not supported"),
        ),
        // LAGraph's `%%GraphBLAS type float|double` line: the `integer`
        // header holds floats (with infinities). Entries read off the file
        // by hand, 0-based, in (row, column) order.
        (
            "lagraph/matrix_fp32.mtx",
            Expect::Reals {
                shape: [7, 7],
                entries: LAGRAPH_FLOATS,
            },
        ),
        (
            "lagraph/matrix_fp64.mtx",
            Expect::Reals {
                shape: [7, 7],
                entries: LAGRAPH_FLOATS,
            },
        ),
        // 18446744073709551615 (a uint64) does not fit einsql's signed
        // 64-bit integers.
        (
            "lagraph/matrix_uint64.mtx",
            Expect::Malformed {
                line: 8,
                contains: "does not fit in 64 bits",
            },
        ),
        // A symmetric file that stores the upper triangle, mirrored as scipy
        // mirrors it (scipy: shape (9, 9), nnz 24, sums 24, 111, 111).
        matrix(
            "lagraph/ldbc-undirected-example-bool.mtx",
            Kind::Integer,
            [9, 9],
            24,
            int(24, 111, 111),
            ints([(0, 1, 1), (8, 4, 1)]),
        ),
    ]
}

/// The entries of `lagraph/matrix_fp32.mtx` and `matrix_fp64.mtx`.
const LAGRAPH_FLOATS: &[(i64, i64, f64)] = &[
    (0, 1, f64::INFINITY),
    (0, 3, 7.0),
    (1, 4, 5.0),
    (1, 6, 8.0),
    (2, 5, 1.0),
    (3, 0, f64::NEG_INFINITY),
    (3, 2, 0.0),
    (4, 5, 7.0),
    (5, 2, 5.0),
    (6, 2, 9.0),
    (6, 3, 1.0),
    (6, 4, 1.0),
];

fn annotation_type(tensor: &Tensor) -> Kind {
    match tensor.values() {
        [] => Kind::Pattern,
        [v] if v.ty == ValueType::Float64 => Kind::Real,
        [v] if v.ty == ValueType::Int64 => Kind::Integer,
        other => panic!("unexpected value columns {other:?}"),
    }
}

fn check_sums(name: &str, tensor: &Tensor, sums: Sums) {
    let entries = entries(tensor);
    match sums {
        Sums::Int(expected) => {
            let mut got = [0i128; 3];
            for (c, v) in &entries {
                let Value::Int(v) = *v else {
                    panic!("{name}: not an integer value")
                };
                got[0] += v;
                got[1] += (i128::from(c[0]) + 1) * v;
                got[2] += (i128::from(c[1]) + 1) * v;
            }
            assert_eq!(got, expected, "{name}: sums");
        }
        Sums::Real(expected) => {
            let mut got = [0f64; 3];
            let mut scale = [0f64; 3];
            for (c, v) in &entries {
                let Value::Real(v) = *v else {
                    panic!("{name}: not a real value")
                };
                let terms = [v, (c[0] + 1) as f64 * v, (c[1] + 1) as f64 * v];
                for k in 0..3 {
                    got[k] += terms[k];
                    scale[k] += terms[k].abs();
                }
            }
            for k in 0..3 {
                let close = (got[k] - expected[k]).abs() <= 1e-9 * scale[k].max(1.0)
                    || (got[k].is_nan() && expected[k].is_nan());
                assert!(
                    close,
                    "{name}: sum {k} is {} but scipy says {}",
                    got[k], expected[k]
                );
            }
        }
    }
}

fn check_ends(name: &str, tensor: &Tensor, ends: Ends) {
    let entries = entries(tensor);
    let (first, last) = match (entries.first(), entries.last()) {
        (Some(f), Some(l)) => (f.clone(), l.clone()),
        _ => {
            assert!(matches!(ends, Ends::None), "{name}: no entries");
            return;
        }
    };
    let expected: [(Vec<i64>, Value); 2] = match ends {
        Ends::None => panic!("{name}: scipy found no entries"),
        Ends::Int(e) => e.map(|(i, j, v)| (vec![i, j], Value::Int(v))),
        Ends::Real(e) => e.map(|(i, j, v)| (vec![i, j], Value::Real(v))),
    };
    assert_eq!([first, last], expected, "{name}: first and last entries");
}

#[test]
fn every_dataset_matrix_loads_as_scipy_reads_it() {
    let Some(data) = common::datasets() else {
        return;
    };
    let root = data.join("matrices");
    let table = expected();
    let files = mtx_files(&root);
    assert!(files.len() >= 100, "only {} .mtx files found", files.len());
    let mut checked = 0;
    for path in &files {
        let name = path
            .strip_prefix(&root)
            .expect("under root")
            .to_string_lossy()
            .into_owned();
        let Some((_, expect)) = table.iter().find(|(n, _)| *n == name) else {
            panic!("{name} is not in the table of expected results; add it");
        };
        let result = read_mtx(path);
        match expect {
            Expect::Matrix {
                kind,
                shape,
                nnz,
                sums,
                ends,
            } => {
                let tensor = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(sizes(&tensor), shape.to_vec(), "{name}: shape");
                assert_eq!(tensor.nnz(), *nnz, "{name}: nnz");
                assert_eq!(annotation_type(&tensor), *kind, "{name}: value type");
                let expected_names: &[&str] = if *kind == Kind::Pattern {
                    &["i", "j"]
                } else {
                    &["i", "j", "v"]
                };
                assert_eq!(names(&tensor), expected_names, "{name}: names");
                check_sums(&name, &tensor, *sums);
                check_ends(&name, &tensor, *ends);
            }
            Expect::SameAs(twin) => {
                let tensor = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                let twin = read_mtx(&root.join(twin)).unwrap_or_else(|e| panic!("{twin}: {e}"));
                assert_eq!(sizes(&tensor), sizes(&twin), "{name}: shape");
                assert_eq!(entries(&tensor), entries(&twin), "{name}: entries");
            }
            Expect::Reals {
                shape,
                entries: expected,
            } => {
                let tensor = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(sizes(&tensor), shape.to_vec(), "{name}: shape");
                assert_eq!(annotation_type(&tensor), Kind::Real, "{name}: value type");
                let expected: Vec<(Vec<i64>, Value)> = expected
                    .iter()
                    .map(|&(i, j, v)| (vec![i, j], Value::Real(v)))
                    .collect();
                assert_eq!(entries(&tensor), expected, "{name}: entries");
            }
            Expect::Malformed { line, contains } => assert_error_at(result, path, *line, contains),
            Expect::Unsupported(contains) => match result {
                Err(Error::Unsupported { path: p, message }) => {
                    assert_eq!(&p, path);
                    assert!(message.contains(contains), "{message}");
                }
                other => panic!("{name}: expected Unsupported, got {other:?}"),
            },
        }
        checked += 1;
    }
    assert_eq!(checked, table.len(), "every table row has a file");
    eprintln!("checked {checked} Matrix Market files");
}

#[test]
fn read_options_rename_and_are_validated() {
    let Some(data) = common::datasets() else {
        return;
    };
    let path = data.join("matrices/lagraph/west0067.mtx");
    let options = ReadOptions {
        keys: Some(vec!["row".into(), "col".into()]),
        values: Some(vec!["weight".into()]),
        ..ReadOptions::default()
    };
    let tensor = matrix_market::read(&path, &options, &NoProgress).expect("renamed");
    assert_eq!(names(&tensor), ["row", "col", "weight"]);

    let bad = [
        ReadOptions {
            keys: Some(vec!["a".into()]),
            ..ReadOptions::default()
        },
        ReadOptions {
            values: Some(vec!["a".into(), "b".into()]),
            ..ReadOptions::default()
        },
        ReadOptions {
            zero_based: true,
            ..ReadOptions::default()
        },
        ReadOptions {
            header: Some(true),
            ..ReadOptions::default()
        },
        ReadOptions {
            delimiter: Some(b';'),
            ..ReadOptions::default()
        },
        ReadOptions {
            keys: Some(vec!["x".into(), "x".into()]),
            ..ReadOptions::default()
        },
    ];
    for options in bad {
        let error = matrix_market::read(&path, &options, &NoProgress).expect_err("rejected");
        assert!(matches!(error, Error::Invalid(_)), "{options:?}: {error}");
        if options.zero_based || options.header.is_some() || options.delimiter.is_some() {
            assert!(
                error.to_string().contains(
                    "does not apply to Matrix Market files (it applies to: keys, values)"
                ),
                "{error}"
            );
        }
    }
    let pattern = data.join("matrices/lagraph/karate.mtx");
    let options = ReadOptions {
        values: Some(vec!["w".into()]),
        ..ReadOptions::default()
    };
    let error = matrix_market::read(&pattern, &options, &NoProgress).expect_err("no values");
    assert!(error.to_string().contains("pattern"), "{error}");
}

// ---------------------------------------------------------------------------
// Every dataset .tns against awk

#[test]
fn every_dataset_tns_loads_with_the_right_shape() {
    let Some(data) = common::datasets() else {
        return;
    };
    // (file, sizes, nnz, value type, sum of values), counted with awk:
    // sizes are the largest coordinate per column, nnz the entry lines,
    // the type DOUBLE because every file writes some value with a '.'.
    let table: [(&str, &[u64], usize, ValueType, f64); 6] = [
        (
            "tensors/med.tns",
            &[2425, 10816, 29567],
            100_000,
            ValueType::Float64,
            376882.0,
        ),
        (
            "tensors/med4.tns",
            &[60114, 83826, 23034, 1132],
            100_000,
            ValueType::Float64,
            50007.18118,
        ),
        (
            "tensors/med5.tns",
            &[60114, 83826, 23034, 1132, 100],
            100_000,
            ValueType::Float64,
            50007.18118,
        ),
        ("tensors/small.tns", &[2, 3, 2], 6, ValueType::Float64, 21.0),
        (
            "tensors/small4.tns",
            &[2, 2, 3, 3],
            8,
            ValueType::Float64,
            25.0,
        ),
        (
            "matrices/taco/3tensor.tns",
            &[1073, 1, 7],
            3,
            ValueType::Float64,
            3.1,
        ),
    ];
    let default_names = ["i", "j", "k", "l", "m"];
    for (name, shape, nnz, ty, sum) in table {
        let tensor = read_tns(&data.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sizes(&tensor), shape, "{name}");
        assert_eq!(tensor.nnz(), nnz, "{name}");
        assert_eq!(tensor.values()[0].ty, ty, "{name}");
        let mut expected_names: Vec<&str> = default_names[..shape.len()].to_vec();
        expected_names.push("v");
        assert_eq!(names(&tensor), expected_names, "{name}");
        let got: f64 = entries(&tensor)
            .iter()
            .map(|(_, v)| match v {
                Value::Real(x) => *x,
                Value::Int(x) => *x as f64,
            })
            .sum();
        assert!(
            (got - sum).abs() <= 1e-6 * sum.abs(),
            "{name}: sum {got} vs {sum}"
        );
    }
    // Every .tns file under tensors/ is covered above or below.
    let listed: Vec<String> = std::fs::read_dir(data.join("tensors"))
        .expect("tensors folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tns"))
        .collect();
    for file in listed {
        let name = format!("tensors/{file}");
        assert!(
            table.iter().any(|t| t.0 == name) || file == "small4_zeroidx.tns",
            "{name} is not checked; add it"
        );
    }
}

#[test]
fn zero_based_tns_needs_the_option() {
    let Some(data) = common::datasets() else {
        return;
    };
    let path = data.join("tensors/small4_zeroidx.tns");
    assert_error_at(read_tns(&path), &path, 2, "load it with zero_based = true");
    let options = ReadOptions {
        zero_based: true,
        ..ReadOptions::default()
    };
    let tensor = tns::read(&path, &options, &NoProgress).expect("0-based read");
    // awk: the largest coordinates are 2 2 3 2, so the sizes are one more.
    assert_eq!(sizes(&tensor), [3, 3, 4, 3]);
    assert_eq!(tensor.nnz(), 8);
    let first = &entries(&tensor)[0];
    assert_eq!(first, &(vec![1, 1, 2, 0], Value::Real(1.0)));
}

#[test]
fn tns_options_rename_and_are_validated() {
    let Some(data) = common::datasets() else {
        return;
    };
    let path = data.join("tensors/small.tns");
    let options = ReadOptions {
        keys: Some(vec!["a".into(), "b".into(), "c".into()]),
        values: Some(vec!["x".into()]),
        ..ReadOptions::default()
    };
    let tensor = tns::read(&path, &options, &NoProgress).expect("renamed");
    assert_eq!(names(&tensor), ["a", "b", "c", "x"]);
    let bad = [
        ReadOptions {
            keys: Some(vec!["a".into(), "b".into()]),
            ..ReadOptions::default()
        },
        ReadOptions {
            values: Some(vec![]),
            ..ReadOptions::default()
        },
        ReadOptions {
            header: Some(false),
            ..ReadOptions::default()
        },
        ReadOptions {
            delimiter: Some(b','),
            ..ReadOptions::default()
        },
    ];
    for options in bad {
        let error = tns::read(&path, &options, &NoProgress).expect_err("rejected");
        assert!(matches!(error, Error::Invalid(_)), "{options:?}: {error}");
        if options.header.is_some() || options.delimiter.is_some() {
            assert!(
                error.to_string().contains(
                    "does not apply to .tns files (it applies to: keys, values, zero_based)"
                ),
                "{error}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Round trips

fn build(
    dims: Vec<DimensionSpec>,
    coords: Vec<Vec<i64>>,
    values: Vec<(String, ValueData)>,
) -> Tensor {
    Tensor::from_coo(Coo {
        dims,
        coords,
        values,
        column_order: None,
    })
    .expect("valid tensor")
}

#[track_caller]
fn assert_same(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!(sizes(a), sizes(b), "{what}: sizes");
    assert_eq!(names(a), names(b), "{what}: names");
    assert_eq!(
        a.values().iter().map(|v| v.ty).collect::<Vec<_>>(),
        b.values().iter().map(|v| v.ty).collect::<Vec<_>>(),
        "{what}: value types"
    );
    assert_eq!(entries(a), entries(b), "{what}: entries");
}

fn first_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .expect("written file")
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn matrix_market_round_trips_every_variant() {
    let Some(data) = common::datasets() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = [
        ("lagraph/west0067.mtx", "real"),
        ("lagraph/cryg2500.mtx", "real"),
        ("lagraph/bcsstk13.mtx", "real"),
        ("lagraph/zenios.mtx", "real"),
        ("lagraph/comments_west0067.mtx", "real"),
        ("lagraph/skew_fp64.mtx", "real"),
        ("lagraph/full.mtx", "real"),
        ("lagraph/full_symmetric.mtx", "real"),
        ("lagraph/empty.mtx", "real"),
        ("lagraph/cover.mtx", "integer"),
        ("lagraph/matrix_int64.mtx", "integer"),
        ("lagraph/skew_int64.mtx", "integer"),
        ("lagraph/karate.mtx", "pattern"),
        ("lagraph/cover_structure.mtx", "pattern"),
        ("lagraph_dnn/n1024-l6.mtx", "real"),
        ("scipy_hb/abb313.mtx", "pattern"),
    ];
    for (name, field) in cases {
        let original =
            read_mtx(&data.join("matrices").join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let path = dir.path().join("out.mtx");
        matrix_market::write(&original, &path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            first_line(&path),
            format!("%%MatrixMarket matrix coordinate {field} general"),
            "{name}"
        );
        let back = read_mtx(&path).unwrap_or_else(|e| panic!("{name} read back: {e}"));
        assert_same(&original, &back, name);
    }
}

#[test]
fn matrix_market_writes_bags_and_booleans_as_integers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dims = || {
        vec![
            DimensionSpec::new("i", Some(3)),
            DimensionSpec::new("j", Some(4)),
        ]
    };
    // A bag in which (1, 2) occurs twice: its counts are written.
    let bag = build(dims(), vec![vec![0, 1, 1], vec![3, 2, 2]], vec![]);
    let path = dir.path().join("bag.mtx");
    matrix_market::write(&bag, &path).expect("write bag");
    assert_eq!(
        first_line(&path),
        "%%MatrixMarket matrix coordinate integer general"
    );
    let back = read_mtx(&path).expect("read bag");
    assert_eq!(sizes(&back), [3, 4]);
    assert_eq!(entries(&back), entries(&bag));

    let flags = build(
        dims(),
        vec![vec![0, 2], vec![0, 1]],
        vec![("on".into(), ValueData::Boolean(vec![true, false]))],
    );
    matrix_market::write(&flags, &path).expect("write booleans");
    assert_eq!(
        first_line(&path),
        "%%MatrixMarket matrix coordinate integer general"
    );
    let back = read_mtx(&path).expect("read booleans");
    assert_eq!(
        entries(&back),
        [(vec![0, 0], Value::Int(1)), (vec![2, 1], Value::Int(0))]
    );
}

#[test]
fn writers_reject_what_their_format_cannot_hold() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("out");
    let cube = build(
        vec![
            DimensionSpec::new("i", None),
            DimensionSpec::new("j", None),
            DimensionSpec::new("k", None),
        ],
        vec![vec![0], vec![1], vec![2]],
        vec![("v".into(), ValueData::Int64(vec![5]))],
    );
    let error = matrix_market::write(&cube, &path).expect_err("3-D");
    assert!(error.to_string().contains(".tns"), "{error}");

    let two_values = build(
        vec![DimensionSpec::new("i", None), DimensionSpec::new("j", None)],
        vec![vec![0], vec![1]],
        vec![
            ("a".into(), ValueData::Int64(vec![1])),
            ("b".into(), ValueData::Float64(vec![2.0])),
        ],
    );
    for error in [
        matrix_market::write(&two_values, &path).expect_err("two values"),
        tns::write(&two_values, &path).expect_err("two values"),
    ] {
        assert!(error.to_string().contains("Parquet or CSV"), "{error}");
    }

    let (dictionary, codes) = Dictionary::encode(["x", "y"]);
    let strings = build(
        vec![
            DimensionSpec {
                name: "name".into(),
                size: None,
                dictionary: Some(std::sync::Arc::new(dictionary)),
            },
            DimensionSpec::new("j", None),
        ],
        vec![codes, vec![0, 1]],
        vec![("v".into(), ValueData::Float64(vec![1.0, 2.0]))],
    );
    for error in [
        matrix_market::write(&strings, &path).expect_err("strings"),
        tns::write(&strings, &path).expect_err("strings"),
    ] {
        assert!(error.to_string().contains("Parquet or CSV"), "{error}");
    }
    assert!(!path.exists(), "nothing written on error");

    // A directory that does not exist: an I/O error, no stray files.
    let missing = dir.path().join("no/such/dir/out.mtx");
    let error = matrix_market::write(&two_values_2d(), &missing).expect_err("missing dir");
    assert!(matches!(error, Error::Io { .. }), "{error}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn two_values_2d() -> Tensor {
    build(
        vec![DimensionSpec::new("i", None), DimensionSpec::new("j", None)],
        vec![vec![0], vec![1]],
        vec![("v".into(), ValueData::Float64(vec![2.5]))],
    )
}

#[test]
fn tns_round_trips_dataset_files() {
    let Some(data) = common::datasets() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    for name in [
        "tensors/med.tns",
        "tensors/med4.tns",
        "tensors/med5.tns",
        "tensors/small.tns",
        "tensors/small4.tns",
        "matrices/taco/3tensor.tns",
    ] {
        let original = read_tns(&data.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let path = dir.path().join("out.tns");
        tns::write(&original, &path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = read_tns(&path).unwrap_or_else(|e| panic!("{name} read back: {e}"));
        assert_same(&original, &back, name);
    }
    // A matrix through .tns: integers stay integers.
    let cover = read_mtx(&data.join("matrices/lagraph/cover.mtx")).expect("cover");
    let path = dir.path().join("cover.tns");
    tns::write(&cover, &path).expect("write");
    let back = read_tns(&path).expect("read");
    assert_eq!(back.values()[0].ty, ValueType::Int64);
    assert_eq!(entries(&back), entries(&cover));
}

#[test]
fn tns_writes_bag_multiplicities_and_booleans() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bag.tns");
    let bag = build(
        vec![
            DimensionSpec::new("a", None),
            DimensionSpec::new("b", None),
            DimensionSpec::new("c", None),
        ],
        vec![vec![0, 0, 4], vec![1, 1, 0], vec![2, 2, 7]],
        vec![],
    );
    tns::write(&bag, &path).expect("write");
    assert_eq!(
        std::fs::read_to_string(&path).expect("text"),
        "1 2 3 2\n5 1 8 1\n"
    );
    let flags = build(
        vec![DimensionSpec::new("a", None)],
        vec![vec![0, 3]],
        vec![("f".into(), ValueData::Boolean(vec![false, true]))],
    );
    tns::write(&flags, &path).expect("write");
    assert_eq!(std::fs::read_to_string(&path).expect("text"), "1 0\n4 1\n");
}

/// A sparse matrix with random coordinates and float or integer values
/// (any bit pattern, including NaN, infinities and subnormals).
fn arbitrary_matrix() -> impl Strategy<Value = Tensor> {
    (1u64..40, 1u64..40, any::<bool>()).prop_flat_map(|(rows, cols, real)| {
        let entry = (0..rows as i64, 0..cols as i64, any::<u64>());
        proptest::collection::vec(entry, 0..60).prop_map(move |entries| {
            let values = if real {
                ValueData::Float64(entries.iter().map(|e| f64::from_bits(e.2)).collect())
            } else {
                // At most 2^55 in size, so that up to 60 duplicates add up
                // without overflow.
                ValueData::Int64(entries.iter().map(|e| (e.2 as i64) >> 8).collect())
            };
            build(
                vec![
                    DimensionSpec::new("i", Some(rows)),
                    DimensionSpec::new("j", Some(cols)),
                ],
                vec![
                    entries.iter().map(|e| e.0).collect(),
                    entries.iter().map(|e| e.1).collect(),
                ],
                vec![("v".into(), values)],
            )
        })
    })
}

/// A tensor of 1 to 6 dimensions with sizes settled by its coordinates.
fn arbitrary_tensor() -> impl Strategy<Value = Tensor> {
    (1usize..7, any::<bool>()).prop_flat_map(|(order, real)| {
        let entry = (proptest::collection::vec(0i64..1000, order), any::<u64>());
        proptest::collection::vec(entry, 1..50).prop_map(move |entries| {
            let values = if real {
                ValueData::Float64(entries.iter().map(|e| f64::from_bits(e.1)).collect())
            } else {
                // At most 2^55 in size, so that up to 50 duplicates add up
                // without overflow.
                ValueData::Int64(entries.iter().map(|e| (e.1 as i64) >> 8).collect())
            };
            let names = ["i", "j", "k", "l", "m", "n"];
            build(
                (0..order)
                    .map(|d| DimensionSpec::new(names[d], None))
                    .collect(),
                (0..order)
                    .map(|d| entries.iter().map(|e| e.0[d]).collect())
                    .collect(),
                vec![("v".into(), values)],
            )
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_matrices_round_trip_through_mtx(tensor in arbitrary_matrix()) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("m.mtx");
        matrix_market::write(&tensor, &path).expect("write");
        let back = read_mtx(&path).expect("read back");
        assert_same(&tensor, &back, "random matrix");
    }

    #[test]
    fn random_tensors_round_trip_through_tns(tensor in arbitrary_tensor()) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.tns");
        tns::write(&tensor, &path).expect("write");
        let back = read_tns(&path).expect("read back");
        assert_same(&tensor, &back, "random tensor");
    }
}

// ---------------------------------------------------------------------------
// Malformed Matrix Market input: each error names the file and the line

const REAL: &str = "%%MatrixMarket matrix coordinate real general\n";

#[test]
fn matrix_market_header_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases: [(&str, u64, &str); 14] = [
        (
            "%%MatrixMarket matrix coordinate real\n2 2 1\n1 1 1\n",
            1,
            "the header ends before the symmetry",
        ),
        (
            "%%MatrixMarket vector coordinate real general\n2 1\n",
            1,
            "unknown object 'vector'",
        ),
        (
            "%%MatrixMarkt matrix coordinate real general\n2 2 0\n",
            1,
            "unknown header '%%MatrixMarkt'",
        ),
        (
            "%%MatrixMarket matrix coordinate float general\n2 2 0\n",
            1,
            "unknown value type 'float'",
        ),
        (
            "%%MatrixMarket matrix sparse real general\n2 2 0\n",
            1,
            "unknown format 'sparse'",
        ),
        (
            "%%MatrixMarket matrix coordinate real general yes\n2 2 0\n",
            1,
            "unexpected 'yes'",
        ),
        (
            "%%MatrixMarket matrix coordinate real upper\n2 2 0\n",
            1,
            "unknown symmetry 'upper'",
        ),
        (
            "%%MatrixMarket matrix array pattern general\n2 2\n",
            1,
            "cannot be stored as an array",
        ),
        (
            "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 0\n",
            1,
            "cannot be skew-symmetric",
        ),
        (
            "%%MatrixMarket matrix coordinate real general\n% only comments\n",
            2,
            "ends before the size line",
        ),
        ("", 1, "the file is empty"),
        (
            "%%MatrixMarket matrix coordinate real general\n\n2 2\n",
            3,
            "found 2 fields",
        ),
        (
            "%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n",
            2,
            "must be square, but the size line says 2 x 3",
        ),
        (
            "1 2 3 4\n",
            1,
            "expected a %%MatrixMarket header or a size line",
        ),
    ];
    for (k, (text, line, contains)) in cases.into_iter().enumerate() {
        let path = file(&dir, &format!("h{k}.mtx"), text);
        assert_error_at(read_mtx(&path), &path, line, contains);
    }
    let path = file(&dir, "size.mtx", format!("{REAL}2 x 1\n"));
    assert_error_at(read_mtx(&path), &path, 2, "'x' is not a valid size");
    let path = file(
        &dir,
        "huge.mtx",
        format!("{REAL}99999999999999999999 2 0\n"),
    );
    assert_error_at(read_mtx(&path), &path, 2, "is not a valid size");
    // The header is case-insensitive; hermitian real is symmetric.
    let path = file(
        &dir,
        "case.mtx",
        "%%matrixmarket MATRIX Coordinate Real Hermitian\n2 2 1\n2 1 3.5\n",
    );
    let tensor = read_mtx(&path).expect("case-insensitive header");
    assert_eq!(
        entries(&tensor),
        [
            (vec![0, 1], Value::Real(3.5)),
            (vec![1, 0], Value::Real(3.5))
        ]
    );
    let path = file(
        &dir,
        "complex.mtx",
        "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n",
    );
    let error = read_mtx(&path).expect_err("complex");
    assert!(
        matches!(&error, Error::Unsupported { message, .. } if message.contains("complex values are not supported")),
        "{error}"
    );
}

#[test]
fn matrix_market_body_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let int = "%%MatrixMarket matrix coordinate integer general\n";
    let sym = "%%MatrixMarket matrix coordinate real symmetric\n";
    let skew = "%%MatrixMarket matrix coordinate integer skew-symmetric\n";
    let array = "%%MatrixMarket matrix array real general\n";
    let cases: Vec<(String, u64, &str)> = vec![
        // Wrong entry counts.
        (
            format!("{REAL}3 3 3\n1 1 1\n2 2 2\n"),
            4,
            "the file ends after 2 entries, but the size line (line 2) announces 3",
        ),
        (
            format!("{REAL}3 3 1\n1 1 1\n% comment\n2 2 2\n"),
            5,
            "more entries than the 1 announced by the size line (line 2)",
        ),
        (
            format!("{array}2 2\n1\n2\n3\n"),
            5,
            "the file ends after 3 values",
        ),
        (
            format!("{array}1 2\n1\n2\n3\n"),
            5,
            "more values than the 2",
        ),
        // Indices out of range.
        (
            format!("{REAL}3 3 1\n0 1 1\n"),
            3,
            "row index 0 is out of range 1..=3",
        ),
        (
            format!("{REAL}3 3 1\n1 4 1\n"),
            3,
            "column index 4 is out of range 1..=3",
        ),
        (
            format!("{REAL}3 3 1\n1 99999999999999999999999 1\n"),
            3,
            "column index '99999999999999999999999' is out of range",
        ),
        (
            format!("{REAL}3 3 1\n-1 1 1\n"),
            3,
            "'-1' is not a valid row index",
        ),
        // Bad values.
        (
            format!("{REAL}3 3 1\n1 1 abc\n"),
            3,
            "'abc' is not a real number",
        ),
        (
            format!("{int}3 3 1\n1 1 1.5\n"),
            3,
            "'1.5' is not an integer",
        ),
        (
            format!("{int}3 3 1\n1 1 9223372036854775808\n"),
            3,
            "does not fit in 64 bits",
        ),
        (format!("{array}1 1\nx\n"), 3, "'x' is not a real number"),
        // Truncated lines and files, extra fields.
        (
            format!("{REAL}3 3 2\n1 1 1\n2 2\n"),
            4,
            "expected 3 fields, 'row column value', but found 2",
        ),
        (format!("{REAL}3 3 2\n1 1 1\n2"), 4, "but found 1"),
        (format!("{REAL}3 3 1\n1 1 1 1\n"), 3, "but found 4"),
        (
            format!("{array}2 1\n1 2\n3\n"),
            3,
            "expected 1 field, one value per line, but found 2",
        ),
        (
            "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1\n".to_string(),
            3,
            "a pattern file has no values",
        ),
        // Triangles of symmetric files.
        (
            format!("{sym}3 3 2\n2 1 1\n1 3 1\n"),
            4,
            "entry (1, 3) is above the diagonal, but the entries before it are below it",
        ),
        (
            format!("{sym}3 3 3\n2 2 1\n1 3 1\n3 1 1\n"),
            5,
            "entry (3, 1) is below the diagonal, but the entries before it are above it",
        ),
        (
            format!("{skew}3 3 2\n2 1 1\n2 2 1\n"),
            4,
            "entry (2, 2) is on the diagonal; a skew-symmetric matrix has a zero diagonal",
        ),
        // Duplicates name both lines.
        (
            format!("{REAL}3 3 3\n1 1 1\n2 2 2\n1 1 3\n"),
            5,
            "duplicate entry (1, 1): line 3 has the same coordinates",
        ),
        (
            format!("{sym}3 3 3\n2 1 1\n3 3 2\n% c\n2 1 3\n"),
            6,
            "duplicate entry (2, 1): line 3",
        ),
        (
            format!("{int}2 2 2\n1 1 9223372036854775807\n1 1 9223372036854775807\n"),
            4,
            "duplicate entry (1, 1): line 3",
        ),
    ];
    for (k, (text, line, contains)) in cases.into_iter().enumerate() {
        let path = file(&dir, &format!("b{k}.mtx"), &text);
        assert_error_at(read_mtx(&path), &path, line, contains);
    }
    // Negating i64::MIN for the mirror of a skew-symmetric entry overflows.
    let path = file(
        &dir,
        "neg.mtx",
        format!("{skew}2 2 1\n2 1 -9223372036854775808\n"),
    );
    let error = read_mtx(&path).expect_err("overflow");
    assert!(matches!(error, Error::Overflow(_)), "{error}");
}

#[test]
fn matrix_market_accepts_what_the_format_allows() {
    let dir = tempfile::tempdir().expect("temp dir");
    // CRLF line ends, tabs, comments and blank lines anywhere, explicit
    // zeros kept, sizes larger than the entries.
    let text = "%%MatrixMarket matrix coordinate real general\r\n% c\r\n\r\n 5\t4  3 \r\n1 1 0\r\n\r\n% mid\r\n5 4 -2.5e3\r\n3 2 .5";
    let path = file(&dir, "ok.mtx", text);
    let tensor = read_mtx(&path).expect("valid");
    assert_eq!(sizes(&tensor), [5, 4]);
    assert_eq!(
        entries(&tensor),
        [
            (vec![0, 0], Value::Real(0.0)),
            (vec![2, 1], Value::Real(0.5)),
            (vec![4, 3], Value::Real(-2500.0))
        ]
    );
    // Array, skew-symmetric: column-major lower triangle without diagonal.
    let path = file(
        &dir,
        "skew.mtx",
        "%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n",
    );
    let tensor = read_mtx(&path).expect("skew array");
    assert_eq!(
        entries(&tensor),
        [
            (vec![0, 1], Value::Int(-1)),
            (vec![0, 2], Value::Int(-2)),
            (vec![1, 0], Value::Int(1)),
            (vec![1, 2], Value::Int(-3)),
            (vec![2, 0], Value::Int(2)),
            (vec![2, 1], Value::Int(3)),
        ]
    );
    // Zero-sized and huge declared sizes do not allocate by the size line.
    let path = file(&dir, "zero.mtx", format!("{REAL}0 0 0\n"));
    assert_eq!(read_mtx(&path).expect("empty").nnz(), 0);
    let path = file(
        &dir,
        "big.mtx",
        format!("{REAL}9223372036854775807 9223372036854775807 1\n9223372036854775807 1 1\n"),
    );
    assert_eq!(
        sizes(&read_mtx(&path).expect("big sizes")),
        [i64::MAX as u64; 2]
    );
    let path = file(
        &dir,
        "bigarray.mtx",
        "%%MatrixMarket matrix array real general\n4000000000 4000000000\n1\n",
    );
    assert_error_at(read_mtx(&path), &path, 3, "the file ends after 1 values");
}

// ---------------------------------------------------------------------------
// Malformed .tns input

#[test]
fn tns_errors_name_the_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases: [(&str, u64, &str); 9] = [
        (
            "1 1 1.0\n1 2 3 4.0\n",
            2,
            "this line has 4 fields, but the first entry (line 1) has 3",
        ),
        (
            "# c\n\n1 1 1.0\n2 2\n",
            4,
            "this line has 2 fields, but the first entry (line 3) has 3",
        ),
        (
            "1 2 3 1\n1 0 3 1\n",
            2,
            "coordinate 2 is 0, but .tns coordinates are 1-based; if this file is 0-based, load it with zero_based = true",
        ),
        (
            "1 1 5\n2 2 6\n# c\n1 1 7\n",
            4,
            "duplicate entry (1, 1): line 1 has the same coordinates",
        ),
        ("1 1 x\n", 1, "'x' is not a number"),
        ("1 a 2\n", 1, "'a' is not a valid coordinate"),
        ("1 -1 2\n", 1, "'-1' is not a valid coordinate"),
        ("7\n", 1, "at least one coordinate and a value"),
        ("# nothing\n\n", 2, "the file has no entries"),
    ];
    for (k, (text, line, contains)) in cases.into_iter().enumerate() {
        let path = file(&dir, &format!("t{k}.tns"), text);
        assert_error_at(read_tns(&path), &path, line, contains);
    }
    let path = file(&dir, "big.tns", "1 99999999999999999999 1\n");
    assert_error_at(read_tns(&path), &path, 1, "is too large");
    let path = file(
        &dir,
        "dup.tns",
        "1 1 9223372036854775807\n1 1 9223372036854775807\n",
    );
    assert_error_at(read_tns(&path), &path, 2, "duplicate entry (1, 1): line 1");
}

#[test]
fn tns_value_types_follow_the_values() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = file(&dir, "int.tns", "1 1 3\r\n2 2 -4\n");
    let tensor = read_tns(&path).expect("integers");
    assert_eq!(tensor.values()[0].ty, ValueType::Int64);
    assert_eq!(entries(&tensor)[1], (vec![1, 1], Value::Int(-4)));
    let path = file(&dir, "mixed.tns", "1 1 3\n2 2 4.5\n3 3 7\n");
    let tensor = read_tns(&path).expect("mixed");
    assert_eq!(tensor.values()[0].ty, ValueType::Float64);
    assert_eq!(entries(&tensor)[0], (vec![0, 0], Value::Real(3.0)));
    let path = file(&dir, "huge.tns", "1 1 99999999999999999999\n");
    assert_eq!(
        read_tns(&path).expect("huge").values()[0].ty,
        ValueType::Float64
    );
    // Seven dimensions: names continue after n.
    let path = file(&dir, "seven.tns", "1 2 3 4 5 6 7 1\n");
    assert_eq!(
        names(&read_tns(&path).expect("7-D")),
        ["i", "j", "k", "l", "m", "n", "d7", "v"]
    );
    // An empty file loads when keys say how many dimensions it has.
    let path = file(&dir, "empty.tns", "# no entries\n");
    let options = ReadOptions {
        keys: Some(vec!["a".into(), "b".into()]),
        ..ReadOptions::default()
    };
    let tensor = tns::read(&path, &options, &NoProgress).expect("empty with keys");
    assert_eq!((sizes(&tensor), tensor.nnz()), (vec![0, 0], 0));
}

// ---------------------------------------------------------------------------
// Large files: several blocks and pieces, progress, line numbers

/// Records progress reports.
#[derive(Default)]
struct Recorder {
    started: Mutex<Vec<(String, u64)>>,
    advanced: AtomicU64,
    finished: AtomicU64,
}

impl ProgressSink for Recorder {
    fn start(&self, label: &str, total_bytes: u64) {
        self.started
            .lock()
            .expect("lock")
            .push((label.to_string(), total_bytes));
    }
    fn advance(&self, bytes: u64) {
        self.advanced.fetch_add(bytes, Ordering::Relaxed);
    }
    fn finish(&self) {
        self.finished.fetch_add(1, Ordering::Relaxed);
    }
}

/// A coordinate real general file of `n` entries (line 3 + k holds entry
/// k), about 25 bytes per line.
fn big_mtx(n: usize) -> String {
    let mut text = format!("{REAL}% generated\n{n} {n} {n}\n");
    for k in 0..n {
        text.push_str(&format!("{} {} {}.25\n", k + 1, (k * 7919) % n + 1, k));
    }
    text
}

#[test]
fn large_files_span_blocks_with_exact_lines_and_progress() {
    let dir = tempfile::tempdir().expect("temp dir");
    let n = 1_000_000; // ~26 MB: several 8 MiB blocks of 1 MiB pieces
    let text = big_mtx(n);
    let path = file(&dir, "big.mtx", &text);
    let recorder = Recorder::default();
    let tensor = matrix_market::read(&path, &ReadOptions::default(), &recorder).expect("big file");
    assert_eq!(tensor.nnz(), n);
    assert_eq!(
        entries(&tensor)[n - 1],
        (
            vec![n as i64 - 1, ((n - 1) * 7919 % n) as i64],
            Value::Real((n - 1) as f64 + 0.25)
        )
    );
    assert_eq!(
        *recorder.started.lock().expect("lock"),
        [("big.mtx".to_string(), text.len() as u64)]
    );
    assert_eq!(recorder.advanced.load(Ordering::Relaxed), text.len() as u64);
    assert_eq!(recorder.finished.load(Ordering::Relaxed), 1);

    // A bad value deep in the file, in a later block and piece.
    let bad_entry = 876_543;
    let bad_line = 4 + bad_entry as u64;
    let broken = text.replacen(
        &format!("\n{} ", bad_entry + 1),
        &format!("\n{} oops ", bad_entry + 1),
        1,
    );
    let path = file(&dir, "broken.mtx", &broken);
    let recorder = Recorder::default();
    let result = matrix_market::read(&path, &ReadOptions::default(), &recorder);
    assert_error_at(
        result,
        &path,
        bad_line,
        "'oops' is not a valid column index",
    );
    assert_eq!(
        recorder.finished.load(Ordering::Relaxed),
        1,
        "finished on error too"
    );

    // A duplicate of an early entry near the end names both lines.
    let mut lines: Vec<&str> = text.lines().collect();
    let copy = lines[10].to_string();
    let last = lines.len() - 1;
    lines[last] = &copy;
    let path = file(&dir, "dup.mtx", lines.join("\n"));
    assert_error_at(
        read_mtx(&path),
        &path,
        last as u64 + 1,
        "line 11 has the same coordinates",
    );

    // The same data as .tns, with a 0 coordinate near the end.
    let tns_text: String = text.lines().skip(3).map(|l| format!("{l}\n")).collect();
    let path = file(&dir, "big.tns", &tns_text);
    let tensor = read_tns(&path).expect("big tns");
    assert_eq!(
        (tensor.nnz(), sizes(&tensor)),
        (n, vec![n as u64, n as u64])
    );
    let zero = tns_text.replacen(&format!("\n{} ", n - 5), "\n0 ", 1);
    let path = file(&dir, "zero.tns", &zero);
    assert_error_at(read_tns(&path), &path, n as u64 - 5, "zero_based = true");
}

// ---------------------------------------------------------------------------
// Fuzzing: random and mutated files never panic a reader

const SEEDS: [&str; 10] = [
    "%%MatrixMarket matrix coordinate real general\n% c\n3 4 3\n1 1 1.5\n3 4 -2e3\n2 2 0\n",
    "%%MatrixMarket matrix coordinate integer symmetric\n4 4 3\n2 1 7\n4 4 -1\n3 1 9223372036854775807\n",
    "%%MatrixMarket matrix coordinate pattern general\n5 5 2\n1 5\n5 1\n",
    "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 inf\n3 2 nan\n",
    "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
    "%%MatrixMarket matrix array integer symmetric\n2 2\n1\n2\n3\n",
    "3 3\n.1\n.2\n.3\n.4\n.5\n.6\n.7\n.8\n.9\n",
    "2 2 1\n1 2 3.0\n",
    "# t\n1 2 3 4.0\n2 2 2 -1\n\n3 1 1 7\n",
    "1 1 1\n2 1 2\n1 2 3\n",
];

const GARBAGE: [&str; 16] = [
    "0",
    "-1",
    "99999999999999999999999",
    "-9223372036854775809",
    "9223372036854775807",
    "1e999",
    "nan",
    "-inf",
    "%%MatrixMarket",
    "%",
    "#",
    " ",
    "\n",
    "\r\n",
    "x",
    "\u{fffd}\u{0}",
];

fn mutate(rng: &mut Rng, seed: &str) -> Vec<u8> {
    let mut bytes = seed.as_bytes().to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(8) {
            0 if !bytes.is_empty() => {
                let k = rng.below(bytes.len());
                bytes[k] ^= 1 << rng.below(8);
            }
            1 if !bytes.is_empty() => {
                let k = rng.below(bytes.len());
                bytes[k] = *rng.pick(b"0123456789 -+.e\n%#x\t\r");
            }
            2 => bytes.truncate(at),
            3 if !bytes.is_empty() => {
                let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
                let line = rng.pick(&lines).to_vec();
                bytes.splice(at..at, line);
            }
            4 => {
                let word = rng.pick(&GARBAGE).as_bytes().to_vec();
                bytes.splice(at..at, word);
            }
            5 => {
                // Replace a number with a garbage word.
                let digits: Vec<usize> = (0..bytes.len())
                    .filter(|&k| bytes[k].is_ascii_digit())
                    .collect();
                if !digits.is_empty() {
                    let k = *rng.pick(&digits);
                    let word = rng.pick(&GARBAGE).as_bytes().to_vec();
                    bytes.splice(k..k + 1, word);
                }
            }
            6 => {
                let words = [
                    "coordinate",
                    "array",
                    "real",
                    "integer",
                    "pattern",
                    "complex",
                    "general",
                    "symmetric",
                    "skew-symmetric",
                    "hermitian",
                ];
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let from = rng.pick(&words);
                let to = rng.pick(&words);
                bytes = text.replacen(from, to, 1).into_bytes();
            }
            _ => {
                let n = rng.below(40);
                let noise: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                bytes.splice(at..at, noise);
            }
        }
    }
    bytes
}

#[test]
fn fuzzed_files_never_panic_the_readers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let (mut ok, mut err) = (0, 0);
    let cases = 3000;
    for case in 0..cases {
        let bytes = if case % 10 == 0 {
            let n = rng.below(200);
            (0..n).map(|_| *rng.pick(b"0123456789 \n.-%#ex")).collect()
        } else {
            let seed = *rng.pick(&SEEDS);
            mutate(&mut rng, seed)
        };
        let path = file(&dir, "fuzz.txt", &bytes);
        let zero_based = ReadOptions {
            zero_based: true,
            ..ReadOptions::default()
        };
        let outcome = std::panic::catch_unwind(|| {
            [
                read_mtx(&path).map(|_| ()),
                read_tns(&path).map(|_| ()),
                tns::read(&path, &zero_based, &NoProgress).map(|_| ()),
            ]
        });
        match outcome {
            Ok(results) => {
                for result in results {
                    match result {
                        Ok(()) => ok += 1,
                        Err(_) => err += 1,
                    }
                }
            }
            Err(_) => panic!(
                "case {case} panicked on input {:?}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
    eprintln!("fuzz: {cases} inputs, {ok} Ok and {err} Err results");
    assert!(
        ok > 100 && err > 1000,
        "the mutations should produce both: {ok} Ok, {err} Err"
    );
}

/// A 1 GB file loads (about 37 million entries). Slow in debug builds, so
/// run on demand: `cargo test --test io_text_formats -- --ignored`.
#[test]
#[ignore]
fn a_one_gigabyte_file_loads() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("huge.mtx");
    let n: u64 = 37_000_000;
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    writeln!(out, "{REAL}{n} 1000 {n}").expect("write");
    for k in 0..n {
        writeln!(
            out,
            "{} {} 0.{:015}",
            k + 1,
            k % 1000 + 1,
            k * 7919 % 1_000_000_000_000_000
        )
        .expect("write");
    }
    out.flush().expect("flush");
    drop(out);
    let bytes = std::fs::metadata(&path).expect("size").len();
    assert!(bytes > 1_000_000_000, "{bytes} bytes");
    let recorder = Recorder::default();
    let tensor = matrix_market::read(&path, &ReadOptions::default(), &recorder).expect("1 GB file");
    assert_eq!(tensor.nnz(), n as usize);
    assert_eq!(sizes(&tensor), [n, 1000]);
    assert_eq!(recorder.advanced.load(Ordering::Relaxed), bytes);
}

#[test]
fn symmetric_files_may_store_the_upper_triangle_instead() {
    let dir = tempfile::tempdir().expect("temp dir");
    for symmetry in ["symmetric", "skew-symmetric"] {
        let header = format!("%%MatrixMarket matrix coordinate real {symmetry}\n3 3 2\n");
        let lower = file(
            &dir,
            "lower.mtx",
            format!("{header}2 1 1.5\n3 2 -4\n").as_bytes(),
        );
        let upper = file(
            &dir,
            "upper.mtx",
            format!("{header}1 2 1.5\n2 3 -4\n").as_bytes(),
        );
        let lower = read_mtx(&lower).expect("lower triangle");
        let upper = read_mtx(&upper).expect("upper triangle");
        assert_eq!(lower.nnz(), 4, "{symmetry}");
        // The stored triangle keeps its values and the mirror gets them
        // (negated when skew-symmetric), whichever triangle was stored.
        let sign = if symmetry == "symmetric" { 1.0 } else { -1.0 };
        let value = |t: &Tensor, i: i64, j: i64| {
            entries(t)
                .into_iter()
                .find(|(c, _)| c == &vec![i, j])
                .map(|(_, v)| v)
        };
        assert_eq!(value(&lower, 1, 0), Some(Value::Real(1.5)));
        assert_eq!(value(&lower, 0, 1), Some(Value::Real(sign * 1.5)));
        assert_eq!(value(&upper, 0, 1), Some(Value::Real(1.5)));
        assert_eq!(value(&upper, 1, 0), Some(Value::Real(sign * 1.5)));
    }
}
