//! Fuzzing the Parquet and CSV readers: random and mutated files must give
//! `Ok` or `Err`, never a panic.
//!
//! Every input starts from a valid file (CSV texts with integer, float,
//! string and boolean columns; Parquet files written by einsql and by
//! arrow's `ArrowWriter` with and without einsql field metadata) and is
//! mutated with a small seeded generator, so a failure reproduces from its
//! case number.

mod common;

use common::Rng;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::parquet::arrow::ArrowWriter;
use ::parquet::file::metadata::{ParquetMetaDataReader, ParquetMetaDataWriter};
use arrow::array::{
    ArrayRef, BooleanArray, DictionaryArray, Float32Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, UInt64Array,
};
use arrow::datatypes::{Field, Int32Type, Schema};
use einsql::io::{ReadOptions, csv, parquet};
use einsql::progress::NoProgress;
use einsql::storage::from_arrow::{ColumnRoles, POSITION, ROLE, SIZE, tensor_from_batches};

fn file(dir: &tempfile::TempDir, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write test file");
    path
}

/// Counts the outcomes of the reads.
#[derive(Default)]
struct Outcomes {
    ok: usize,
    err: usize,
}

impl Outcomes {
    fn count<T>(&mut self, result: einsql::Result<T>) {
        match result {
            Ok(_) => self.ok += 1,
            Err(_) => self.err += 1,
        }
    }
}

// ---------------------------------------------------------------------------
// CSV

const CSV_SEEDS: [&str; 8] = [
    "i,j,v\n1,2,1.5\n3,4,-2e3\n2,2,0\n",
    "row,col,flag\n0,1,true\n5,3,false\n2,2,true\n",
    "name,k,w\nalice,1,0.5\nbob,2,7.25\n\"carol, jr\",3,1e-3\n",
    "a,b,c,d\n1,x,2.5,true\n2,y,NaN,false\n3,z,inf,true\n",
    "city,day,temp\nParis,2024-01-05,3.5\nOslo,2024-01-06,-7\n",
    "i;j;v\n1;2;3\n4;5;6\n",
    "1,2,3.0\n4,5,6.0\n7,8,9.5\n",
    "id,count\n9223372036854775807,1\n-9223372036854775808,2\n",
];

const CSV_GARBAGE: [&[u8]; 22] = [
    b"",
    b",",
    b";",
    b"\"",
    b"\"\"",
    b"\n",
    b"\r\n",
    b"0",
    b"-1",
    b"99999999999999999999999999",
    b"-9223372036854775809",
    b"18446744073709551616",
    b"1e999",
    b"NaN",
    b"-inf",
    b"true",
    b"x",
    b"\xff\xfe",
    b"\xc3",
    b"\0",
    b"2024-13-45",
    b"\"unterminated",
];

fn mutate_csv(rng: &mut Rng, seed: &str) -> Vec<u8> {
    let mut bytes = seed.as_bytes().to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(10) {
            0 if !bytes.is_empty() => {
                let k = rng.below(bytes.len());
                bytes[k] ^= 1 << rng.below(8);
            }
            1 if !bytes.is_empty() => {
                let k = rng.below(bytes.len());
                bytes[k] = *rng.pick(b",;\"\n\r0123456789.-e \t");
            }
            2 => bytes.truncate(at),
            3 => {
                let mark = *rng.pick(b",;\"");
                bytes.insert(at, mark);
            }
            4 => {
                // Delete a delimiter or quote.
                let marks: Vec<usize> = (0..bytes.len())
                    .filter(|&k| b",;\"".contains(&bytes[k]))
                    .collect();
                if !marks.is_empty() {
                    bytes.remove(*rng.pick(&marks));
                }
            }
            5 if !bytes.is_empty() => {
                let lines: Vec<Vec<u8>> = bytes
                    .split_inclusive(|&b| b == b'\n')
                    .map(<[u8]>::to_vec)
                    .collect();
                let k = rng.below(lines.len());
                let mut out = Vec::with_capacity(bytes.len());
                for (n, line) in lines.iter().enumerate() {
                    let copies = match (n == k, rng.below(2)) {
                        (false, _) => 1,
                        (true, 0) => 0,
                        (true, _) => 2 + rng.below(3),
                    };
                    for _ in 0..copies {
                        out.extend_from_slice(line);
                    }
                }
                bytes = out;
            }
            6 => {
                let word = rng.pick(&CSV_GARBAGE).to_vec();
                bytes.splice(at..at, word);
            }
            7 => {
                // Replace a field with a garbage word.
                let fields: Vec<(usize, usize)> = field_spans(&bytes);
                if !fields.is_empty() {
                    let (start, end) = *rng.pick(&fields);
                    let word = rng.pick(&CSV_GARBAGE).to_vec();
                    bytes.splice(start..end, word);
                }
            }
            8 => {
                // A very long line.
                let unit = *rng.pick(&[&b"1,"[..], b"x", b"9", b"\"a\"\"b\","]);
                let long: Vec<u8> = unit.repeat(2_000 + rng.below(20_000));
                bytes.splice(at..at, long);
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

/// The byte ranges of the fields (between delimiters and line ends).
fn field_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (k, &b) in bytes.iter().enumerate() {
        if b == b',' || b == b';' || b == b'\n' {
            spans.push((start, k));
            start = k + 1;
        }
    }
    spans.push((start, bytes.len()));
    spans
}

fn names(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|s| s.to_string()).collect())
}

