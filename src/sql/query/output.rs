//! Runs a query's program and assembles its SQL rows: one row per entry of
//! the rows query (repeated by multiplicity for a join listing), each
//! column read from an aggregate's result or evaluated on the row, then
//! `HAVING`, `DISTINCT`, `ORDER BY`, `OFFSET` and `LIMIT`. The result goes
//! out as Arrow batches, or as a tensor for `CREATE TABLE AS` and `FROM`
//! sub-queries (string columns and plain key columns become dimensions,
//! the others value columns).
//!
//! What the assembly holds (the values it reads, the rows it sorts or
//! makes distinct, the sort's buffer, a result tensor's columns) is
//! charged to the statement's [`MemoryBudget`] at its allocation size.
//! Under `ORDER BY` and `LIMIT` only the first `OFFSET + LIMIT` rows in
//! order are kept ([`TopRows`]).

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int64Array, StringArray,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use hashbrown::{HashMap, HashSet};
use sqlparser::ast::{Query, SetExpr};

use super::expr::SqlType;
use super::plan::{self, Item, OrderKey, OrderSource, Plan, Rows};
use super::{Ctes, Source, simple_source};
use crate::bound::{Assemble, BATCH_ROWS, Results, RowStream, results_bytes};
use crate::emit::{self, Dialect};
use crate::error::{Error, Result};
use crate::exec::{FirstRows, MemoryBudget};
use crate::ir::column_values;
use crate::ir::{Annotation, Expr, IndexTerm, Input, Program, Value};
use crate::optimizer::OptimizerOptions;
use crate::sql::Context;
use crate::storage::{ColumnRef, Coo, DimensionSpec, HUGEINT_ARROW, Tensor, ValueData, ValueType};

/// One value of a result row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// SQL NULL (an aggregate other than `COUNT` over no rows).
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A `HUGEINT`.
    Huge(i128),
    /// A float.
    Float(f64),
    /// A string key.
    Str(String),
}

/// A result column's name and type.
pub struct ResultColumn {
    /// The SQL name.
    pub name: String,
    /// The type.
    pub ty: SqlType,
    /// For a plain key column: its dimension size, kept when the result is
    /// stored.
    pub key_size: Option<u64>,
}

/// A query's result.
pub struct ResultTable {
    /// The columns.
    pub columns: Vec<ResultColumn>,
    /// The rows, in order.
    pub rows: Vec<Vec<Cell>>,
}

/// Evaluates `query` with the `WITH` tables `ctes` in scope; its results
/// and rows are charged to `memory`.
pub fn run(
    context: Context<'_>,
    query: &Query,
    ctes: &Ctes,
    memory: &MemoryBudget,
) -> Result<ResultTable> {
    let plan = bind(context, query, ctes)?;
    let results = context.evaluate(&plan.program)?;
    memory.reserve(results_bytes(&results), "for its results")?;
    assemble(&plan, &results, memory)
}

/// The program of `query` with the `WITH` tables `ctes` in scope, and how
/// its rows are assembled. `WITH` and `FROM` sub-queries are evaluated.
pub fn bind(context: Context<'_>, query: &Query, ctes: &Ctes) -> Result<Plan> {
    let ctes = with_tables(context, query, ctes)?;
    if let Some(inner) = parenthesized(query) {
        return bind(context, inner, &ctes);
    }
    plan::plan(context, query, &ctes, &|q, c| table_of(context, q, c))
}

impl Assemble for Plan {
    fn stream(&self, results: &Results, memory: &MemoryBudget) -> Result<RowStream> {
        stream(self, results, memory)
    }

    fn tensor(&self, results: &Results, memory: &MemoryBudget) -> Result<Tensor> {
        assemble(self, results, memory)?.into_tensor(memory)
    }

    /// A join listing under `LIMIT`, without `DISTINCT` or `ORDER BY`,
    /// needs the first `OFFSET + LIMIT` rows of `#rows` in the order of its
    /// indices (the row variables), the order [`assemble`] lists rows in.
    fn first_rows(&self) -> Option<FirstRows> {
        let limit = self.limit?;
        match &self.rows {
            Rows::Entries {
                query,
                repeat: true,
                ..
            } if !self.distinct && self.order.is_empty() && self.having.is_none() => {
                Some(FirstRows {
                    query: query.clone(),
                    rows: u64::try_from(self.offset.saturating_add(limit)).unwrap_or(u64::MAX),
                })
            }
            _ => None,
        }
    }

    fn describe(&self) -> Vec<String> {
        Plan::describe(self)
    }

    fn sql(
        &self,
        program: &Program,
        options: &OptimizerOptions,
        dialect: Dialect,
    ) -> Result<String> {
        emit::emit_select(program, &self.assembly()?, options, dialect)
    }
}

