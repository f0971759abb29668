//! The `FROM` clause of a query as index variables: every key column of
//! every table occurrence starts as its own variable, `WHERE` and `ON`
//! equalities between key columns unify them (a union-find), and equalities
//! with constants bind them. Once the conditions are in, [`Scope::finish`]
//! names one index variable per class (after its first column: `src`,
//! `dst`, `dst_2`), gives it the largest size of its columns, and re-codes
//! string keys when the joined columns have different dictionaries, so that
//! equal strings get equal coordinates.
//!
//! Column names resolve here, with "did you mean" for unknown tables and
//! columns and an error for ambiguous bare names.

use std::sync::Arc;

use hashbrown::{HashMap, HashSet};

use crate::error::{Error, Result};
use crate::ir::{Annotation, Expr, IndexTerm, Input, TensorRef};
use crate::storage::{ColumnRef, Coo, Dictionary, DimensionSpec, Tensor};

/// A table as it appears in `FROM`, under its alias.
pub struct Occurrence {
    /// The name that qualifies its columns (the alias, else the table name).
    pub alias: String,
    /// The table (re-coded by [`Scope::finish`] if a string join needs it).
    pub table: TensorRef,
    /// The variable slot of each dimension.
    slots: Vec<usize>,
}

/// A column that a name resolved to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// A key column: dimension `dim` of occurrence `occurrence`.
    Key { occurrence: usize, dim: usize },
    /// A value column of occurrence `occurrence`.
    Value { occurrence: usize, column: usize },
}

/// What an equality binds a class to.
#[derive(Clone, Debug, PartialEq)]
pub enum Constant {
    /// An integer coordinate.
    Int(i64),
    /// A string key, coded once the dictionary is known.
    Str(String),
}

/// The index variables of a query.
#[derive(Default)]
pub struct Scope {
    /// The tables, in `FROM` order.
    pub occurrences: Vec<Occurrence>,
    /// Union-find parent of each slot.
    parent: Vec<usize>,
    /// The constant each class root is bound to.
    constants: Vec<Option<Constant>>,
    /// Set when two different constants bind one class: no row matches.
    contradiction: bool,
    /// Filled by `finish`.
    classes: Vec<Class>,
    /// The class of each slot root, filled by `finish`.
    class_of: Vec<usize>,
}

/// One index variable (or constant) after `finish`.
#[derive(Clone, Debug)]
pub struct Class {
    /// The variable's name in the IR.
    pub name: String,
    /// The constant coordinate it is bound to, if any.
    pub constant: Option<i64>,
    /// Whether a bound string constant is absent from the dictionary (no
    /// row can match).
    pub unmatched: bool,
    /// The largest size of its columns.
    pub size: u64,
    /// The dictionary of its string keys.
    pub dictionary: Option<Arc<Dictionary>>,
}

impl Scope {
    /// Adds `table` under `alias`; an alias used twice is an error.
    pub fn add(&mut self, alias: &str, table: TensorRef) -> Result<()> {
        if self
            .occurrences
            .iter()
            .any(|o| o.alias.eq_ignore_ascii_case(alias))
        {
            return Err(Error::Invalid(format!(
                "the name '{alias}' is used for two tables in FROM; give one an alias"
            )));
        }
        let slots = (0..table.tensor.dims().len())
            .map(|_| {
                self.parent.push(self.parent.len());
                self.constants.push(None);
                self.parent.len() - 1
            })
            .collect();
        self.occurrences.push(Occurrence {
            alias: alias.to_string(),
            table,
            slots,
        });
        Ok(())
    }

    /// Resolves `qualifier.name` or a bare `name`.
    pub fn resolve(&self, qualifier: Option<&str>, name: &str) -> Result<Column> {
        let Some(qualifier) = qualifier else {
            let hits: Vec<(usize, Column)> = self
                .occurrences
                .iter()
                .enumerate()
                .filter_map(|(n, o)| column_of(n, &o.table.tensor, name).map(|c| (n, c)))
                .collect();
            return match hits.as_slice() {
                [(_, column)] => Ok(*column),
                [] => Err(Error::unknown(
                    "Column",
                    name,
                    self.occurrences
                        .iter()
                        .flat_map(|o| column_names(&o.table.tensor)),
                )),
                several => {
                    let options: Vec<String> = several
                        .iter()
                        .map(|(n, _)| format!("{}.{name}", self.occurrences[*n].alias))
                        .collect();
                    Err(Error::Invalid(format!(
                        "column reference '{name}' is ambiguous: it could be {}",
                        options.join(" or ")
                    )))
                }
            };
        };
        let (n, occurrence) = self
            .occurrences
            .iter()
            .enumerate()
            .find(|(_, o)| o.alias.eq_ignore_ascii_case(qualifier))
            .ok_or_else(|| {
                Error::unknown(
                    "Table",
                    qualifier,
                    self.occurrences.iter().map(|o| o.alias.as_str()),
                )
            })?;
        column_of(n, &occurrence.table.tensor, name).ok_or_else(|| {
            let qualified: Vec<String> = column_names(&occurrence.table.tensor)
                .map(|c| format!("{qualifier}.{c}"))
                .collect();
            Error::unknown(
                "Column",
                &format!("{qualifier}.{name}"),
                qualified.iter().map(String::as_str),
            )
        })
    }