/// The option sets every CSV input is read with.
fn csv_options() -> Vec<ReadOptions> {
    vec![
        ReadOptions::default(),
        ReadOptions {
            keys: names(&["i", "j"]),
            values: names(&["v"]),
            ..ReadOptions::default()
        },
        ReadOptions {
            keys: names(&["name", "no_such_column"]),
            ..ReadOptions::default()
        },
        ReadOptions {
            values: names(&["c", "temp", "count"]),
            ..ReadOptions::default()
        },
        ReadOptions {
            header: Some(false),
            ..ReadOptions::default()
        },
        ReadOptions {
            delimiter: Some(b';'),
            ..ReadOptions::default()
        },
    ]
}

#[test]
fn fuzzed_csv_files_never_panic_the_reader() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rng = Rng(0xc5f0_2f22_9a17_0b3d);
    let options = csv_options();
    let mut outcomes = Outcomes::default();
    let cases = 2500;
    for case in 0..cases {
        let bytes = if case % 10 == 0 {
            let n = rng.below(200);
            (0..n)
                .map(|_| *rng.pick(b"0123456789,;\"\n.-exaNtrue "))
                .collect()
        } else {
            let seed = *rng.pick(&CSV_SEEDS);
            mutate_csv(&mut rng, seed)
        };
        let path = file(&dir, "fuzz.csv", &bytes);
        let read = std::panic::catch_unwind(|| {
            options
                .iter()
                .map(|o| {
                    let t = std::time::Instant::now();
                    let r = csv::read(&path, o, &NoProgress).map(|_| ());
                    let e = t.elapsed();
                    if e.as_millis() > 100 {
                        eprintln!("SLOW {case} {e:?} {o:?} {r:?} len {}", bytes.len());
                    }
                    r
                })
                .collect::<Vec<_>>()
        });
        match read {
            Ok(results) => results.into_iter().for_each(|r| outcomes.count(r)),
            Err(_) => panic!(
                "case {case} panicked on input {:?}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
    eprintln!(
        "csv fuzz: {cases} inputs × {} option sets, {} Ok and {} Err results",
        options.len(),
        outcomes.ok,
        outcomes.err
    );
    assert!(
        outcomes.ok > 1000 && outcomes.err > 1000,
        "the mutations should produce both: {} Ok, {} Err",
        outcomes.ok,
        outcomes.err
    );
}

// ---------------------------------------------------------------------------
// Parquet

fn field(name: &str, array: &ArrayRef, metadata: Metadata) -> Field {
    Field::new(name, array.data_type().clone(), true).with_metadata(
        metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<HashMap<_, _>>(),
    )
}

/// Field metadata as (key, value) pairs.
type Metadata<'a> = &'a [(&'a str, &'a str)];

/// A batch of named columns, each with its field metadata.
fn batch(columns: Vec<(&str, ArrayRef, Metadata)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array, metadata)| field(name, array, metadata))
        .collect();
    let arrays = columns.into_iter().map(|(_, a, _)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("valid batch")
}

fn arrow_parquet(batch: &RecordBatch) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, batch.schema(), None).expect("writer");
    writer.write(batch).expect("write batch");
    writer.close().expect("close writer");
    bytes
}

fn einsql_parquet(dir: &tempfile::TempDir, name: &str, batch: &RecordBatch) -> Vec<u8> {
    let tensor = tensor_from_batches(
        &batch.schema(),
        std::slice::from_ref(batch),
        &ColumnRoles::default(),
    )
    .expect("seed tensor");
    let path = dir.path().join(name);
    parquet::write(&tensor, &path).expect("write seed");
    std::fs::read(&path).expect("read seed")
}