/// `ctes` and the tables of `query`'s `WITH` clause, evaluated.
fn with_tables(context: Context<'_>, query: &Query, ctes: &Ctes) -> Result<Ctes> {
    let mut ctes = ctes.clone();
    if let Some(with) = &query.with {
        if with.recursive {
            return Err(Error::NotSupported("WITH RECURSIVE".to_string()));
        }
        for cte in &with.cte_tables {
            if !cte.alias.columns.is_empty() {
                return Err(Error::NotSupported(format!(
                    "column names in WITH ({})",
                    cte.alias
                )));
            }
            let tensor = table_of(context, &cte.query, &ctes)?;
            ctes = ctes.with(&cte.alias.name.value, tensor);
        }
    }
    Ok(ctes)
}

/// The inner query of `(query)` without clauses of its own.
fn parenthesized(query: &Query) -> Option<&Query> {
    match query.body.as_ref() {
        SetExpr::Query(inner) if query.order_by.is_none() && query.limit_clause.is_none() => {
            Some(inner)
        }
        _ => None,
    }
}

/// The table a sub-query or `WITH` query denotes.
fn table_of(context: Context<'_>, query: &Query, ctes: &Ctes) -> Result<Arc<Tensor>> {
    if let Some(list) = super::values_list(query) {
        return Ok(Arc::new(super::values::table(list)?));
    }
    match simple_source(query) {
        Some(Source::Table(name)) => ctes.table(context, &name),
        Some(Source::File { function, args }) => Ok(Arc::new(crate::sql::table_function::load(
            context, function, args,
        )?)),
        None => {
            let memory = context.budget();
            Ok(Arc::new(
                run(context, query, ctes, &memory)?.into_tensor(&memory)?,
            ))
        }
    }
}

/// The entries of one annotation of a tensor, found by their coordinates:
/// a tensor's entries are sorted by coordinates (in dimension order), so
/// a binary search finds a row's entry without building a table first.
struct Stored {
    tensor: Arc<Tensor>,
    values: Vec<Value>,
    /// The value of every other coordinate.
    fill: Value,
}

impl Stored {
    /// The entries of `annotation` of `tensor`, with the fill value; the
    /// values read are charged to `memory`.
    fn new(tensor: &Arc<Tensor>, annotation: Annotation, memory: &MemoryBudget) -> Result<Stored> {
        memory.reserve(
            (tensor.nnz() * size_of::<Value>()) as u64,
            "for the values its rows read",
        )?;
        let values: Vec<Value> = match annotation {
            Annotation::Multiplicity => match tensor.multiplicities() {
                Some(m) => m.iter().map(|&c| Value::Int(c)).collect(),
                None => vec![Value::Int(1); tensor.nnz()],
            },
            Annotation::Column(c) => {
                let column = tensor.annotation_columns().get(c).ok_or_else(|| {
                    Error::Invalid("a result reads a value column its tensor lacks".to_string())
                })?;
                column_values(column.as_ref())?
            }
        };
        let fill = match annotation {
            Annotation::Multiplicity => Value::Int(0),
            Annotation::Column(c) => {
                Value::zero(tensor.values().get(c).map_or(ValueType::Int64, |v| v.ty))
            }
        };
        Ok(Stored {
            tensor: Arc::clone(tensor),
            values,
            fill,
        })
    }

    /// The value at `key` (one coordinate per dimension).
    fn get(&self, key: &[i64]) -> Value {
        let tensor = self.tensor.as_ref();
        let compare = |n: usize| {
            key.iter()
                .enumerate()
                .map(|(d, k)| tensor.coords(d).get(n).cmp(&Some(k)))
                .find(|order| order.is_ne())
                .unwrap_or(Ordering::Equal)
        };
        let (mut lo, mut hi) = (0, self.values.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match compare(mid) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return self.values[mid],
            }
        }
        self.fill
    }
}

/// Reads a result tensor's values by the row's coordinates.
struct Lookup {
    /// The positions of the tensor's dimensions among the row's variables.
    positions: Vec<usize>,
    stored: Stored,
}

impl Lookup {
    fn new(
        tensor: &Arc<Tensor>,
        indices: &[String],
        vars: &[String],
        memory: &MemoryBudget,
    ) -> Result<Lookup> {
        Ok(Lookup {
            positions: positions(indices, vars)?,
            stored: Stored::new(tensor, Annotation::Column(0), memory)?,
        })
    }

    fn get(&self, row: &[i64]) -> Value {
        let key: Vec<i64> = self.positions.iter().map(|&p| row[p]).collect();
        self.stored.get(&key)
    }
}

/// The position of each of `indices` among the row variables `vars`.
fn positions(indices: &[String], vars: &[String]) -> Result<Vec<usize>> {
    indices
        .iter()
        .map(|i| {
            vars.iter()
                .position(|v| v == i)
                .ok_or_else(|| Error::Invalid(format!("result index '{i}' is not a row variable")))
        })
        .collect()
}

