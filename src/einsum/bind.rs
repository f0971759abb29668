//! Resolves the names of a parsed einsum statement against the catalog and
//! builds the IR query, checking that indices are used consistently.
//!
//! Checks, each reported at the offending position: unknown tensors,
//! columns and functions (with "did you mean"), an ambiguous value column,
//! the number of indices of each tensor, string keys on integer dimensions
//! and unknown string keys, an index that joins string keys with integer
//! keys or with keys of another dictionary, a function called
//! with the wrong number of arguments, an aggregate over an index its
//! expression does not use, output indices that the right-hand side does
//! not bind, and free indices that are neither output nor aggregated
//! (einsum needs explicit aggregates, as in Galley).
//!
//! An index name means one variable throughout a statement, even in
//! separate aggregates; over integer dimensions of different sizes it ranges
//! over the largest.

use std::ops::Range;
use std::sync::Arc;

use hashbrown::HashMap;

use super::located;
use super::parser::{Ast, AstKind, Name, ROWS, Statement, Term};
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::ir::{Annotation, Expr, IndexTerm, Input, Query, ScalarOp, TensorRef};
use crate::storage::{Dictionary, Tensor};

/// Builds the IR query of `statement`, resolving tables in `catalog`.
pub fn bind(source: &str, statement: &Statement, catalog: &Catalog) -> Result<Query> {
    let mut binder = Binder {
        source,
        catalog,
        domains: HashMap::new(),
        coordinates: Vec::new(),
    };
    let expr = binder.expr(&statement.expr)?;
    if let Some(index) = binder
        .coordinates
        .iter()
        .find(|i| !binder.domains.contains_key(&i.name))
    {
        return Err(binder.error(
            &index.span,
            Error::Invalid(format!(
                "coord({}) needs '{}' to index a tensor of the statement",
                index.name, index.name
            )),
        ));
    }
    let free = expr.free_indices();
    let mut outputs: Vec<String> = Vec::new();
    for index in &statement.indices {
        if outputs.contains(&index.name) {
            return Err(binder.error(
                &index.span,
                Error::Invalid(format!("output index '{}' is listed twice", index.name)),
            ));
        }
        if !free.contains(&index.name) {
            let message = if binder.domains.contains_key(&index.name) {
                format!(
                    "output index '{}' is aggregated away on the right-hand side",
                    index.name
                )
            } else {
                format!(
                    "output index '{}' does not appear on the right-hand side",
                    index.name
                )
            };
            return Err(binder.error(&index.span, Error::Invalid(message)));
        }
        outputs.push(index.name.clone());
    }
    if let Some(loose) = free.iter().find(|v| !outputs.contains(v)) {
        let span = binder
            .domains
            .get(loose)
            .map_or(statement.expr.span.clone(), |d| d.first_use.clone());
        return Err(binder.error(
            &span,
            Error::Invalid(format!(
                "index '{loose}' is neither an output index nor aggregated; \
                 list it in the output or aggregate it explicitly, e.g. SUM({loose}) ..."
            )),
        ));
    }
    Ok(Query {
        name: statement.output.name.clone(),
        indices: outputs,
        expr,
    })
}

/// What an index variable ranges over, from its first use.
struct Domain {
    size: u64,
    dictionary: Option<Arc<Dictionary>>,
    /// Where it was first bound, e.g. "A (dimension i)".
    origin: String,
    first_use: Range<usize>,
}

struct Binder<'a> {
    source: &'a str,
    catalog: &'a Catalog,
    domains: HashMap<String, Domain>,
    /// The indices of `coord(i)` calls, checked once the whole statement is
    /// bound.
    coordinates: Vec<Name>,
}

