//! Parquet and CSV files ↔ tensors: round trips, column roles and types,
//! and every error the readers promise (with the file, line or column).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ::parquet::arrow::ArrowWriter;
use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, Float32Array,
    Float64Array, Int8Array, Int32Array, Int64Array, LargeStringArray, RecordBatch, StringArray,
    UInt16Array, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use einsql::Error;
use einsql::io::{ReadOptions, csv, parquet};
use einsql::progress::{NoProgress, ProgressSink};
use einsql::storage::from_arrow::{ColumnRoles, tensor_from_batches};
use einsql::storage::{
    ColumnRef, Coo, Dictionary, DimensionSpec, Tensor, ValueColumn, ValueData, ValueType,
};
use proptest::prelude::*;

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// Writes `batch` as a plain Parquet file (no einsql metadata).
fn write_raw_parquet(path: &Path, batch: &RecordBatch) {
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

/// The schema and batches of a Parquet file.
fn read_raw_parquet(path: &Path) -> (SchemaRef, Vec<RecordBatch>) {
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
    let schema = Arc::clone(builder.schema());
    let batches = builder.build().unwrap().map(|b| b.unwrap()).collect();
    (schema, batches)
}

fn options(keys: Option<&[&str]>, values: Option<&[&str]>) -> ReadOptions {
    let list = |names: &[&str]| names.iter().map(|s| s.to_string()).collect();
    ReadOptions {
        keys: keys.map(list),
        values: values.map(list),
        ..ReadOptions::default()
    }
}

fn read_parquet(path: &Path, options: &ReadOptions) -> einsql::Result<Tensor> {
    parquet::read(path, options, &NoProgress)
}

fn read_csv(path: &Path, options: &ReadOptions) -> einsql::Result<Tensor> {
    csv::read(path, options, &NoProgress)
}

fn text_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Asserts that two tensors are the same in every respect.
fn assert_same(a: &Tensor, b: &Tensor) {
    let describe = |t: &Tensor| {
        t.dims()
            .iter()
            .map(|d| {
                let strings = d.dictionary.as_ref().map(|x| x.strings().to_vec());
                (d.name.clone(), d.size, strings)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(describe(a), describe(b));
    assert_eq!(a.values(), b.values());
    assert_eq!(a.column_order(), b.column_order());
    assert_eq!(a.data(), b.data());
}

fn column_names(t: &Tensor) -> Vec<&str> {
    t.column_order().iter().map(|&c| t.column_name(c)).collect()
}

fn message(result: einsql::Result<Tensor>) -> String {
    match result {
        Ok(t) => panic!("expected an error, got a table with {} entries", t.nnz()),
        Err(e) => e.to_string(),
    }
}

fn ratings() -> RecordBatch {
    batch(vec![
        (
            "user",
            Arc::new(StringArray::from(vec!["bo", "al", "cy", "al"])),
        ),
        ("item", Arc::new(Int32Array::from(vec![3, 1, 2, 0]))),
        (
            "rating",
            Arc::new(Float64Array::from(vec![4.5, 3.0, 1.25, 5.0])),
        ),
        (
            "seen",
            Arc::new(BooleanArray::from(vec![true, false, true, true])),
        ),
        ("count", Arc::new(Int64Array::from(vec![7, -2, 0, 9]))),
    ])
}

#[test]
fn parquet_round_trip_keeps_columns_roles_types_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("ratings.parquet");
    write_raw_parquet(&input, &ratings());

    // Defaults: integers and strings are keys, so `count` needs naming.
    let loaded = read_parquet(&input, &options(None, Some(&["rating", "seen", "count"]))).unwrap();
    assert_eq!(
        column_names(&loaded),
        ["user", "item", "rating", "seen", "count"]
    );
    assert_eq!(loaded.dims().len(), 2);
    assert_eq!(
        loaded.dims()[0].dictionary.as_ref().unwrap().strings(),
        ["al", "bo", "cy"]
    );
    assert_eq!(loaded.dims()[0].size, 3);
    assert_eq!(loaded.dims()[1].size, 4);
    let types: Vec<ValueType> = loaded.values().iter().map(|v| v.ty).collect();
    assert_eq!(
        types,
        [ValueType::Float64, ValueType::Boolean, ValueType::Int64]
    );
    let rows = loaded.to_record_batch().unwrap();
    assert_eq!(rows.num_rows(), 4);
    let users: &StringArray = rows.column(0).as_any().downcast_ref().unwrap();
    assert_eq!(
        users.iter().flatten().collect::<Vec<_>>(),
        ["al", "al", "bo", "cy"]
    );
    let counts: &Int64Array = rows.column(4).as_any().downcast_ref().unwrap();
    assert_eq!(counts.values().as_ref(), [9, -2, 7, 0]);

    // table → parquet → table: no options needed, the metadata says it all.
    let first = dir.path().join("first.parquet");
    parquet::write(&loaded, &first).unwrap();
    let again = read_parquet(&first, &ReadOptions::default()).unwrap();
    assert_same(&loaded, &again);

    // parquet → table → parquet gives the same file content.
    let second = dir.path().join("second.parquet");
    parquet::write(&again, &second).unwrap();
    let (schema1, batches1) = read_raw_parquet(&first);
    let (schema2, batches2) = read_raw_parquet(&second);
    assert_eq!(schema1, schema2);
    assert_eq!(batches1, batches2);
    let types: Vec<&DataType> = schema1.fields().iter().map(|f| f.data_type()).collect();
    assert_eq!(
        types,
        [
            &DataType::Utf8,
            &DataType::Int64,
            &DataType::Float64,
            &DataType::Boolean,
            &DataType::Int64
        ]
    );
}

#[test]
fn parquet_round_trip_of_a_bag_keeps_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("edges.parquet");
    write_raw_parquet(
        &input,
        &batch(vec![
            ("src", Arc::new(Int64Array::from(vec![1, 0, 1, 1, 2]))),
            (
                "dst",
                Arc::new(StringArray::from(vec!["b", "a", "b", "b", "a"])),
            ),
        ]),
    );
    let bag = read_parquet(&input, &ReadOptions::default()).unwrap();
    assert!(bag.is_bag());
    assert_eq!(bag.nnz(), 3);
    assert_eq!(bag.multiplicities().unwrap(), [1, 3, 1]);
    assert_eq!(bag.to_record_batch().unwrap().num_rows(), 5);

    let output = dir.path().join("bag.parquet");
    parquet::write(&bag, &output).unwrap();
    assert_eq!(read_raw_parquet(&output).1[0].num_rows(), 5);
    assert_same(
        &bag,
        &read_parquet(&output, &ReadOptions::default()).unwrap(),
    );
}

#[test]
fn parquet_keeps_declared_sizes_and_stored_order() {
    let dir = tempfile::tempdir().unwrap();
    let tensor = Tensor::from_coo(Coo {
        dims: vec![
            DimensionSpec::new("i", Some(100)),
            DimensionSpec::new("j", Some(7)),
        ],
        coords: vec![vec![3, 1, 3], vec![0, 6, 2]],
        values: vec![("v".to_string(), ValueData::Int64(vec![5, 6, 7]))],
        column_order: Some(vec![
            ColumnRef::Value(0),
            ColumnRef::Key(1),
            ColumnRef::Key(0),
        ]),
    })
    .unwrap();
    let path = dir.path().join("sized.parquet");
    parquet::write(&tensor, &path).unwrap();
    let loaded = read_parquet(&path, &ReadOptions::default()).unwrap();
    assert_same(&tensor, &loaded);
    assert_eq!(column_names(&loaded), ["v", "j", "i"]);
    assert_eq!(loaded.dims()[0].name, "i");
    assert_eq!(loaded.dims()[0].size, 100);

    // Explicit roles win over the metadata (the stored order then follows
    // the columns, and `v` becomes a key).
    let keys = read_parquet(&path, &options(Some(&["v", "j", "i"]), None)).unwrap();
    assert!(keys.is_bag());
    assert_eq!(keys.dims()[0].name, "v");
    assert_eq!(keys.dims()[2].size, 100);
}

#[test]
fn parquet_size_metadata_smaller_than_the_data_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let metadata = HashMap::from([
        ("einsql:role".to_string(), "key".to_string()),
        ("einsql:size".to_string(), "2".to_string()),
    ]);
    let field = Field::new("i", DataType::Int64, false).with_metadata(metadata);
    let schema = Arc::new(Schema::new(vec![field]));
    let data = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![0, 5]))]).unwrap();
    let path = dir.path().join("small.parquet");
    write_raw_parquet(&path, &data);
    let error = message(read_parquet(&path, &ReadOptions::default()));
    assert!(
        error.contains("small.parquet") && error.contains("outside its size 2"),
        "{error}"
    );

    let bad = HashMap::from([("einsql:size".to_string(), "many".to_string())]);
    let field = Field::new("i", DataType::Int64, false).with_metadata(bad);
    let data = RecordBatch::try_new(
        Arc::new(Schema::new(vec![field])),
        vec![Arc::new(Int64Array::from(vec![0]))],
    )
    .unwrap();
    write_raw_parquet(&path, &data);
    let error = message(read_parquet(&path, &ReadOptions::default()));
    assert!(error.contains("'many'") && error.contains("'i'"), "{error}");
}