/// Evaluates pointwise items on rows, reading stored tables as needed.
struct RowEvaluator {
    vars: Vec<String>,
    inputs: HashMap<(usize, Annotation), Stored>,
}

impl RowEvaluator {
    fn prepare(&mut self, expr: &Expr, memory: &MemoryBudget) -> Result<()> {
        for input in expr.inputs() {
            if let hashbrown::hash_map::Entry::Vacant(slot) = self.inputs.entry(input_key(input)) {
                slot.insert(Stored::new(&input.tensor.tensor, input.annotation, memory)?);
            }
        }
        Ok(())
    }

    fn eval(&self, expr: &Expr, row: &[i64]) -> Result<Value> {
        match expr {
            Expr::Literal(v) => Ok(*v),
            Expr::Index(var) => self
                .vars
                .iter()
                .position(|v| v == var)
                .map(|p| Value::Int(row[p]))
                .ok_or_else(|| Error::Invalid(format!("'{var}' is not a row variable"))),
            Expr::Map { op, args } => {
                let values = args
                    .iter()
                    .map(|a| self.eval(a, row))
                    .collect::<Result<Vec<_>>>()?;
                op.apply(&values)
            }
            Expr::Input(input) => {
                let stored = self
                    .inputs
                    .get(&input_key(input))
                    .ok_or_else(|| Error::Invalid("an input was not prepared".to_string()))?;
                let key = input
                    .indices
                    .iter()
                    .map(|term| match term {
                        IndexTerm::Const(c) => Ok(*c),
                        IndexTerm::Var(v) => self
                            .vars
                            .iter()
                            .position(|w| w == v)
                            .map(|p| row[p])
                            .ok_or_else(|| Error::Invalid(format!("'{v}' is not a row variable"))),
                    })
                    .collect::<Result<Vec<i64>>>()?;
                Ok(stored.get(&key))
            }
            Expr::Agg { .. } | Expr::Alias { .. } => Err(Error::Invalid(format!(
                "{expr} cannot be evaluated per row"
            ))),
        }
    }
}

fn input_key(input: &Input) -> (usize, Annotation) {
    (Arc::as_ptr(&input.tensor.tensor) as usize, input.annotation)
}

/// The keys of a result's rows in order, one coordinate per row variable:
/// the entries of the rows query in coordinate order (its indices are the
/// row variables, in order), each repeated by its value or listed once,
/// or the one row of an aggregate without `GROUP BY`.
enum RowKeys {
    Entries {
        counts: Stored,
        positions: Vec<usize>,
        width: usize,
        repeat: bool,
        /// The next entry, and how many more times the one before repeats.
        next: usize,
        again: u64,
        row: Vec<i64>,
    },
    One {
        done: bool,
    },
}

impl Iterator for RowKeys {
    type Item = Vec<i64>;

    fn next(&mut self) -> Option<Vec<i64>> {
        match self {
            RowKeys::One { done } => (!std::mem::replace(done, true)).then(Vec::new),
            RowKeys::Entries {
                counts,
                positions,
                width,
                repeat,
                next,
                again,
                row,
            } => {
                while *again == 0 {
                    let value = *counts.values.get(*next)?;
                    let n = value.as_i64().unwrap_or(i64::from(!value.is_zero()));
                    *again = if *repeat {
                        u64::try_from(n).unwrap_or(0)
                    } else {
                        u64::from(n != 0)
                    };
                    *row = vec![0; *width];
                    for (d, &p) in positions.iter().enumerate() {
                        row[p] = counts.tensor.coords(d)[*next];
                    }
                    *next += 1;
                }
                *again -= 1;
                Some(row.clone())
            }
        }
    }
}

/// What the cells of a row are computed from.
struct Cells {
    evaluator: RowEvaluator,
    lookups: HashMap<String, Lookup>,
    /// A one-row result without matching rows: its nullable aggregates
    /// are NULL.
    empty: bool,
}

impl Cells {
    fn cell(&self, item: &Item, row: &[i64]) -> Result<Cell> {
        let (value, ty, promotes) = match item {
            Item::Pointwise { expr, ty } => (self.evaluator.eval(expr, row)?, ty, false),
            Item::Result { nullable: true, .. } if self.empty => return Ok(Cell::Null),
            Item::Result { query, ty, .. } => {
                let lookup = self
                    .lookups
                    .get(query)
                    .ok_or_else(|| Error::Invalid(format!("no result '{query}'")))?;
                (lookup.get(row), ty, true)
            }
        };
        to_cell(value, ty, promotes)
    }
}

