//! `CALL procedure(name = value, ...)`. The one procedure is DuckDB's
//! `dbgen`, which generates the TPC-H tables ([`crate::tpch`]):
//!
//! ```sql
//! CALL dbgen(sf = 0.01);
//! CALL dbgen(sf = 1, suffix = '_sf1');
//! ```
//!
//! Parameters are named (`=`, `:=` or `=>`): `sf`, the scale factor (a
//! number, required), and `suffix`, appended to every table name (a
//! string, default none).

use sqlparser::ast::{Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments};

use crate::bound::{BoundStatement, Literal};
use crate::error::{Error, Result, closest_name};
use crate::tpch::Dbgen;

/// The procedures `CALL` runs.
const PROCEDURES: [&str; 1] = ["dbgen"];

/// The named parameters of `dbgen`.
const DBGEN_PARAMETERS: [&str; 2] = ["sf", "suffix"];

/// Binds `CALL function(...)`.
pub fn call(function: &Function) -> Result<BoundStatement> {
    let name = super::table_name(&function.name)?.to_lowercase();
    if !PROCEDURES.contains(&name.as_str()) {
        return Err(Error::unknown("Procedure", &name, PROCEDURES));
    }
    let args = match &function.args {
        FunctionArguments::List(list) if list.duplicate_treatment.is_none() => &list.args,
        FunctionArguments::None => &Vec::new(),
        other => {
            return Err(Error::Invalid(format!(
                "dbgen: unexpected arguments {other}; give the parameters as name = value, \
                 e.g. CALL dbgen(sf = 0.01)"
            )));
        }
    };
    let mut sf = None;
    let mut suffix = None;
    for arg in args {
        let FunctionArg::Named {
            name,
            arg: FunctionArgExpr::Expr(value),
            ..
        } = arg
        else {
            return Err(Error::Invalid(format!(
                "dbgen: unexpected argument {arg}; give the parameters as name = value, \
                 e.g. CALL dbgen(sf = 0.01)"
            )));
        };
        let parameter = name.value.to_lowercase();
        let given_twice = match parameter.as_str() {
            "sf" => sf.replace(number(value)?).is_some(),
            "suffix" => suffix.replace(string(value)?).is_some(),
            other => {
                let hint = closest_name(other, DBGEN_PARAMETERS)
                    .map(|s| format!(" (did you mean '{s}'?)"))
                    .unwrap_or_default();
                return Err(Error::Invalid(format!(
                    "dbgen: unknown parameter '{other}'{hint}; parameters are {}",
                    DBGEN_PARAMETERS.join(", ")
                )));
            }
        };
        if given_twice {
            return Err(Error::Invalid(format!(
                "dbgen: the parameter '{parameter}' is given twice"
            )));
        }
    }
    let sf = sf.ok_or_else(|| {
        Error::Invalid("dbgen needs a scale factor, e.g. CALL dbgen(sf = 0.01)".to_string())
    })?;
    Ok(BoundStatement::Dbgen(Dbgen::new(
        sf,
        suffix.as_deref().unwrap_or_default(),
    )?))
}

/// The scale factor: a number.
fn number(expr: &Expr) -> Result<f64> {
    match Literal::from_expr(expr) {
        Ok(Literal::Integer(v)) => Ok(v as f64),
        Ok(Literal::Float(v)) => Ok(v),
        _ => Err(Error::Type(format!(
            "dbgen: the scale factor sf must be a number, not {expr}"
        ))),
    }
}

/// The suffix: a string.
fn string(expr: &Expr) -> Result<String> {
    match Literal::from_expr(expr) {
        Ok(Literal::String(s)) => Ok(s),
        _ => Err(Error::Type(format!(
            "dbgen: the suffix must be a string, not {expr}"
        ))),
    }
}