#[test]
fn parquet_reads_every_supported_arrow_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.parquet");
    let tags: DictionaryArray<Int32Type> = vec!["x", "y", "x"].into_iter().collect();
    write_raw_parquet(
        &path,
        &batch(vec![
            ("a", Arc::new(Int8Array::from(vec![1, 2, 3]))),
            ("b", Arc::new(UInt16Array::from(vec![60000, 0, 1]))),
            ("c", Arc::new(UInt64Array::from(vec![5, 6, 7]))),
            ("d", Arc::new(LargeStringArray::from(vec!["p", "q", "p"]))),
            ("e", Arc::new(tags)),
            ("f", Arc::new(Float32Array::from(vec![0.5, 1.5, 2.5]))),
            (
                "g",
                arrow::compute::cast(
                    &Float32Array::from(vec![1.0, 2.0, 0.25]),
                    &DataType::Float16,
                )
                .unwrap(),
            ),
            ("h", Arc::new(Int32Array::from(vec![-1, -2, -3]))),
        ]),
    );
    let tensor = read_parquet(&path, &options(None, Some(&["f", "g", "h"]))).unwrap();
    let dims: Vec<(&str, u64, bool)> = tensor
        .dims()
        .iter()
        .map(|d| (d.name.as_str(), d.size, d.dictionary.is_some()))
        .collect();
    assert_eq!(
        dims,
        [
            ("a", 4, false),
            ("b", 60001, false),
            ("c", 8, false),
            ("d", 2, true),
            ("e", 2, true)
        ]
    );
    assert_eq!(
        tensor.values(),
        [
            ValueColumn {
                name: "f".into(),
                ty: ValueType::Float64
            },
            ValueColumn {
                name: "g".into(),
                ty: ValueType::Float64
            },
            ValueColumn {
                name: "h".into(),
                ty: ValueType::Int64
            },
        ]
    );
    let g: &Float64Array = tensor.data().column(6).as_any().downcast_ref().unwrap();
    assert_eq!(g.values().as_ref(), [1.0, 2.0, 0.25]);
}

