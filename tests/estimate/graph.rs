//! A minimal reader of the subgraph-matching `.graph` format (`t N M`,
//! `v id label degree`, `e u v [label]`), shared by the estimator tests and
//! the estimator benchmark, with the graphs as einsql tensors and queries
//! as IR expressions.

use std::path::Path;
use std::sync::Arc;

use einsql::ir::{Annotation, Expr, IndexTerm, Input, ScalarOp, TensorRef};
use einsql::storage::{Coo, DimensionSpec, Tensor};
use einsql::{Error, Result};

/// A graph: each vertex's label and the undirected edges.
pub struct Graph {
    pub labels: Vec<i64>,
    pub edges: Vec<(i64, i64)>,
}

/// Reads a `.graph` file.
pub fn read(path: &Path) -> Result<Graph> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut graph = Graph {
        labels: Vec::new(),
        edges: Vec::new(),
    };
    for (k, line) in text.lines().enumerate() {
        let bad = |message: &str| Error::FileFormat {
            path: path.to_path_buf(),
            line: k as u64 + 1,
            message: message.to_string(),
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize| -> Result<i64> {
            fields
                .get(i)
                .and_then(|f| f.parse().ok())
                .ok_or_else(|| bad("expected a number"))
        };
        match fields.first() {
            Some(&"v") => {
                let id = usize::try_from(number(1)?).map_err(|_| bad("negative vertex id"))?;
                if id != graph.labels.len() {
                    return Err(bad("vertex ids must count up from 0"));
                }
                graph.labels.push(number(2)?);
            }
            Some(&"e") => graph.edges.push((number(1)?, number(2)?)),
            Some(&"t") | None => {}
            Some(_) => return Err(bad("expected a 't', 'v' or 'e' line")),
        }
    }
    Ok(graph)
}

fn keyed(name: &str, sizes: [u64; 2], coords: Vec<Vec<i64>>) -> Result<TensorRef> {
    let tensor = Tensor::from_coo(Coo {
        dims: vec![
            DimensionSpec::new("a", Some(sizes[0])),
            DimensionSpec::new("b", Some(sizes[1])),
        ],
        coords,
        values: Vec::new(),
        column_order: None,
    })?;
    Ok(TensorRef {
        name: name.to_string(),
        tensor: Arc::new(tensor),
    })
}

/// The data graph as tensors: `edges[src, dst]` with both directions of
/// every edge, and `labels[vertex, label]`.
pub struct DataGraph {
    pub edges: TensorRef,
    pub labels: TensorRef,
}

impl DataGraph {
    pub fn new(graph: &Graph) -> Result<DataGraph> {
        let n = graph.labels.len() as u64;
        let (src, dst): (Vec<i64>, Vec<i64>) = graph
            .edges
            .iter()
            .flat_map(|&(u, v)| [(u, v), (v, u)])
            .unzip();
        let label_count = graph.labels.iter().max().map_or(1, |&l| l as u64 + 1);
        Ok(DataGraph {
            edges: keyed("edges", [n, n], vec![src, dst])?,
            labels: keyed(
                "labels",
                [n, label_count],
                vec![(0..n as i64).collect(), graph.labels.clone()],
            )?,
        })
    }

    fn input(tensor: &TensorRef, terms: Vec<IndexTerm>) -> Expr {
        Expr::Input(Input {
            tensor: tensor.clone(),
            annotation: Annotation::Multiplicity,
            indices: terms,
        })
    }

    /// The join of a query graph: one `edges` factor per query edge and,
    /// if `labelled`, one `labels[v, label]` factor per query vertex. Its
    /// entries are the (label-preserving) homomorphisms.
    pub fn join(&self, query: &Graph, labelled: bool) -> Expr {
        let var = |v: i64| IndexTerm::Var(format!("v{v}"));
        let mut factors: Vec<Expr> = query
            .edges
            .iter()
            .map(|&(u, v)| Self::input(&self.edges, vec![var(u), var(v)]))
            .collect();
        if labelled {
            factors.extend(query.labels.iter().enumerate().map(|(v, &l)| {
                Self::input(&self.labels, vec![var(v as i64), IndexTerm::Const(l)])
            }));
        }
        Expr::map(ScalarOp::Mul, factors)
    }
}