impl Binder<'_> {
    fn error(&self, span: &Range<usize>, error: Error) -> Error {
        located(self.source, span.clone(), error)
    }

    fn expr(&mut self, ast: &Ast) -> Result<Expr> {
        match &ast.kind {
            AstKind::Literal(value) => Ok(Expr::Literal(*value)),
            AstKind::Operator { op, args } => {
                let args = args.iter().map(|a| self.expr(a)).collect::<Result<_>>()?;
                Ok(Expr::map(*op, args))
            }
            AstKind::Call { function, args } if function.name.eq_ignore_ascii_case("coord") => {
                self.coordinate(ast, args)
            }
            AstKind::Call { function, args } => {
                let op = ScalarOp::from_function_name(&function.name).ok_or_else(|| {
                    let known = ScalarOp::ALL.iter().filter_map(|op| op.function_name());
                    self.error(
                        &function.span,
                        Error::unknown("Function", &function.name, known),
                    )
                })?;
                if !op.accepts(args.len()) {
                    let wanted = match op.arity() {
                        crate::ir::Arity::Unary => "1 argument",
                        crate::ir::Arity::Binary => "2 arguments",
                        crate::ir::Arity::Ternary => "3 arguments",
                        crate::ir::Arity::Variadic => "at least 2 arguments",
                    };
                    return Err(self.error(
                        &ast.span,
                        Error::Invalid(format!(
                            "{} takes {wanted}, {} given",
                            function.name.to_lowercase(),
                            args.len()
                        )),
                    ));
                }
                let args = args.iter().map(|a| self.expr(a)).collect::<Result<_>>()?;
                Ok(Expr::map(op, args))
            }
            AstKind::Aggregate { op, indices, body } => {
                let body = self.expr(body)?;
                let free = body.free_indices();
                let mut names: Vec<String> = Vec::new();
                for index in indices {
                    if names.contains(&index.name) {
                        return Err(self.error(
                            &index.span,
                            Error::Invalid(format!(
                                "index '{}' is listed twice in {}(...)",
                                index.name,
                                op.name()
                            )),
                        ));
                    }
                    if !free.contains(&index.name) {
                        return Err(self.error(
                            &index.span,
                            Error::Invalid(format!(
                                "{} aggregates over '{}', which its expression does not use",
                                op.name(),
                                index.name
                            )),
                        ));
                    }
                    names.push(index.name.clone());
                }
                Ok(Expr::Agg {
                    op: *op,
                    indices: names,
                    body: Box::new(body),
                })
            }
            AstKind::Access {
                tensor,
                column,
                terms,
            } => self.access(ast, tensor, column.as_ref(), terms.as_deref()),
        }
    }

    /// `coord(i)`: the coordinate of index `i`, which must also index a
    /// tensor of the statement.
    fn coordinate(&mut self, ast: &Ast, args: &[Ast]) -> Result<Expr> {
        let [
            Ast {
                kind:
                    AstKind::Access {
                        tensor: index,
                        column: None,
                        terms: None,
                    },
                ..
            },
        ] = args
        else {
            return Err(self.error(
                &ast.span,
                Error::Invalid("coord takes one index name, as in coord(i)".to_string()),
            ));
        };
        self.coordinates.push(index.clone());
        Ok(Expr::Index(index.name.clone()))
    }

    fn access(
        &mut self,
        ast: &Ast,
        tensor_name: &Name,
        column: Option<&Name>,
        terms: Option<&[Term]>,
    ) -> Result<Expr> {
        let tensor = self
            .catalog
            .get(&tensor_name.name)
            .map_err(|e| self.error(&tensor_name.span, e))?;
        let name = self
            .catalog
            .names()
            .find(|n| n.eq_ignore_ascii_case(&tensor_name.name))
            .unwrap_or(&tensor_name.name)
            .to_string();
        let annotation = self.annotation(&tensor, &name, tensor_name, column)?;
        let terms = terms.unwrap_or_default();
        if terms.len() != tensor.dims().len() {
            let dims: Vec<&str> = tensor.dims().iter().map(|d| d.name.as_str()).collect();
            return Err(self.error(
                &ast.span,
                Error::Invalid(format!(
                    "'{name}' has {} dimensions ({}) but is indexed with {} indices",
                    dims.len(),
                    dims.join(", "),
                    terms.len()
                )),
            ));
        }
        let indices = terms
            .iter()
            .zip(tensor.dims())
            .map(|(term, dim)| match term {
                Term::Int(c, span) => match &dim.dictionary {
                    None => Ok(IndexTerm::Const(*c)),
                    Some(_) => Err(self.error(
                        span,
                        Error::Type(format!(
                            "dimension '{}' of '{name}' has string keys; index it with a \
                             'string' key, not the number {c}",
                            dim.name
                        )),
                    )),
                },
                Term::Str(s, span) => match &dim.dictionary {
                    Some(dictionary) => dictionary.code(s).map(IndexTerm::Const).ok_or_else(|| {
                        self.error(
                            span,
                            Error::unknown(
                                "Key",
                                s,
                                dictionary.strings().iter().map(String::as_str),
                            ),
                        )
                    }),
                    None => Err(self.error(
                        span,
                        Error::Type(format!(
                            "dimension '{}' of '{name}' has integer keys; \
                             the string '{s}' cannot index it",
                            dim.name
                        )),
                    )),
                },
                Term::Var(var) => {
                    self.use_index(var, &name, dim)?;
                    Ok(IndexTerm::Var(var.name.clone()))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Expr::Input(Input {
            tensor: TensorRef { name, tensor },
            annotation,
            indices,
        }))
    }

    /// Which annotation `tensor.column` reads.
    fn annotation(
        &self,
        tensor: &Tensor,
        name: &str,
        tensor_name: &Name,
        column: Option<&Name>,
    ) -> Result<Annotation> {
        let values = tensor.values();
        let column_given = column.is_some();
        let column = column.filter(|c| c.name != ROWS);
        let Some(column) = column else {
            if column_given {
                return Ok(Annotation::Multiplicity);
            }
            return match values.len() {
                0 => Ok(Annotation::Multiplicity),
                1 => Ok(Annotation::Column(0)),
                _ => {
                    let names: Vec<&str> = values.iter().map(|v| v.name.as_str()).collect();
                    Err(self.error(
                        &tensor_name.span,
                        Error::Invalid(format!(
                            "'{name}' has several value columns ({}); name one, as in {name}.{}[...]",
                            names.join(", "),
                            names.first().unwrap_or(&"v")
                        )),
                    ))
                }
            };
        };
        if let Some(position) = values
            .iter()
            .position(|v| v.name.eq_ignore_ascii_case(&column.name))
        {
            return Ok(Annotation::Column(position));
        }
        if tensor
            .dims()
            .iter()
            .any(|d| d.name.eq_ignore_ascii_case(&column.name))
        {
            return Err(self.error(
                &column.span,
                Error::Invalid(format!(
                    "'{}' is a dimension of '{name}', not a value column",
                    column.name
                )),
            ));
        }
        Err(self.error(
            &column.span,
            Error::unknown(
                "Column",
                &column.name,
                values.iter().map(|v| v.name.as_str()),
            ),
        ))
    }

    /// Records that `var` indexes dimension `dim` of tensor `tensor`, and
    /// checks it against the index's earlier uses.
    fn use_index(
        &mut self,
        var: &Name,
        tensor: &str,
        dim: &crate::storage::Dimension,
    ) -> Result<()> {
        let origin = format!("'{tensor}' (dimension {})", dim.name);
        let Some(domain) = self.domains.get(&var.name) else {
            self.domains.insert(
                var.name.clone(),
                Domain {
                    size: dim.size,
                    dictionary: dim.dictionary.clone(),
                    origin,
                    first_use: var.span.clone(),
                },
            );
            return Ok(());
        };
        let same_keys = match (&domain.dictionary, &dim.dictionary) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a.strings() == b.strings(),
            _ => false,
        };
        if !same_keys {
            return Err(self.error(
                &var.span,
                Error::Invalid(format!(
                    "index '{}' joins keys of {} with different keys of {origin}",
                    var.name, domain.origin
                )),
            ));
        }
        // Integer dimensions of different sizes (SQL sizes a dimension by
        // its largest key) join: the index ranges over the largest.
        if let Some(domain) = self.domains.get_mut(&var.name) {
            domain.size = domain.size.max(dim.size);
        }
        Ok(())
    }
}