#[test]
fn parquet_type_errors_name_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.parquet");
    let cases: Vec<(RecordBatch, ReadOptions, &[&str])> = vec![
        (
            batch(vec![(
                "big",
                Arc::new(UInt64Array::from(vec![1, u64::MAX])),
            )]),
            ReadOptions::default(),
            &["row 2", "'big'", "18446744073709551615"],
        ),
        (
            batch(vec![("k", Arc::new(Int64Array::from(vec![Some(1), None])))]),
            ReadOptions::default(),
            &["row 2", "'k'", "NULL"],
        ),
        (
            batch(vec![
                ("k", Arc::new(Int64Array::from(vec![1, 2]))),
                ("v", Arc::new(Float64Array::from(vec![Some(1.0), None]))),
            ]),
            ReadOptions::default(),
            &["row 2", "'v'", "NULL"],
        ),
        (
            batch(vec![("name", Arc::new(StringArray::from(vec!["a", "b"])))]),
            options(None, Some(&["name"])),
            &["'name'", "strings", "value"],
        ),
        (
            batch(vec![("x", Arc::new(Float64Array::from(vec![1.5, 2.0])))]),
            options(Some(&["x"]), None),
            &["'x'", "Float64", "cannot be a key"],
        ),
        (
            batch(vec![(
                "price",
                Arc::new(
                    Decimal128Array::from(vec![100, 200])
                        .with_precision_and_scale(10, 2)
                        .unwrap(),
                ),
            )]),
            ReadOptions::default(),
            &["'price'", "Decimal128(10, 2)", "cannot store"],
        ),
        (
            batch(vec![("day", Arc::new(Date32Array::from(vec![1, 2])))]),
            ReadOptions::default(),
            &["'day'", "Date32", "cannot store"],
        ),
        (
            batch(vec![("k", Arc::new(Int64Array::from(vec![3, -1])))]),
            ReadOptions::default(),
            &["bad.parquet", "'k'", "negative coordinate -1"],
        ),
    ];
    for (data, options, expected) in cases {
        write_raw_parquet(&path, &data);
        let error = message(read_parquet(&path, &options));
        for part in expected {
            assert!(error.contains(part), "'{error}' lacks '{part}'");
        }
    }
}

