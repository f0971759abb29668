//! What a statement returns: rows as Arrow record batches, and a message
//! for statements that change the database; all at once ([`QueryResult`])
//! or as a stream ([`RowStream`]).

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::bound::RowStream;
use crate::error::Result;
use crate::exec::MemoryBudget;

/// The result of one statement: rows (possibly none) and, for statements
/// that change the database, a message saying what changed.
#[derive(Clone, Debug)]
pub struct QueryResult {
    /// The schema of the rows.
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
    /// What a statement without rows did, e.g. "Created table a (3 entries)".
    pub message: Option<String>,
}

impl QueryResult {
    /// A result with rows.
    pub fn rows(schema: SchemaRef, batches: Vec<RecordBatch>) -> QueryResult {
        QueryResult {
            schema,
            batches,
            message: None,
        }
    }

    /// A result without rows, with a message.
    pub fn message(message: impl Into<String>) -> QueryResult {
        QueryResult {
            schema: Arc::new(Schema::empty()),
            batches: Vec::new(),
            message: Some(message.into()),
        }
    }

    /// Rows of one non-null text column called `name`.
    pub fn text_column(name: &str, values: Vec<String>) -> Result<QueryResult> {
        let schema = Arc::new(Schema::new(vec![Field::new(name, DataType::Utf8, false)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(StringArray::from(values)) as ArrayRef],
        )?;
        Ok(QueryResult::rows(schema, vec![batch]))
    }

    /// Every batch of `stream`, taken, each charged to `memory`.
    pub fn collect(stream: RowStream, memory: &MemoryBudget) -> Result<QueryResult> {
        let schema = stream.schema();
        let message = stream.message().map(str::to_string);
        let mut batches = Vec::new();
        for batch in stream {
            let batch = batch?;
            memory.reserve(
                batch.get_array_memory_size() as u64,
                "for the batches of its result",
            )?;
            batches.push(batch);
        }
        Ok(QueryResult {
            schema,
            batches,
            message,
        })
    }

    /// The total number of rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

impl From<QueryResult> for RowStream {
    /// The result's batches, already made, as a stream.
    fn from(result: QueryResult) -> RowStream {
        RowStream::ready(result.schema, result.batches, result.message)
    }
}
