//! The TPC-H data generator behind `CALL dbgen(sf = ...)`: the eight tables
//! of the TPC-H benchmark (region, nation, supplier, customer, part,
//! partsupp, orders, lineitem) at a scale factor, made by the `tpchgen`
//! crate (a port of the TPC's `dbgen`: the same rows for the same scale
//! factor) as Arrow batches (`tpchgen-arrow`), with the TPC-H column names.
//!
//! Each table's batches go through the Arrow import path
//! ([`crate::storage::from_arrow`]) as a Parquet file's would, after two
//! conversions: `DECIMAL(15,2)` columns become `DOUBLE` (the nearest double
//! to the decimal), and `DATE` columns become `'YYYY-MM-DD'` strings, as the
//! CSV reader reads dates (they sort chronologically). The roles are then
//! the import's defaults: integer, string and date columns are keys
//! (dimensions), the decimal columns values. The tables are built in
//! parallel; each checks for a stop request between batches and reports the
//! rows it made to the [`ProgressSink`] (in rows, [`ProgressSink::start_rows`]).
//! Nothing here touches the catalog: the session stores the tables, all
//! eight or none.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchReader};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

use crate::error::{Error, Result};
use crate::progress::{ProgressSink, check_cancelled};
use crate::storage::Tensor;
use crate::storage::from_arrow::{ColumnRoles, Origin, TensorBuilder};

/// The smallest positive scale factor: one supplier. Below it `dbgen`'s
/// formulas (part suppliers modulo the supplier count) have no supplier
/// to draw from.
pub const MIN_SCALE_FACTOR: f64 = 0.0001;

/// The largest scale factor the TPC-H specification defines.
pub const MAX_SCALE_FACTOR: f64 = 100_000.0;

/// About how many bytes a generated row takes at the peak of building its
/// table (its columns while they are gathered, its interned strings, then
/// the sort into a tensor), averaged over the tables: the peak resident
/// memory of `CALL dbgen(sf = 1)` was 3.4 GB for 8.7M rows, 0.4 GB of it
/// before the first row (docs/benchmarks.md).
const PEAK_BYTES_PER_ROW: u64 = 400;

/// The text pool `tpchgen` draws comments from: 300 MiB, made on first use.
const TEXT_POOL_BYTES: u64 = 300 * 1024 * 1024;

/// The eight TPC-H tables, in the order they are listed and reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// `region`: 5 rows.
    Region,
    /// `nation`: 25 rows.
    Nation,
    /// `supplier`: 10,000 rows per unit of scale.
    Supplier,
    /// `customer`: 150,000 rows per unit of scale.
    Customer,
    /// `part`: 200,000 rows per unit of scale.
    Part,
    /// `partsupp`: 800,000 rows per unit of scale (4 suppliers per part).
    PartSupp,
    /// `orders`: 1,500,000 rows per unit of scale.
    Orders,
    /// `lineitem`: 1 to 7 lines per order, about 6,000,000 rows per unit
    /// of scale.
    LineItem,
}

impl Table {
    /// Every table, in the TPC-H specification's order.
    pub const ALL: [Table; 8] = [
        Table::Region,
        Table::Nation,
        Table::Supplier,
        Table::Customer,
        Table::Part,
        Table::PartSupp,
        Table::Orders,
        Table::LineItem,
    ];