/// The keys of the plan's rows and what their cells are computed from.
fn prepare(plan: &Plan, results: &Results, memory: &MemoryBudget) -> Result<(RowKeys, Cells)> {
    let result = |name: &str| {
        results
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
            .ok_or_else(|| Error::Invalid(format!("the program has no result '{name}'")))
    };
    let (vars, keys, empty) = match &plan.rows {
        Rows::Entries {
            query,
            vars,
            repeat,
        } => {
            let counts = Lookup::new(result(query)?, &indices_of(plan, query), vars, memory)?;
            let keys = RowKeys::Entries {
                counts: counts.stored,
                positions: counts.positions,
                width: vars.len(),
                repeat: *repeat,
                next: 0,
                again: 0,
                row: Vec::new(),
            };
            (vars.clone(), keys, false)
        }
        Rows::One { count } => {
            let empty = match count {
                Some(q) => result(q)?
                    .annotation_columns()
                    .first()
                    .map(|c| column_values(c.as_ref()))
                    .transpose()?
                    .and_then(|v| v.first().copied())
                    .is_none_or(Value::is_zero),
                None => false,
            };
            (Vec::new(), RowKeys::One { done: false }, empty)
        }
    };
    let mut evaluator = RowEvaluator {
        vars,
        inputs: HashMap::new(),
    };
    let mut lookups: HashMap<String, Lookup> = HashMap::new();
    let items = plan
        .columns
        .iter()
        .map(|c| &c.item)
        .chain(plan.having.iter())
        .chain(plan.order.iter().filter_map(|o| match &o.source {
            OrderSource::Item(item) => Some(item),
            OrderSource::Column(_) => None,
        }));
    for item in items {
        match item {
            Item::Pointwise { expr, .. } => evaluator.prepare(expr, memory)?,
            Item::Result { query, .. } => {
                if !lookups.contains_key(query) {
                    let lookup = Lookup::new(
                        result(query)?,
                        &indices_of(plan, query),
                        &evaluator.vars,
                        memory,
                    )?;
                    lookups.insert(query.clone(), lookup);
                }
            }
        }
    }
    Ok((
        keys,
        Cells {
            evaluator,
            lookups,
            empty,
        },
    ))
}

/// Whether the plan's rows can be listed as they are read off the
/// results: a join listing without `HAVING`, `DISTINCT` or `ORDER BY`.
fn lists_in_order(plan: &Plan) -> bool {
    matches!(plan.rows, Rows::Entries { repeat: true, .. })
        && plan.having.is_none()
        && !plan.distinct
        && plan.order.is_empty()
}

/// The plan's rows as a stream: a join listing row by row as the batches
/// are taken, any other result computed whole first.
fn stream(plan: &Plan, results: &Results, memory: &MemoryBudget) -> Result<RowStream> {
    let columns = result_columns(plan, results);
    let schema = schema_of(&columns);
    let rows: Box<dyn Iterator<Item = Result<Vec<Cell>>> + Send> = if lists_in_order(plan) {
        let (keys, cells) = prepare(plan, results, memory)?;
        let items: Vec<Item> = plan.columns.iter().map(|c| c.item.clone()).collect();
        Box::new(
            keys.skip(plan.offset)
                .take(plan.limit.unwrap_or(usize::MAX))
                .map(move |row| items.iter().map(|item| cells.cell(item, &row)).collect()),
        )
    } else {
        Box::new(assemble(plan, results, memory)?.rows.into_iter().map(Ok))
    };
    let batches = Batches {
        rows,
        columns,
        schema: Arc::clone(&schema),
        started: false,
        done: false,
    };
    Ok(RowStream::new(schema, batches))
}

/// A result's rows converted to Arrow batches of [`BATCH_ROWS`] as they
/// are taken; at least one batch, empty when there is no row.
struct Batches {
    rows: Box<dyn Iterator<Item = Result<Vec<Cell>>> + Send>,
    columns: Vec<ResultColumn>,
    schema: SchemaRef,
    started: bool,
    done: bool,
}

impl Iterator for Batches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        if self.done {
            return None;
        }
        let mut rows = Vec::new();
        while rows.len() < BATCH_ROWS {
            match self.rows.next() {
                Some(Ok(row)) => rows.push(row),
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                None => {
                    self.done = true;
                    break;
                }
            }
        }
        if rows.is_empty() && std::mem::replace(&mut self.started, true) {
            return None;
        }
        self.started = true;
        Some(record_batch(&self.schema, &self.columns, &rows))
    }
}