#[test]
fn parquet_rejects_bad_options_and_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ratings.parquet");
    write_raw_parquet(&path, &ratings());

    let error = read_parquet(&path, &options(Some(&["usr"]), None)).unwrap_err();
    assert!(
        matches!(&error, Error::UnknownName { kind: "Column", suggestion: Some(s), .. } if s == "user"),
        "{error}"
    );
    let error = message(read_parquet(
        &path,
        &options(Some(&["user"]), Some(&["USER"])),
    ));
    assert!(error.contains("both as a key and as a value"), "{error}");
    for bad in [
        ReadOptions {
            zero_based: true,
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
    ] {
        let error = message(read_parquet(&path, &bad));
        assert!(
            error.contains("does not apply to Parquet files (it applies to: keys, values)"),
            "{error}"
        );
    }
    let error = message(read_parquet(
        &path,
        &ReadOptions {
            zero_based: true,
            ..ReadOptions::default()
        },
    ));
    assert_eq!(
        error,
        format!(
            "Invalid input: '{}': the option 'zero_based' does not apply to Parquet files (it applies to: keys, values)",
            path.display()
        )
    );

    let text = text_file(dir.path(), "text.parquet", "i,j\n1,2\n");
    let error = message(read_parquet(&text, &ReadOptions::default()));
    assert!(
        error.contains("text.parquet") && error.contains("not a readable Parquet file"),
        "{error}"
    );
    let missing = dir.path().join("missing.parquet");
    assert!(matches!(
        read_parquet(&missing, &ReadOptions::default()),
        Err(Error::Io { .. })
    ));
}

#[test]
fn parquet_reads_only_the_listed_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.parquet");
    write_raw_parquet(
        &path,
        &batch(vec![
            ("note", Arc::new(Decimal128Array::from(vec![1, 2]))),
            ("i", Arc::new(Int64Array::from(vec![0, 1]))),
            ("w", Arc::new(Float64Array::from(vec![0.5, 0.25]))),
        ]),
    );
    let tensor = read_parquet(&path, &options(Some(&["i"]), Some(&["w"]))).unwrap();
    assert_eq!(column_names(&tensor), ["i", "w"]);
    assert_eq!(tensor.nnz(), 2);
}

/// Counts what a reader reports.
#[derive(Default)]
struct Recorder {
    label: Mutex<String>,
    total: AtomicU64,
    advanced: AtomicU64,
    finished: AtomicU64,
}

impl ProgressSink for Recorder {
    fn start(&self, label: &str, total_bytes: u64) {
        *self.label.lock().unwrap() = label.to_string();
        self.total.store(total_bytes, Ordering::SeqCst);
    }
    fn advance(&self, bytes: u64) {
        self.advanced.fetch_add(bytes, Ordering::SeqCst);
    }
    fn finish(&self) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn readers_report_progress_in_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.parquet");
    let n = 200_000;
    write_raw_parquet(
        &path,
        &batch(vec![
            ("i", Arc::new(Int64Array::from_iter_values(0..n))),
            (
                "v",
                Arc::new(Float64Array::from_iter_values((0..n).map(|x| x as f64))),
            ),
        ]),
    );
    let recorder = Recorder::default();
    let tensor = parquet::read(&path, &ReadOptions::default(), &recorder).unwrap();
    assert_eq!(tensor.nnz(), n as usize);
    let size = std::fs::metadata(&path).unwrap().len();
    assert_eq!(*recorder.label.lock().unwrap(), "big.parquet");
    assert_eq!(recorder.total.load(Ordering::SeqCst), size);
    assert_eq!(recorder.advanced.load(Ordering::SeqCst), size);
    assert_eq!(recorder.finished.load(Ordering::SeqCst), 1);