    /// The table's TPC-H name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Region => "region",
            Table::Nation => "nation",
            Table::Supplier => "supplier",
            Table::Customer => "customer",
            Table::Part => "part",
            Table::PartSupp => "partsupp",
            Table::Orders => "orders",
            Table::LineItem => "lineitem",
        }
    }

    /// The rows the table has at scale factor `sf`: exact except for
    /// lineitem, whose 1 to 7 lines per order average 4.
    pub fn expected_rows(self, sf: f64) -> u64 {
        if sf == 0.0 {
            return 0;
        }
        let scaled = |base: f64| (base * sf) as u64;
        match self {
            Table::Region => 5,
            Table::Nation => 25,
            Table::Supplier => scaled(10_000.0),
            Table::Customer => scaled(150_000.0),
            Table::Part => scaled(200_000.0),
            Table::PartSupp => 4 * scaled(200_000.0),
            Table::Orders => scaled(1_500_000.0),
            Table::LineItem => 4 * scaled(1_500_000.0),
        }
    }

    /// The Arrow schema of the generated batches.
    fn schema(self) -> SchemaRef {
        match self {
            Table::Region => RegionArrow::schema_ref(),
            Table::Nation => NationArrow::schema_ref(),
            Table::Supplier => SupplierArrow::schema_ref(),
            Table::Customer => CustomerArrow::schema_ref(),
            Table::Part => PartArrow::schema_ref(),
            Table::PartSupp => PartSuppArrow::schema_ref(),
            Table::Orders => OrderArrow::schema_ref(),
            Table::LineItem => LineItemArrow::schema_ref(),
        }
    }

    /// The generator of the table's rows at scale factor `sf`, as Arrow
    /// batches.
    fn reader(self, sf: f64) -> Box<dyn RecordBatchReader> {
        match self {
            Table::Region => Box::new(RegionArrow::new(RegionGenerator::new(sf, 1, 1))),
            Table::Nation => Box::new(NationArrow::new(NationGenerator::new(sf, 1, 1))),
            Table::Supplier => Box::new(SupplierArrow::new(SupplierGenerator::new(sf, 1, 1))),
            Table::Customer => Box::new(CustomerArrow::new(CustomerGenerator::new(sf, 1, 1))),
            Table::Part => Box::new(PartArrow::new(PartGenerator::new(sf, 1, 1))),
            Table::PartSupp => Box::new(PartSuppArrow::new(PartSuppGenerator::new(sf, 1, 1))),
            Table::Orders => Box::new(OrderArrow::new(OrderGenerator::new(sf, 1, 1))),
            Table::LineItem => Box::new(LineItemArrow::new(LineItemGenerator::new(sf, 1, 1))),
        }
    }
}

/// What `CALL dbgen(...)` generates: the scale factor and the suffix of the
/// table names.
#[derive(Clone, Debug, PartialEq)]
pub struct Dbgen {
    scale_factor: f64,
    suffix: String,
}

impl Dbgen {
    /// The tables at scale factor `sf`, named with `suffix` appended
    /// (`lineitem_sf1` for suffix `_sf1`). `sf` 0 makes the eight tables
    /// empty (their columns only), as DuckDB's `dbgen` does.
    ///
    /// Errors: a scale factor that is not a number, negative, between 0
    /// and [`MIN_SCALE_FACTOR`], or above [`MAX_SCALE_FACTOR`].
    pub fn new(sf: f64, suffix: &str) -> Result<Dbgen> {
        if !sf.is_finite() || sf < 0.0 {
            return Err(Error::Invalid(format!(
                "dbgen: the scale factor must be a non-negative number, not {sf}"
            )));
        }
        if sf > 0.0 && sf < MIN_SCALE_FACTOR {
            return Err(Error::Invalid(format!(
                "dbgen: the scale factor {sf} is too small: the smallest is {MIN_SCALE_FACTOR} \
                 (one supplier), or 0 for empty tables"
            )));
        }
        if sf > MAX_SCALE_FACTOR {
            return Err(Error::Invalid(format!(
                "dbgen: the scale factor {sf} is above {MAX_SCALE_FACTOR}, the largest TPC-H defines"
            )));
        }
        Ok(Dbgen {
            scale_factor: sf,
            suffix: suffix.to_string(),
        })
    }

    /// The scale factor.
    pub fn scale_factor(&self) -> f64 {
        self.scale_factor
    }

    /// The name `table` gets: its TPC-H name and the suffix.
    pub fn table_name(&self, table: Table) -> String {
        format!("{}{}", table.name(), self.suffix)
    }