/// Turns the program's results into the rows the plan describes. The
/// rows it holds, and what `DISTINCT` and the sort take beside them, are
/// charged to `memory`. Under `ORDER BY` and `LIMIT` (without `DISTINCT`)
/// only the first `OFFSET + LIMIT` rows in order are kept ([`TopRows`]).
fn assemble(plan: &Plan, results: &Results, memory: &MemoryBudget) -> Result<ResultTable> {
    let (keys, cells) = prepare(plan, results, memory)?;
    let mut rows: Vec<(Vec<Cell>, Vec<Cell>)> = Vec::new();
    let mut top = top_rows(plan).map(|k| TopRows::new(&plan.order, k));
    for row in keys {
        if let Some(having) = &plan.having
            && !matches!(cells.cell(having, &row)?, Cell::Bool(true))
        {
            continue;
        }
        // Exactly as long as they are, so that [`row_bytes`] charges what
        // they take (collecting through `Result` starts at 4 and doubles).
        let mut visible = Vec::with_capacity(plan.columns.len());
        for column in &plan.columns {
            visible.push(cells.cell(&column.item, &row)?);
        }
        let mut order = Vec::with_capacity(plan.order.len());
        for key in &plan.order {
            order.push(match &key.source {
                OrderSource::Column(n) => visible[*n].clone(),
                OrderSource::Item(item) => cells.cell(item, &row)?,
            });
        }
        match &mut top {
            Some(top) => top.offer(visible, order, memory)?,
            None => {
                memory.reserve(row_bytes(&visible, &order), "for its rows")?;
                push_charged(&mut rows, (visible, order), memory)?;
            }
        }
    }
    if let Some(top) = top {
        rows = top.into_rows();
    }
    if plan.distinct {
        let mut seen = HashSet::new();
        let mut charge = Ok(());
        rows.retain(|(visible, _)| {
            let key = row_key(visible);
            if charge.is_ok() {
                charge = memory.reserve(key_bytes(&key), "for making its rows distinct");
            }
            seen.insert(key)
        });
        charge?;
    }
    if !plan.order.is_empty() {
        // The standard library's stable sort works in a buffer of up to
        // half the rows, or all of them while they take under 8 MB.
        let scratch = (rows.len() / 2).max(rows.len().min((8 << 20) / size_of::<Ranked>()));
        let scratch = (scratch * size_of::<Ranked>()) as u64;
        memory.reserve(scratch, "for sorting its rows")?;
        rows.sort_by(|(_, a), (_, b)| compare_keys(&plan.order, a, b));
        memory.release(scratch);
    }
    let rows: Vec<Vec<Cell>> = rows
        .into_iter()
        .skip(plan.offset)
        .take(plan.limit.unwrap_or(usize::MAX))
        .map(|(visible, _)| visible)
        .collect();
    Ok(ResultTable {
        columns: result_columns(plan, results),
        rows,
    })
}

/// A row's visible cells and its `ORDER BY` keys.
type Ranked = (Vec<Cell>, Vec<Cell>);

/// How many rows a top-k assembly keeps: `OFFSET + LIMIT` under `ORDER BY`
/// and `LIMIT` without `DISTINCT` (which must see every row first).
fn top_rows(plan: &Plan) -> Option<usize> {
    let limit = plan.limit?;
    (!plan.order.is_empty() && !plan.distinct).then(|| plan.offset.saturating_add(limit))
}

/// The first `k` rows in `ORDER BY` order of the rows offered, without
/// sorting them all: a max-heap of the `k` best so far, whose top (the
/// worst of them) a better row replaces. Rows that tie keep the order
/// they came in, as the full (stable) sort would, by their arrival number.
struct TopRows<'p> {
    order: &'p [OrderKey],
    k: usize,
    heap: BinaryHeap<HeapRow<'p>>,
    arrived: usize,
}

/// A row in [`TopRows`]'s heap, ordered by its keys, then by arrival.
struct HeapRow<'p> {
    order: &'p [OrderKey],
    row: Ranked,
    arrival: usize,
    bytes: u64,
}

impl Ord for HeapRow<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_keys(self.order, &self.row.1, &other.row.1).then(self.arrival.cmp(&other.arrival))
    }
}

impl PartialOrd for HeapRow<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for HeapRow<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for HeapRow<'_> {}

impl<'p> TopRows<'p> {
    fn new(order: &'p [OrderKey], k: usize) -> TopRows<'p> {
        TopRows {
            order,
            k,
            heap: BinaryHeap::new(),
            arrived: 0,
        }
    }

    /// Keeps the row if it is among the first `k` so far; the rows kept
    /// are charged to `memory` (and released when a row leaves).
    fn offer(&mut self, visible: Vec<Cell>, order: Vec<Cell>, memory: &MemoryBudget) -> Result<()> {
        let arrival = self.arrived;
        self.arrived += 1;
        if self.k == 0 {
            return Ok(());
        }
        if self.heap.len() == self.k {
            let Some(worst) = self.heap.peek() else {
                return Ok(());
            };
            // A later row that ties with the worst kept one comes after it.
            if compare_keys(self.order, &order, &worst.row.1) != Ordering::Less {
                return Ok(());
            }
            if let Some(out) = self.heap.pop() {
                memory.release(out.bytes);
            }
        }
        let bytes = row_bytes(&visible, &order) + size_of::<HeapRow>() as u64;
        memory.reserve(bytes, "for its first rows in order")?;
        self.heap.push(HeapRow {
            order: self.order,
            row: (visible, order),
            arrival,
            bytes,
        });
        Ok(())
    }

    /// The rows kept, in order.
    fn into_rows(self) -> Vec<Ranked> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.row)
            .collect()
    }
}