    /// The columns of every occurrence (or of the one named `qualifier`),
    /// as `SELECT *` lists them, with their names.
    pub fn star(&self, qualifier: Option<&str>) -> Result<Vec<(String, Column)>> {
        let mut columns = Vec::new();
        for (n, occurrence) in self.occurrences.iter().enumerate() {
            if qualifier.is_some_and(|q| !occurrence.alias.eq_ignore_ascii_case(q)) {
                continue;
            }
            let tensor = &occurrence.table.tensor;
            for &column in tensor.column_order() {
                let name = tensor.column_name(column).to_string();
                let column = match column {
                    ColumnRef::Key(dim) => Column::Key { occurrence: n, dim },
                    ColumnRef::Value(column) => Column::Value {
                        occurrence: n,
                        column,
                    },
                };
                columns.push((name, column));
            }
        }
        if let (Some(q), true) = (qualifier, columns.is_empty()) {
            return Err(Error::unknown(
                "Table",
                q,
                self.occurrences.iter().map(|o| o.alias.as_str()),
            ));
        }
        Ok(columns)
    }

    /// The dimension a key column is.
    pub fn dimension(&self, occurrence: usize, dim: usize) -> &crate::storage::Dimension {
        &self.occurrences[occurrence].table.tensor.dims()[dim]
    }

    fn root(&self, mut slot: usize) -> usize {
        while self.parent[slot] != slot {
            slot = self.parent[slot];
        }
        slot
    }

    /// Unifies two key columns (`a.x = b.y`); their types must agree.
    pub fn unify(&mut self, a: (usize, usize), b: (usize, usize)) -> Result<()> {
        let (da, db) = (self.dimension(a.0, a.1), self.dimension(b.0, b.1));
        if da.dictionary.is_some() != db.dictionary.is_some() {
            return Err(Error::Type(format!(
                "cannot compare {}.{} ({}) with {}.{} ({})",
                self.occurrences[a.0].alias,
                da.name,
                key_type(da),
                self.occurrences[b.0].alias,
                db.name,
                key_type(db)
            )));
        }
        let ra = self.root(self.occurrences[a.0].slots[a.1]);
        let rb = self.root(self.occurrences[b.0].slots[b.1]);
        if ra == rb {
            return Ok(());
        }
        let (keep, gone) = (ra.min(rb), ra.max(rb));
        self.parent[gone] = keep;
        match (self.constants[keep].clone(), self.constants[gone].take()) {
            (Some(x), Some(y)) if x != y => self.contradiction = true,
            (None, Some(y)) => self.constants[keep] = Some(y),
            _ => {}
        }
        Ok(())
    }

    /// Binds a key column to a constant (`l.label = 12`).
    pub fn bind(&mut self, key: (usize, usize), constant: Constant) -> Result<()> {
        let dim = self.dimension(key.0, key.1);
        let fits = matches!(
            (&constant, &dim.dictionary),
            (Constant::Int(_), None) | (Constant::Str(_), Some(_))
        );
        if !fits {
            let shown = match &constant {
                Constant::Int(i) => format!("the number {i}"),
                Constant::Str(s) => format!("the string '{s}'"),
            };
            return Err(Error::Type(format!(
                "cannot compare {}.{} ({}) with {shown}",
                self.occurrences[key.0].alias,
                dim.name,
                key_type(dim)
            )));
        }
        let root = self.root(self.occurrences[key.0].slots[key.1]);
        match &self.constants[root] {
            Some(existing) if *existing != constant => self.contradiction = true,
            _ => self.constants[root] = Some(constant),
        }
        Ok(())
    }

    /// Whether two different constants bind one class, or a bound
    /// constant matches no key: the query has no rows.
    pub fn is_empty(&self) -> bool {
        self.contradiction || self.classes.iter().any(|c| c.unmatched)
    }

