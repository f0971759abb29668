//! `SET name = value`, `RESET name` and `RESET ALL`, bound to the setting
//! they name; the session checks the name and the value and applies them
//! (see [`crate::session::Settings`] for the settings).

use sqlparser::ast::{ObjectName, Reset, ResetStatement, Set};

use crate::bound::BoundStatement;
use crate::bound::Literal;
use crate::error::{Error, Result};

/// Binds `SET name = value`.
pub fn set(set: &Set) -> Result<BoundStatement> {
    let Set::SingleAssignment {
        variable, values, ..
    } = set
    else {
        return Err(Error::NotSupported(format!(
            "SET statements other than SET name = value ({set})"
        )));
    };
    let name = setting_name(variable);
    let [value] = values.as_slice() else {
        return Err(Error::Invalid(format!("SET {name} takes one value")));
    };
    Ok(BoundStatement::Set {
        name,
        value: Literal::from_expr(value)?,
    })
}

/// Binds `RESET name` or `RESET ALL`.
pub fn reset(reset: &ResetStatement) -> Result<BoundStatement> {
    match &reset.reset {
        Reset::ALL => Ok(BoundStatement::Reset(None)),
        Reset::ConfigurationParameter(name) => Ok(BoundStatement::Reset(Some(setting_name(name)))),
        Reset::SessionAuthorization => Err(Error::NotSupported(
            "RESET SESSION AUTHORIZATION (einsql has no users)".to_string(),
        )),
    }
}

/// A setting's name as written, in lower case (names are case-insensitive).
fn setting_name(name: &ObjectName) -> String {
    name.to_string().to_lowercase()
}