/// The SQL order of two rows' `ORDER BY` keys.
fn compare_keys(order: &[OrderKey], a: &[Cell], b: &[Cell]) -> Ordering {
    for (n, key) in order.iter().enumerate() {
        let ordering = compare_cells(&a[n], &b[n], key.descending, key.nulls_first);
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// The bytes a row's cells take on the heap: the two vectors' buffers
/// and the strings', each an allocation of its own ([`allocated`]).
fn row_bytes(visible: &[Cell], order: &[Cell]) -> u64 {
    let strings: usize = visible
        .iter()
        .chain(order)
        .map(|c| match c {
            Cell::Str(s) => allocated(s.capacity()),
            _ => 0,
        })
        .sum();
    (allocated(size_of_val(visible)) + allocated(size_of_val(order)) + strings) as u64
}

/// What an allocation of `bytes` takes from the allocator: a header of 8
/// bytes, rounded up to 16 (glibc's malloc; mimalloc's size classes take
/// no more for small blocks). Rows are many small allocations, so this
/// is a large part of their size.
fn allocated(bytes: usize) -> usize {
    if bytes == 0 {
        0
    } else {
        (bytes + 8).div_ceil(16) * 16
    }
}

/// The bytes a `DISTINCT` key takes in its hash set: its buffer and
/// strings, and a slot of the set (with the table's spare capacity).
fn key_bytes(key: &[(u8, u64, String)]) -> u64 {
    let strings: usize = key.iter().map(|(_, _, s)| s.capacity()).sum();
    let slot = size_of::<Vec<(u8, u64, String)>>() * 2 + 1;
    (size_of_val(key) + strings + slot) as u64
}

/// Pushes `item` onto `items`, charging the buffer's growth to `memory`:
/// while a full buffer is copied into one twice its size, both exist.
fn push_charged<T>(items: &mut Vec<T>, item: T, memory: &MemoryBudget) -> Result<()> {
    if items.len() == items.capacity() {
        let old = items.capacity();
        let new = (old * 2).max(8);
        memory.reserve((new * size_of::<T>()) as u64, "for its rows")?;
        items.reserve_exact(new - old);
        memory.release((old * size_of::<T>()) as u64);
    }
    items.push(item);
    Ok(())
}

/// The plan's visible columns with their names and types. A `BIGINT`
/// column read from a result that holds a value beyond 64 bits (stored as
/// `HUGEINT`, see [`crate::ir::stored_type`]) is a `HUGEINT` column.
fn result_columns(plan: &Plan, results: &Results) -> Vec<ResultColumn> {
    plan.columns
        .iter()
        .map(|c| ResultColumn {
            name: c.name.clone(),
            ty: match &c.item {
                Item::Result { query, ty, .. } if promoted(results, query, ty) => {
                    SqlType::Value(ValueType::Int128)
                }
                Item::Pointwise { ty, .. } | Item::Result { ty, .. } => ty.clone(),
            },
            key_size: c.key_size,
        })
        .collect()
}

/// Whether the `BIGINT` result `query` was stored as `HUGEINT`.
fn promoted(results: &Results, query: &str, ty: &SqlType) -> bool {
    matches!(ty, SqlType::Value(ValueType::Int64))
        && results
            .iter()
            .find(|(n, _)| n == query)
            .and_then(|(_, t)| t.values().first())
            .is_some_and(|v| v.ty == ValueType::Int128)
}

fn indices_of(plan: &Plan, query: &str) -> Vec<String> {
    plan.program
        .queries
        .iter()
        .find(|q| q.name == query)
        .map(|q| q.indices.clone())
        .unwrap_or_default()
}

/// The cell of `value` in a column of type `ty`. A `BIGINT` value beyond
/// 64 bits is a `HUGEINT` cell when it `promotes` (a result's column is
/// `HUGEINT` when one of its values is, [`result_columns`]); a value
/// computed row by row must fit the column's type.
fn to_cell(value: Value, ty: &SqlType, promotes: bool) -> Result<Cell> {
    Ok(match ty {
        SqlType::Key(dictionary) => {
            let code = value.as_i64().unwrap_or_default();
            Cell::Str(
                dictionary
                    .string(code)
                    .ok_or_else(|| Error::Invalid(format!("no string has the code {code}")))?
                    .to_string(),
            )
        }
        SqlType::Value(ValueType::Boolean) => Cell::Bool(!value.is_zero()),
        SqlType::Value(ValueType::Int64) => match value.cast(ValueType::Int64) {
            Value::Int(i) => Cell::Int(i),
            Value::Huge(h) if promotes => Cell::Huge(h.get()),
            Value::Huge(h) => {
                return Err(Error::Overflow(format!(
                    "the BIGINT value {} does not fit in 64 bits; \
                     CAST the expression AS HUGEINT for its exact value",
                    h.get()
                )));
            }
            other => Cell::Float(other.as_f64()),
        },
        SqlType::Value(ValueType::Int128) => match value.as_i128() {
            Some(i) => Cell::Huge(i),
            None => Cell::Float(value.as_f64()),
        },
        SqlType::Value(ValueType::Float64) => Cell::Float(value.as_f64()),
        SqlType::Text(s) => Cell::Str(s.clone()),
    })
}

fn row_key(cells: &[Cell]) -> Vec<(u8, u64, String)> {
    cells
        .iter()
        .map(|c| match c {
            Cell::Null => (0, 0, String::new()),
            Cell::Bool(b) => (1, u64::from(*b), String::new()),
            Cell::Int(i) => (2, *i as u64, String::new()),
            Cell::Float(f) => (3, f.to_bits(), String::new()),
            Cell::Str(s) => (4, 0, s.clone()),
            Cell::Huge(i) => (5, *i as u64, (*i >> 64).to_string()),
        })
        .collect()
}

/// SQL ordering of two cells of one column: NULLs where `nulls_first`
/// says, numbers by value (NaN largest), strings by bytes.
fn compare_cells(a: &Cell, b: &Cell, descending: bool, nulls_first: bool) -> Ordering {
    let order = match (a, b) {
        (Cell::Null, Cell::Null) => return Ordering::Equal,
        (Cell::Null, _) => {
            return if nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        (_, Cell::Null) => {
            return if nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        (Cell::Str(x), Cell::Str(y)) => x.cmp(y),
        (Cell::Int(x), Cell::Int(y)) => x.cmp(y),
        (Cell::Huge(x), Cell::Huge(y)) => x.cmp(y),
        (Cell::Bool(x), Cell::Bool(y)) => x.cmp(y),
        (x, y) => number(x).total_cmp(&number(y)),
    };
    if descending { order.reverse() } else { order }
}

fn number(cell: &Cell) -> f64 {
    match cell {
        Cell::Bool(b) => f64::from(u8::from(*b)),
        Cell::Int(i) => *i as f64,
        Cell::Huge(i) => *i as f64,
        Cell::Float(f) if f.is_nan() => f64::INFINITY,
        Cell::Float(f) => *f,
        Cell::Null | Cell::Str(_) => 0.0,
    }
}

/// The Arrow schema of a result's columns (string keys as strings).
fn schema_of(columns: &[ResultColumn]) -> SchemaRef {
    let fields: Vec<Field> = columns
        .iter()
        .map(|column| {
            let ty = match &column.ty {
                SqlType::Key(_) | SqlType::Text(_) => DataType::Utf8,
                SqlType::Value(ValueType::Boolean) => DataType::Boolean,
                SqlType::Value(ValueType::Int64) => DataType::Int64,
                SqlType::Value(ValueType::Int128) => HUGEINT_ARROW,
                SqlType::Value(ValueType::Float64) => DataType::Float64,
            };
            Field::new(&column.name, ty, true)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// `rows` of `columns` as one Arrow batch of `schema` ([`schema_of`]).
fn record_batch(
    schema: &SchemaRef,
    columns: &[ResultColumn],
    rows: &[Vec<Cell>],
) -> Result<RecordBatch> {
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (n, column) in columns.iter().enumerate() {
        let cells = rows.iter().map(|r| &r[n]);
        let array: ArrayRef = match &column.ty {
            SqlType::Key(_) | SqlType::Text(_) => {
                Arc::new(StringArray::from_iter(cells.map(|c| match c {
                    Cell::Str(s) => Some(s.clone()),
                    _ => None,
                })))
            }
            SqlType::Value(ValueType::Boolean) => {
                Arc::new(BooleanArray::from_iter(cells.map(|c| match c {
                    Cell::Bool(b) => Some(*b),
                    _ => None,
                })))
            }
            SqlType::Value(ValueType::Int64) => {
                Arc::new(Int64Array::from_iter(cells.map(|c| match c {
                    Cell::Int(i) => Some(*i),
                    _ => None,
                })))
            }
            SqlType::Value(ValueType::Int128) => Arc::new(
                Decimal128Array::from_iter(cells.map(|c| match c {
                    Cell::Huge(i) => Some(*i),
                    Cell::Int(i) => Some(i128::from(*i)),
                    _ => None,
                }))
                .with_data_type(HUGEINT_ARROW),
            ),
            SqlType::Value(ValueType::Float64) => {
                Arc::new(Float64Array::from_iter(cells.map(|c| match c {
                    Cell::Float(f) => Some(*f),
                    Cell::Int(i) => Some(*i as f64),
                    Cell::Huge(i) => Some(*i as f64),
                    _ => None,
                })))
            }
        };
        arrays.push(array);
    }
    if arrays.is_empty() {
        Ok(RecordBatch::new_empty(Arc::clone(schema)))
    } else {
        Ok(RecordBatch::try_new(Arc::clone(schema), arrays)?)
    }
}

impl ResultTable {
    /// The rows as a tensor: string columns and plain key columns are its
    /// dimensions, the other columns its values; without value columns it
    /// is a bag that counts repeated rows. Its columns (8 bytes a cell)
    /// and the tensor's construction (sorted columns and a permutation)
    /// are charged to `memory`.
    pub fn into_tensor(self, memory: &MemoryBudget) -> Result<Tensor> {
        let cells = (self.rows.len() * self.columns.len() * size_of::<i64>()) as u64;
        memory.reserve(cells, "for the columns of its result")?;
        let sorting = (self.rows.len() * 2 * size_of::<u64>()) as u64;
        memory.reserve(cells + sorting, "for building its result tensor")?;
        let names = unique_names(self.columns.iter().map(|c| c.name.as_str()));
        let mut dims = Vec::new();
        let mut coords: Vec<Vec<i64>> = Vec::new();
        let mut values: Vec<(String, ValueData)> = Vec::new();
        let mut order = Vec::new();
        for (n, (column, name)) in self.columns.iter().zip(names).enumerate() {
            let cells = self.rows.iter().map(|r| &r[n]);
            if self.rows.iter().any(|r| r[n] == Cell::Null) {
                return Err(Error::NotSupported(format!(
                    "storing the NULL of column {name} (an aggregate over no rows)"
                )));
            }
            match (&column.ty, column.key_size) {
                (SqlType::Key(dictionary), _) => {
                    order.push(ColumnRef::Key(dims.len()));
                    coords.push(
                        cells
                            .map(|c| match c {
                                Cell::Str(s) => dictionary.code(s).unwrap_or_default(),
                                _ => 0,
                            })
                            .collect(),
                    );
                    dims.push(DimensionSpec {
                        name,
                        size: Some(dictionary.len() as u64),
                        dictionary: Some(Arc::clone(dictionary)),
                    });
                }
                (SqlType::Value(ValueType::Int64), Some(size)) => {
                    order.push(ColumnRef::Key(dims.len()));
                    coords.push(
                        cells
                            .map(|c| match c {
                                Cell::Int(i) => *i,
                                _ => 0,
                            })
                            .collect(),
                    );
                    dims.push(DimensionSpec::new(name, Some(size)));
                }
                (SqlType::Value(ty), _) => {
                    order.push(ColumnRef::Value(values.len()));
                    let data = match ty {
                        ValueType::Boolean => ValueData::Boolean(
                            cells.map(|c| matches!(c, Cell::Bool(true))).collect(),
                        ),
                        ValueType::Int64 => ValueData::Int64(
                            cells
                                .map(|c| match c {
                                    Cell::Int(i) => *i,
                                    _ => 0,
                                })
                                .collect(),
                        ),
                        ValueType::Int128 => ValueData::Int128(
                            cells
                                .map(|c| match c {
                                    Cell::Huge(i) => *i,
                                    Cell::Int(i) => i128::from(*i),
                                    _ => 0,
                                })
                                .collect(),
                        ),
                        ValueType::Float64 => ValueData::Float64(
                            cells
                                .map(|c| match c {
                                    Cell::Float(f) => *f,
                                    Cell::Int(i) => *i as f64,
                                    Cell::Huge(i) => *i as f64,
                                    _ => 0.0,
                                })
                                .collect(),
                        ),
                    };
                    values.push((name, data));
                }
                (SqlType::Text(_), _) => {
                    return Err(Error::NotSupported(format!(
                        "storing the string constant column {name}"
                    )));
                }
            }
        }
        let rows = self.rows.len();
        let bag = values.is_empty();
        let tensor = Tensor::from_coo(Coo {
            dims,
            coords,
            values,
            column_order: Some(order),
        })?;
        if !bag && tensor.nnz() < rows {
            return Err(Error::NotSupported(
                "storing a result with value columns whose rows repeat the same key columns; \
                 aggregate with GROUP BY so that the keys are unique"
                    .to_string(),
            ));
        }
        Ok(tensor)
    }
}

/// Column names made unique by suffixes (`i`, `i_1`), as DuckDB does.
fn unique_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let mut candidate = name.to_string();
        let mut n = 1;
        while out.iter().any(|o| o.eq_ignore_ascii_case(&candidate)) {
            candidate = format!("{name}_{n}");
            n += 1;
        }
        out.push(candidate);
    }
    out
}