    /// Names the classes, re-codes string joins and resolves string
    /// constants. Call once, after every condition is in.
    pub fn finish(&mut self) -> Result<()> {
        let mut class_of = vec![usize::MAX; self.parent.len()];
        let mut members: Vec<Vec<(usize, usize)>> = Vec::new();
        for (n, occurrence) in self.occurrences.iter().enumerate() {
            for (dim, &slot) in occurrence.slots.iter().enumerate() {
                let root = self.root(slot);
                if class_of[root] == usize::MAX {
                    class_of[root] = members.len();
                    members.push(Vec::new());
                }
                members[class_of[root]].push((n, dim));
            }
        }
        let mut recode: Vec<Vec<(usize, Arc<Dictionary>)>> =
            vec![Vec::new(); self.occurrences.len()];
        let mut classes = Vec::new();
        // The names taken (lower case), and per base name the suffix to
        // try next: every suffix below it is taken already.
        let mut taken: HashSet<String> = HashSet::new();
        let mut suffixes: HashMap<String, usize> = HashMap::new();
        for columns in &members {
            let (first_occurrence, first_dim) = columns[0];
            let base = self.dimension(first_occurrence, first_dim).name.clone();
            let mut name = base.clone();
            if taken.contains(&name.to_ascii_lowercase()) {
                let suffix = suffixes.entry(base.to_ascii_lowercase()).or_insert(2);
                loop {
                    name = format!("{base}_{suffix}");
                    *suffix += 1;
                    if !taken.contains(&name.to_ascii_lowercase()) {
                        break;
                    }
                }
            }
            taken.insert(name.to_ascii_lowercase());
            let dims: Vec<&crate::storage::Dimension> =
                columns.iter().map(|&(o, d)| self.dimension(o, d)).collect();
            let dictionary = merged_dictionary(&dims);
            let size = match &dictionary {
                Some(d) => d.len() as u64,
                None => dims.iter().map(|d| d.size).max().unwrap_or(0),
            };
            if let Some(merged) = &dictionary {
                for (&(o, d), dim) in columns.iter().zip(&dims) {
                    let same = dim
                        .dictionary
                        .as_ref()
                        .is_some_and(|own| Arc::ptr_eq(own, merged));
                    if !same {
                        recode[o].push((d, Arc::clone(merged)));
                    }
                }
            }
            let root = self.root(self.occurrences[first_occurrence].slots[first_dim]);
            let (constant, unmatched) = match (&self.constants[root], &dictionary) {
                (Some(Constant::Int(i)), _) => (Some(*i), false),
                (Some(Constant::Str(s)), Some(d)) => match d.code(s) {
                    Some(code) => (Some(code), false),
                    None => (Some(0), true),
                },
                _ => (None, false),
            };
            classes.push(Class {
                name,
                constant,
                unmatched,
                size,
                dictionary,
            });
        }
        for (occurrence, changes) in recode.into_iter().enumerate() {
            if !changes.is_empty() {
                let table = &mut self.occurrences[occurrence].table;
                table.tensor = Arc::new(recoded(&table.tensor, &changes)?);
            }
        }
        self.class_of = (0..self.parent.len())
            .map(|slot| class_of[self.root(slot)])
            .collect();
        self.classes = classes;
        Ok(())
    }

    /// The classes (after `finish`), in order of first appearance.
    pub fn classes(&self) -> &[Class] {
        &self.classes
    }

    /// The class of a key column (after `finish`).
    pub fn class(&self, occurrence: usize, dim: usize) -> usize {
        self.class_of[self.occurrences[occurrence].slots[dim]]
    }

    /// The IR term of a key column: its variable, or its constant.
    pub fn term(&self, occurrence: usize, dim: usize) -> IndexTerm {
        let class = &self.classes[self.class(occurrence, dim)];
        match class.constant {
            Some(c) => IndexTerm::Const(c),
            None => IndexTerm::Var(class.name.clone()),
        }
    }

    /// `table.annotation[terms]` of an occurrence.
    pub fn input(&self, occurrence: usize, annotation: Annotation) -> Expr {
        let o = &self.occurrences[occurrence];
        Expr::Input(Input {
            tensor: o.table.clone(),
            annotation,
            indices: (0..o.slots.len())
                .map(|d| self.term(occurrence, d))
                .collect(),
        })
    }

    /// The row count of an occurrence at its coordinates: a bag's
    /// multiplicity, or 1 for a keyed table's rows.
    pub fn presence(&self, occurrence: usize) -> Expr {
        self.input(occurrence, Annotation::Multiplicity)
    }