    let csv_path = text_file(dir.path(), "small.csv", "i,v\n0,0.5\n1,1.5\n");
    let recorder = Recorder::default();
    csv::read(&csv_path, &ReadOptions::default(), &recorder).unwrap();
    let size = std::fs::metadata(&csv_path).unwrap().len();
    assert_eq!(*recorder.label.lock().unwrap(), "small.csv");
    assert_eq!(recorder.total.load(Ordering::SeqCst), 2 * size);
    assert_eq!(recorder.advanced.load(Ordering::SeqCst), 2 * size);
    assert_eq!(recorder.finished.load(Ordering::SeqCst), 1);
}

#[test]
fn batches_become_tensors_with_roles_from_the_caller() {
    let first = batch(vec![
        ("city", Arc::new(StringArray::from(vec!["rome", "oslo"]))),
        ("year", Arc::new(Int64Array::from(vec![2, 0]))),
        ("temp", Arc::new(Float64Array::from(vec![20.5, -3.0]))),
    ]);
    let second = batch(vec![
        ("city", Arc::new(StringArray::from(vec!["lima", "rome"]))),
        ("year", Arc::new(Int64Array::from(vec![1, 2]))),
        ("temp", Arc::new(Float64Array::from(vec![18.0, 1.5]))),
    ]);
    let schema = first.schema();
    let batches = [first, second];

    let tensor = tensor_from_batches(&schema, &batches, &ColumnRoles::default()).unwrap();
    assert_eq!(
        tensor.dims()[0].dictionary.as_ref().unwrap().strings(),
        ["lima", "oslo", "rome"]
    );
    assert_eq!(tensor.nnz(), 3);
    let temps: &Float64Array = tensor.data().column(2).as_any().downcast_ref().unwrap();
    assert_eq!(temps.values().as_ref(), [18.0, -3.0, 22.0]);

    let keys_only = ColumnRoles {
        keys: Some(vec!["city".into()]),
        values: None,
    };
    let tensor = tensor_from_batches(&schema, &batches, &keys_only).unwrap();
    assert_eq!(
        tensor.values().iter().map(|v| v.ty).collect::<Vec<_>>(),
        [ValueType::Int64, ValueType::Float64]
    );

    let values_only = ColumnRoles {
        keys: None,
        values: Some(vec!["Temp".into()]),
    };
    let tensor = tensor_from_batches(&schema, &batches, &values_only).unwrap();
    assert_eq!(tensor.dims().len(), 2);
    assert_eq!(column_names(&tensor), ["city", "year", "temp"]);

    let both = ColumnRoles {
        keys: Some(vec!["year".into()]),
        values: Some(vec!["temp".into()]),
    };
    let tensor = tensor_from_batches(&schema, &batches, &both).unwrap();
    assert_eq!(column_names(&tensor), ["year", "temp"]);
    assert_eq!(tensor.nnz(), 3);

    let error = tensor_from_batches(
        &schema,
        &batches,
        &ColumnRoles {
            keys: Some(vec!["temp".into()]),
            values: None,
        },
    )
    .unwrap_err();
    assert!(matches!(error, Error::Type(_)), "{error}");
    let nulls = batch(vec![("k", Arc::new(Int64Array::from(vec![Some(1), None])))]);
    let error = tensor_from_batches(
        &nulls.schema(),
        &[nulls.clone(), nulls.clone()],
        &ColumnRoles::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("row 2") && error.contains("'k'"), "{error}");
    let empty = Arc::new(Schema::empty());
    let error = tensor_from_batches(&empty, &[], &ColumnRoles::default()).unwrap_err();
    assert!(error.to_string().contains("no columns"), "{error}");
}