    /// About how many rows the eight tables have together.
    pub fn expected_rows(&self) -> u64 {
        Table::ALL
            .iter()
            .map(|t| t.expected_rows(self.scale_factor))
            .sum()
    }

    /// About how many bytes generating the tables takes at its peak: what
    /// the session reserves against `memory_limit` before it starts.
    pub fn estimated_bytes(&self) -> u64 {
        if self.scale_factor == 0.0 {
            return 0;
        }
        self.expected_rows()
            .saturating_mul(PEAK_BYTES_PER_ROW)
            .saturating_add(TEXT_POOL_BYTES)
    }

    /// The eight tables, by name in [`Table::ALL`]'s order, built in
    /// parallel. Stops with [`Error::Cancelled`] between batches when
    /// `progress` asks to.
    pub fn generate(&self, progress: &dyn ProgressSink) -> Result<Vec<(String, Tensor)>> {
        progress.start_rows(
            &format!("dbgen(sf = {})", self.scale_factor),
            self.expected_rows(),
        );
        let tables = Table::ALL
            .par_iter()
            .map(|&table| Ok((self.table_name(table), self.build(table, progress)?)))
            .collect::<Result<Vec<_>>>();
        progress.finish();
        tables
    }

    /// One table as a tensor.
    fn build(&self, table: Table, progress: &dyn ProgressSink) -> Result<Tensor> {
        let schema = stored_schema(&table.schema());
        let mut builder = TensorBuilder::new(&schema, &ColumnRoles::default(), Origin::Batches)?;
        if self.scale_factor > 0.0 {
            for batch in table.reader(self.scale_factor) {
                check_cancelled(progress)?;
                let batch = convert(&schema, &batch?)?;
                builder.push(&batch)?;
                progress.advance(batch.num_rows() as u64);
            }
        }
        builder.finish()
    }
}

/// The type a generated column is stored as: decimals as doubles, dates
/// as strings, other types as they are.
fn stored_type(ty: &DataType) -> DataType {
    match ty {
        DataType::Decimal128(_, _) => DataType::Float64,
        DataType::Date32 => DataType::Utf8,
        other => other.clone(),
    }
}

/// `schema` with every column of its stored type.
fn stored_schema(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            f.as_ref()
                .clone()
                .with_data_type(stored_type(f.data_type()))
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// A generated batch with its columns cast to `schema`'s types.
fn convert(schema: &SchemaRef, batch: &RecordBatch) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| {
            if column.data_type() == field.data_type() {
                Ok(ArrayRef::clone(column))
            } else {
                arrow::compute::cast(column, field.data_type())
            }
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    #[test]
    fn scale_factors_are_checked() {
        for bad in [-1.0, f64::NAN, f64::INFINITY, 0.00001, 100_001.0] {
            assert!(
                matches!(Dbgen::new(bad, ""), Err(Error::Invalid(_))),
                "{bad}"
            );
        }
        for good in [0.0, MIN_SCALE_FACTOR, 0.01, 1.0, MAX_SCALE_FACTOR] {
            assert!(Dbgen::new(good, "").is_ok(), "{good}");
        }
    }

    #[test]
    fn names_take_the_suffix() {
        let dbgen = Dbgen::new(1.0, "_sf1").unwrap();
        assert_eq!(dbgen.table_name(Table::LineItem), "lineitem_sf1");
    }

    #[test]
    fn decimals_and_dates_are_converted() {
        let table = Dbgen::new(MIN_SCALE_FACTOR, "")
            .unwrap()
            .build(Table::Orders, &NoProgress)
            .unwrap();
        assert_eq!(table.nnz(), 150);
        let names: Vec<&str> = table.dims().iter().map(|d| d.name.as_str()).collect();
        assert!(names.contains(&"o_orderdate"));
        assert!(!names.contains(&"o_totalprice"));
    }
}