    /// The occurrences in the order the IR multiplies their row counts: a
    /// left-deep join order for evaluators that join left to right (the
    /// optimizer chooses its own). It starts with the table with the fewest
    /// rows after its constants, then repeatedly takes the table sharing the
    /// most variables with those before it (fewest rows, then `FROM` order,
    /// breaking ties).
    pub fn join_order(&self) -> Vec<usize> {
        let n = self.occurrences.len();
        let vars: Vec<Vec<usize>> = (0..n)
            .map(|o| {
                (0..self.occurrences[o].slots.len())
                    .map(|d| self.class(o, d))
                    .filter(|&c| self.classes[c].constant.is_none())
                    .collect()
            })
            .collect();
        let rows: Vec<f64> = (0..n)
            .map(|o| {
                let tensor = &self.occurrences[o].table.tensor;
                let fixed: f64 = (0..tensor.dims().len())
                    .filter(|&d| self.classes[self.class(o, d)].constant.is_some())
                    .map(|d| tensor.dims()[d].size.max(1) as f64)
                    .product();
                tensor.nnz() as f64 / fixed
            })
            .collect();
        let mut order: Vec<usize> = Vec::with_capacity(n);
        let mut taken = vec![false; n];
        let mut bound = vec![false; self.classes.len()];
        while order.len() < n {
            let shared = |o: usize| vars[o].iter().filter(|&&v| bound[v]).count();
            let Some(next) = (0..n).filter(|&o| !taken[o]).max_by(|&a, &b| {
                shared(a)
                    .cmp(&shared(b))
                    .then(rows[b].total_cmp(&rows[a]))
                    .then(b.cmp(&a))
            }) else {
                break;
            };
            for &v in &vars[next] {
                bound[v] = true;
            }
            taken[next] = true;
            order.push(next);
        }
        order
    }

    /// The variables (classes not bound to constants), in order.
    pub fn variables(&self) -> Vec<usize> {
        (0..self.classes.len())
            .filter(|&c| self.classes[c].constant.is_none())
            .collect()
    }
}

/// The column of `tensor` called `name` (case-insensitive).
fn column_of(occurrence: usize, tensor: &Tensor, name: &str) -> Option<Column> {
    if let Some(dim) = tensor
        .dims()
        .iter()
        .position(|d| d.name.eq_ignore_ascii_case(name))
    {
        return Some(Column::Key { occurrence, dim });
    }
    tensor
        .values()
        .iter()
        .position(|v| v.name.eq_ignore_ascii_case(name))
        .map(|column| Column::Value { occurrence, column })
}

fn column_names(tensor: &Tensor) -> impl Iterator<Item = &str> {
    tensor
        .dims()
        .iter()
        .map(|d| d.name.as_str())
        .chain(tensor.values().iter().map(|v| v.name.as_str()))
}

fn key_type(dim: &crate::storage::Dimension) -> &'static str {
    if dim.dictionary.is_some() {
        "VARCHAR"
    } else {
        "BIGINT"
    }
}

/// The dictionary of a class of string columns: the one they share, or the
/// sorted union of theirs when they differ; `None` for integer keys.
fn merged_dictionary(dims: &[&crate::storage::Dimension]) -> Option<Arc<Dictionary>> {
    let first = dims.first()?.dictionary.as_ref()?;
    let all_same = dims.iter().all(|d| {
        d.dictionary
            .as_ref()
            .is_some_and(|x| Arc::ptr_eq(x, first) || x.strings() == first.strings())
    });
    if all_same {
        return Some(Arc::clone(first));
    }
    let mut strings: Vec<String> = dims
        .iter()
        .filter_map(|d| d.dictionary.as_ref())
        .flat_map(|d| d.strings().iter().cloned())
        .collect();
    strings.sort_unstable();
    strings.dedup();
    Some(Arc::new(Dictionary::from_sorted(strings)))
}

/// A copy of `tensor` whose listed dimensions use the given (larger)
/// dictionaries.
fn recoded(tensor: &Tensor, changes: &[(usize, Arc<Dictionary>)]) -> Result<Tensor> {
    let mut coo: Coo = tensor.to_coo();
    for (dim, dictionary) in changes {
        let old = tensor.dims()[*dim].dictionary.as_ref();
        let coords = &mut coo.coords[*dim];
        for c in coords.iter_mut() {
            let string = old.and_then(|d| d.string(*c)).unwrap_or_default();
            *c = dictionary.code(string).ok_or_else(|| {
                Error::Invalid(format!(
                    "the key '{string}' is missing from a merged dictionary"
                ))
            })?;
        }
        coo.dims[*dim] = DimensionSpec {
            name: coo.dims[*dim].name.clone(),
            size: Some(dictionary.len() as u64),
            dictionary: Some(Arc::clone(dictionary)),
        };
    }
    Tensor::from_coo(coo)
}