#[test]
fn csv_reads_keys_values_and_strings() {
    let dir = tempfile::tempdir().unwrap();
    let path = text_file(
        dir.path(),
        "sales.csv",
        "shop,day,amount,paid\nnorth,2024-01-02,10.5,true\nsouth,2024-01-01,3,false\nnorth,2024-01-02,1.5,true\n",
    );
    let tensor = read_csv(&path, &ReadOptions::default()).unwrap();
    assert_eq!(column_names(&tensor), ["shop", "day", "amount", "paid"]);
    assert_eq!(
        tensor.dims()[1].dictionary.as_ref().unwrap().strings(),
        ["2024-01-01", "2024-01-02"]
    );
    assert_eq!(tensor.nnz(), 2);
    let amounts: &Float64Array = tensor.data().column(2).as_any().downcast_ref().unwrap();
    assert_eq!(amounts.values().as_ref(), [12.0, 3.0]);

    let semicolons = text_file(dir.path(), "plain.txt", "0;1;2.5\n1;0;4\n");
    let options = ReadOptions {
        header: Some(false),
        delimiter: Some(b';'),
        ..ReadOptions::default()
    };
    let tensor = read_csv(&semicolons, &options).unwrap();
    assert_eq!(column_names(&tensor), ["column_1", "column_2", "column_3"]);
    assert_eq!(tensor.dims().len(), 2);
    assert_eq!(tensor.values()[0].ty, ValueType::Float64);

    let header_only = text_file(dir.path(), "empty.csv", "i,j\n");
    let tensor = read_csv(&header_only, &ReadOptions::default()).unwrap();
    assert_eq!(column_names(&tensor), ["i", "j"]);
    assert_eq!(tensor.nnz(), 0);
}

#[test]
fn csv_write_then_read_gives_the_table_back() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("ratings.parquet");
    write_raw_parquet(&input, &ratings());
    let tensor = read_parquet(&input, &options(None, Some(&["rating", "seen", "count"]))).unwrap();
    let path = dir.path().join("ratings.csv");
    csv::write(&tensor, &path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("user,item,rating,seen,count\nal,0,5.0,true,9\n"),
        "{text}"
    );
    let back = read_csv(
        &path,
        &ReadOptions {
            values: Some(vec!["rating".into(), "seen".into(), "count".into()]),
            ..ReadOptions::default()
        },
    )
    .unwrap();
    assert_same(&tensor, &back);

    let (uniform, _) = Dictionary::encode(["a"]);
    let bag = Tensor::from_coo(Coo {
        dims: vec![DimensionSpec {
            name: "s".into(),
            size: None,
            dictionary: Some(Arc::new(uniform)),
        }],
        coords: vec![vec![0, 0]],
        values: vec![],
        column_order: None,
    })
    .unwrap();
    csv::write(&bag, &path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "s\na\na\n");
    assert_same(&bag, &read_csv(&path, &ReadOptions::default()).unwrap());
}

#[test]
fn csv_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, ReadOptions, Vec<&str>)> = vec![
        ("", ReadOptions::default(), vec![":1:", "empty"]),
        (
            "i,j\n1,2\n3\n4,5\n",
            ReadOptions::default(),
            vec![":3:", "line 3"],
        ),
        (
            "i,j\n1,2\n3,4,5\n",
            ReadOptions::default(),
            vec![":3:", "found 3"],
        ),
        (
            "i,v\n1,2.5\n2,abc\n",
            options(None, Some(&["v"])),
            vec![":3:", "'abc'"],
        ),
        (
            "i,v\n1,2.5\n2,\n",
            ReadOptions::default(),
            vec![":3:", "'v'", "NULL"],
        ),
        (
            "i,v\n1,2.5\n-4,1\n",
            ReadOptions::default(),
            vec!["bad.csv", "negative coordinate -4"],
        ),
        (
            "i,v\n1,2.5\n",
            options(Some(&["x"]), None),
            vec!["Column 'x' does not exist"],
        ),
        (
            "i\n1\n",
            ReadOptions {
                zero_based: true,
                ..ReadOptions::default()
            },
            vec![
                "bad.csv': the option 'zero_based' does not apply to CSV files (it applies to: \
                 keys, values, header, delimiter)",
            ],
        ),
    ];
    for (text, options, expected) in cases {
        let path = text_file(dir.path(), "bad.csv", text);
        let error = message(read_csv(&path, &options));
        for part in expected {
            assert!(
                error.contains(part),
                "'{error}' lacks '{part}' (input {text:?})"
            );
        }
    }
    let missing = dir.path().join("missing.csv");
    assert!(matches!(
        read_csv(&missing, &ReadOptions::default()),
        Err(Error::Io { .. })
    ));
}