/// Valid Parquet files of several schemas and metadata, written by einsql
/// and by arrow directly.
fn parquet_seeds(dir: &tempfile::TempDir) -> Vec<Vec<u8>> {
    let ints = |v: &[i64]| -> ArrayRef { Arc::new(Int64Array::from(v.to_vec())) };
    let floats = |v: &[f64]| -> ArrayRef { Arc::new(Float64Array::from(v.to_vec())) };
    let strings = |v: &[&str]| -> ArrayRef { Arc::new(StringArray::from(v.to_vec())) };
    let dictionary: ArrayRef = Arc::new(
        ["red", "green", "red", "blue"]
            .into_iter()
            .collect::<DictionaryArray<Int32Type>>(),
    );
    let with_nulls: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(3), Some(4)]));
    let key = |size: &'static str, position: &'static str| -> Vec<(&'static str, &'static str)> {
        vec![(ROLE, "key"), (SIZE, size), (POSITION, position)]
    };
    let (k0, k1) = (key("10", "1"), key("10", "0"));
    let value: Metadata = &[(ROLE, "value"), (POSITION, "0")];
    let absurd: [Vec<(&str, &str)>; 6] = [
        key("-1", "0"),
        key("abc", "0"),
        key("3", "0"),
        key("18446744073709551615", "0"),
        key("10", "99999999999999999999"),
        vec![(ROLE, "dimension"), (POSITION, "-4")],
    ];
    let rows: Vec<i64> = (0..200).collect();
    let plain = batch(vec![
        ("i", ints(&rows), &[]),
        (
            "j",
            ints(&rows.iter().map(|r| r * 7 % 13).collect::<Vec<_>>()),
            &[],
        ),
        (
            "v",
            floats(&rows.iter().map(|&r| r as f64 / 3.0).collect::<Vec<_>>()),
            &[],
        ),
    ]);
    let mixed = batch(vec![
        ("city", strings(&["Paris", "Oslo", "Rome", "Oslo"]), &[]),
        ("color", dictionary, &[]),
        (
            "hot",
            Arc::new(BooleanArray::from(vec![true, false, true, false])),
            &[],
        ),
        ("n", ints(&[5, -6, 7, 0]), value),
    ]);
    let mut seeds = vec![
        einsql_parquet(dir, "plain.parquet", &plain),
        einsql_parquet(dir, "mixed.parquet", &mixed),
        arrow_parquet(&plain),
        arrow_parquet(&mixed),
        arrow_parquet(&batch(vec![
            ("i", ints(&[1, 2, 3, 4]), &k0),
            ("j", ints(&[0, 9, 9, 1]), &k1),
            ("w", floats(&[0.5, f64::NAN, -1e300, f64::INFINITY]), value),
        ])),
        arrow_parquet(&batch(vec![
            ("i", with_nulls, &[]),
            (
                "u",
                Arc::new(UInt64Array::from(vec![1, u64::MAX, 3, 4])),
                &[],
            ),
            (
                "f",
                Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0, 4.0])),
                &[],
            ),
        ])),
    ];
    for metadata in &absurd {
        seeds.push(arrow_parquet(&batch(vec![
            ("i", ints(&[1, 2, 3, 4]), metadata),
            ("j", ints(&[0, 1, 2, 3]), &k1),
            ("v", floats(&[1.0, 2.0, 3.0, 4.0]), value),
        ])));
    }
    seeds
}

fn mutate_parquet(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..1 + rng.below(2) {
        // A third of the mutations hit the footer (the Thrift metadata, the
        // Arrow schema and the trailing length), where decoding is most
        // delicate.
        let len = bytes.len();
        let near_end = rng.below(3) == 0;
        let at = match near_end {
            true => len.saturating_sub(1 + rng.below(len.min(400) + 1)),
            false => rng.below(len + 1),
        };
        match rng.below(7) {
            0 if at < len => bytes[at] ^= 1 << rng.below(8),
            1 if at < len => bytes[at] = rng.next() as u8,
            2 => bytes.truncate(at),
            3 => {
                let end = (at + 1 + rng.below(32)).min(len);
                bytes[at.min(end)..end].fill(0);
            }
            4 => {
                // Splice a piece of the file somewhere else.
                let from = rng.below(len + 1);
                let end = (from + rng.below(64)).min(len);
                let piece = bytes[from..end].to_vec();
                bytes.splice(at..at, piece);
            }
            5 if at < len => {
                let end = (at + 1 + rng.below(16)).min(len);
                bytes.drain(at..end);
            }
            _ => {
                let noise: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
                let end = (at + noise.len()).min(len);
                bytes.splice(at..end, noise);
            }
        }
    }
    bytes
}

fn read_parquet(path: &Path, options: &ReadOptions) -> einsql::Result<()> {
    parquet::read(path, options, &NoProgress).map(|_| ())
}

