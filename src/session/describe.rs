//! `SHOW TABLES` and `DESCRIBE table`: what the catalog holds.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};

use super::count;
use super::result::QueryResult;
use crate::catalog::Catalog;
use crate::error::Result;
use crate::storage::ColumnRef;

/// `SHOW TABLES`: one row per table, with its name.
pub fn show_tables(catalog: &Catalog) -> Result<QueryResult> {
    let names: Vec<String> = catalog.names().map(str::to_string).collect();
    QueryResult::text_column("name", names)
}

/// `DESCRIBE t`: one row per column, in declaration order, with its SQL
/// type, its role (dimension or value) and, for dimensions, the size; the
/// message gives the number of stored entries, the declared indexes and
/// the fibertree indexes built.
pub fn describe(catalog: &Catalog, name: &str) -> Result<QueryResult> {
    let tensor = catalog.get(name)?;
    let mut names = Vec::new();
    let mut types = Vec::new();
    let mut roles = Vec::new();
    let mut sizes = Vec::new();
    for &column in tensor.column_order() {
        names.push(tensor.column_name(column).to_string());
        types.push(tensor.column_sql_type(column));
        match column {
            ColumnRef::Key(d) => {
                roles.push("dimension");
                sizes.push(Some(tensor.dims()[d].size));
            }
            ColumnRef::Value(_) => {
                roles.push("value");
                sizes.push(None);
            }
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("column_name", DataType::Utf8, false),
        Field::new("column_type", DataType::Utf8, false),
        Field::new("role", DataType::Utf8, false),
        Field::new("size", DataType::UInt64, true),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from(names)) as ArrayRef,
            Arc::new(StringArray::from(types)),
            Arc::new(StringArray::from(roles)),
            Arc::new(UInt64Array::from(sizes)),
        ],
    )?;
    let indexes: Vec<String> = tensor
        .built_indexes()
        .iter()
        .map(|spec| spec.named(tensor.dims()))
        .collect();
    let declared: String = tensor
        .declared_indexes()
        .iter()
        .map(|index| format!("; index {}", index.named(tensor.dims())))
        .collect();
    let mut result = QueryResult::rows(schema, vec![batch]);
    result.message = Some(format!(
        "{name}: {}{}{declared}; fibertree indexes built: {}",
        count(tensor.nnz(), "stored entry", "stored entries"),
        if tensor.is_bag() {
            " (a bag: each entry counts its duplicate rows)"
        } else {
            ""
        },
        if indexes.is_empty() {
            "none".to_string()
        } else {
            indexes.join(", ")
        }
    ));
    Ok(result)
}

#[cfg(test)]
mod tests {
    use crate::Database;

    #[test]
    fn describe_counts_entries_in_words() {
        let db = Database::open_in_memory();
        db.execute("CREATE TABLE t (i INT, v INT, PRIMARY KEY (i)); INSERT INTO t VALUES (0, 1);")
            .unwrap();
        let result = db.execute("DESCRIBE t").unwrap();
        assert_eq!(
            result.message.as_deref(),
            Some("t: 1 stored entry; fibertree indexes built: none")
        );
        db.execute("INSERT INTO t VALUES (1, 1)").unwrap();
        let result = db.execute("DESCRIBE t").unwrap();
        assert_eq!(
            result.message.as_deref(),
            Some("t: 2 stored entries; fibertree indexes built: none")
        );
    }
}