#[test]
fn writers_reject_tables_without_columns() {
    let dir = tempfile::tempdir().unwrap();
    let nothing = Tensor::from_coo(Coo {
        dims: vec![],
        coords: vec![],
        values: vec![],
        column_order: None,
    })
    .unwrap();
    assert!(parquet::write(&nothing, &dir.path().join("x.parquet")).is_err());
    assert!(csv::write(&nothing, &dir.path().join("x.csv")).is_err());
}

/// A random table: dimensions (string or integer, with slack in the
/// declared size), value columns of every type, and a shuffled column order.
#[derive(Clone, Debug)]
struct TableSpec {
    string_dims: Vec<bool>,
    slack: Vec<u64>,
    value_types: Vec<u8>,
    rows: Vec<(Vec<i64>, Vec<i64>)>,
    order: Vec<ColumnRef>,
}

fn table_spec() -> impl Strategy<Value = TableSpec> {
    (1usize..=3, 0usize..=3, 0usize..30).prop_flat_map(|(dims, values, rows)| {
        let order: Vec<ColumnRef> = (0..dims)
            .map(ColumnRef::Key)
            .chain((0..values).map(ColumnRef::Value))
            .collect();
        (
            prop::collection::vec(any::<bool>(), dims),
            prop::collection::vec(0u64..3, dims),
            prop::collection::vec(0u8..3, values),
            prop::collection::vec(
                (
                    prop::collection::vec(0i64..5, dims),
                    prop::collection::vec(-1000i64..1000, values),
                ),
                rows,
            ),
            Just(order).prop_shuffle(),
        )
            .prop_map(|(string_dims, slack, value_types, rows, order)| TableSpec {
                string_dims,
                slack,
                value_types,
                rows,
                order,
            })
    })
}

fn build(spec: &TableSpec) -> Tensor {
    let mut dims = Vec::new();
    let mut coords = Vec::new();
    for (d, (&strings, &slack)) in spec.string_dims.iter().zip(&spec.slack).enumerate() {
        let raw: Vec<i64> = spec.rows.iter().map(|(c, _)| c[d]).collect();
        let name = format!("k{d}");
        if strings {
            let text: Vec<String> = raw.iter().map(|c| format!("s{c}")).collect();
            let (dictionary, codes) = Dictionary::encode(text.iter().map(String::as_str));
            dims.push(DimensionSpec {
                name,
                size: None,
                dictionary: Some(Arc::new(dictionary)),
            });
            coords.push(codes);
        } else {
            let size = raw.iter().max().map_or(0, |&m| m as u64 + 1) + slack;
            dims.push(DimensionSpec::new(name, Some(size)));
            coords.push(raw);
        }
    }
    let values = spec
        .value_types
        .iter()
        .enumerate()
        .map(|(v, &ty)| {
            let raw = spec.rows.iter().map(|(_, x)| x[v]);
            let data = match ty {
                0 => ValueData::Boolean(raw.map(|x| x % 2 == 0).collect()),
                1 => ValueData::Int64(raw.collect()),
                _ => ValueData::Float64(raw.map(|x| x as f64 / 8.0).collect()),
            };
            (format!("v{v}"), data)
        })
        .collect();
    Tensor::from_coo(Coo {
        dims,
        coords,
        values,
        column_order: Some(spec.order.clone()),
    })
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_tables_survive_parquet_round_trips(spec in table_spec()) {
        let dir = tempfile::tempdir().unwrap();
        let tensor = build(&spec);
        let path = dir.path().join("t.parquet");
        parquet::write(&tensor, &path).unwrap();
        let back = read_parquet(&path, &ReadOptions::default()).unwrap();
        assert_same(&tensor, &back);
    }
}