#[test]
fn fuzzed_parquet_files_never_panic_the_reader() {
    let dir = tempfile::tempdir().expect("temp dir");
    let seeds = parquet_seeds(&dir);
    let mut rng = Rng(0x9a4e_77c1_d00d_f00d);
    let explicit = ReadOptions {
        keys: names(&["i"]),
        ..ReadOptions::default()
    };
    let mut outcomes = Outcomes::default();
    for seed in &seeds {
        let path = file(&dir, "seed.parquet", seed);
        outcomes.count(read_parquet(&path, &ReadOptions::default()));
    }
    let cases = 3000;
    for case in 0..cases {
        let seed = rng.pick(&seeds);
        let bytes = match case % 20 {
            0 => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
            _ => mutate_parquet(&mut rng, seed),
        };
        let path = file(&dir, "fuzz.parquet", &bytes);
        let read = std::panic::catch_unwind(|| {
            [
                read_parquet(&path, &ReadOptions::default()),
                read_parquet(&path, &explicit),
            ]
        });
        match read {
            Ok(results) => results.into_iter().for_each(|r| outcomes.count(r)),
            Err(_) => panic!(
                "case {case} panicked on a {}-byte input: {bytes:02x?}",
                bytes.len()
            ),
        }
    }
    eprintln!(
        "parquet fuzz: {} seeds, {cases} inputs × 2 option sets, {} Ok and {} Err results",
        seeds.len(),
        outcomes.ok,
        outcomes.err
    );
    assert!(
        outcomes.ok > 150 && outcomes.err > 1000,
        "the mutations should produce both: {} Ok, {} Err",
        outcomes.ok,
        outcomes.err
    );
}

// ---------------------------------------------------------------------------
// Regressions: damaged files on which the parquet crate panics

/// Asserts that reading `bytes` as Parquet fails with an error that names
/// the file and says that it is damaged.
fn assert_damaged(bytes: &[u8], contains: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = file(&dir, "damaged.parquet", bytes);
    let error = parquet::read(&path, &ReadOptions::default(), &NoProgress)
        .map(|t| t.nnz())
        .expect_err("a damaged file");
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string())
            && message.contains("damaged")
            && message.contains(contains),
        "{message}"
    );
}

/// A plain file (no compression, nullable columns) of 200 rows.
fn two_hundred_rows() -> Vec<u8> {
    let rows: Vec<i64> = (0..200).collect();
    arrow_parquet(&batch(vec![
        ("i", Arc::new(Int64Array::from(rows.clone())), &[]),
        ("j", Arc::new(Int64Array::from(rows)), &[]),
    ]))
}

#[test]
fn a_column_chunk_with_a_negative_length_is_reported_as_damage() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bytes = two_hundred_rows();
    let path = file(&dir, "valid.parquet", &bytes);
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&std::fs::File::open(&path).expect("open"))
        .expect("metadata");
    // The file ends with the metadata, its 4-byte length and "PAR1".
    let length = bytes.len() - 8;
    let footer = u32::from_le_bytes([0, 1, 2, 3].map(|k| bytes[length + k])) as usize;
    let mut damaged = bytes[..length - footer].to_vec();
    let mut row_groups = metadata.row_groups().to_vec();
    let column = row_groups[0].column(1).clone();
    let broken = column
        .into_builder()
        .set_total_compressed_size(-109)
        .build()
        .expect("column metadata");
    let mut columns = row_groups[0].columns().to_vec();
    columns[1] = broken;
    row_groups[0] = row_groups[0]
        .clone()
        .into_builder()
        .set_column_metadata(columns)
        .build()
        .expect("row group metadata");
    let metadata = metadata.into_builder().set_row_groups(row_groups).build();
    ParquetMetaDataWriter::new(&mut damaged, &metadata)
        .finish()
        .expect("footer");
    assert_damaged(&damaged, "column 'j' of row group 1 has a negative offset");
}

/// The definition levels of a page of 200 non-NULL values: 3 bytes of RLE,
/// a run of 200 (varint 400) of level 1.
const TWO_HUNDRED_DEFINED: [u8; 7] = [3, 0, 0, 0, 0x90, 0x03, 0x01];

#[test]
fn definition_levels_longer_than_their_page_are_reported_as_damage() {
    let mut bytes = two_hundred_rows();
    let levels = bytes
        .windows(TWO_HUNDRED_DEFINED.len())
        .position(|w| w == TWO_HUNDRED_DEFINED)
        .expect("the writer encodes the definition levels as one RLE run");
    // A bit-packed run of 44 × 8 levels, in a block of 3 bytes: the crate's
    // decoder panics (arrow-buffer `BitChunks::new`) instead of failing.
    bytes[levels + 4] = 0x59;
    assert_damaged(&bytes, "");
}
