//! Labelled graph files: the Sun & Luo format of the subgraph-counting
//! datasets (`../shared/datasets/subgraph`) and the G-CARE formats.
//!
//! [`QueryGraph::read`] parses a query graph or a data graph;
//! [`QueryGraph::tensors`] turns a data graph into the two bags that
//! subgraph-counting queries join: `edges(src, dst, label)` (both directions
//! of every undirected edge) and `labels(vertex, label)`.

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::{Error, Result};
use crate::storage::{Coo, DimensionSpec, Tensor};

/// A vertex of a [`QueryGraph`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vertex {
    /// The labels a matching data vertex must all carry (empty: any vertex
    /// matches); the parser keeps them sorted and distinct.
    pub labels: Vec<i64>,
    /// The data vertex this query vertex must map to (G-CARE's `dvid`).
    pub bound: Option<u64>,
}

/// An undirected, labelled edge of a [`QueryGraph`] between two vertex ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    /// One end.
    pub src: usize,
    /// The other end.
    pub dst: usize,
    /// The edge label (0 in the Sun & Luo files).
    pub label: i64,
}

/// A query graph or a data graph: vertices with zero or more labels each
/// (vertex ids are positions in `vertices`) and undirected labelled edges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryGraph {
    /// The vertices, by id.
    pub vertices: Vec<Vertex>,
    /// The edges, in file order.
    pub edges: Vec<Edge>,
}

/// Which dialect a graph file is written in, from its `t` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// `t N M`, `v id label degree`, `e u v [elabel]`.
    SunLuo { vertices: u64, edges: u64 },
    /// `t # s id`, `v id label dvid`, `e src dst elabel`.
    GcareQuery,
    /// `t # id`, `v id [label ...]`, `e src dst elabel [elabel ...]`.
    GcareData,
}

impl QueryGraph {
    /// Reads a graph file in either format (see [`QueryGraph::parse`]).
    pub fn read(path: impl AsRef<Path>) -> Result<QueryGraph> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        Parser::new(path).run(BufReader::new(file))
    }

    /// Parses the text of a graph file; `path` names it in errors.
    ///
    /// The first line says the format. Sun & Luo: `t N M` (vertex and edge
    /// counts), then `v id label degree` per vertex and `e u v [elabel]`
    /// per undirected edge (the edge label defaults to 0). G-CARE (the
    /// `yspark-dblab/gcare` reader, `QueryGraph::ReadText` and
    /// `DataGraph::ReadText`): a query starts with `t # s id` and has
    /// `v id label dvid`, where label -1 means "any label" and dvid -1
    /// means "not bound" (a dvid of 0 or more pins the query vertex to that
    /// data vertex), and `e src dst elabel`; a data graph starts with
    /// `t # id` and has `v id l1 l2 ...` (zero or more labels; negative
    /// labels are skipped, as G-CARE does) and `e src dst el1 el2 ...`
    /// (one edge per label). Vertex ids must count up from 0 in order, and
    /// edges may only name vertices listed before them.
    ///
    /// Errors name the file, the 1-based line and the problem.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<QueryGraph> {
        Parser::new(path.as_ref()).run(text.as_bytes())
    }
}

/// The line-by-line reader of [`QueryGraph::parse`].
struct Parser<'a> {
    path: &'a Path,
    line: u64,
    format: Option<Format>,
    graph: QueryGraph,
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path) -> Parser<'a> {
        Parser {
            path,
            line: 0,
            format: None,
            graph: QueryGraph::default(),
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::file_format(self.path, self.line, message)
    }

    fn run(mut self, mut input: impl BufRead) -> Result<QueryGraph> {
        let mut buffer = String::new();
        loop {
            buffer.clear();
            let read = input
                .read_line(&mut buffer)
                .map_err(|e| Error::io(self.path, e))?;
            if read == 0 {
                break;
            }
            self.line += 1;
            let fields: Vec<&str> = buffer.split_whitespace().collect();
            match fields.split_first() {
                None => {}
                Some((&"t", rest)) => self.header(rest)?,
                Some((&"v", rest)) => self.vertex(rest)?,
                Some((&"e", rest)) => self.edge(rest)?,
                Some((kind, _)) => {
                    return Err(self.error(format!(
                        "unknown line kind '{kind}': expected 't', 'v' or 'e'"
                    )));
                }
            }
        }
        self.finish()
    }

    fn header(&mut self, fields: &[&str]) -> Result<()> {
        if self.format.is_some() {
            return Err(self.error("a second 't' header line"));
        }
        let format = match fields {
            ["#", "s", id] => {
                self.number::<i64>(id, "query id")?;
                Format::GcareQuery
            }
            ["#", id] => {
                self.number::<i64>(id, "graph id")?;
                Format::GcareData
            }
            [vertices, edges] => Format::SunLuo {
                vertices: self.number(vertices, "vertex count")?,
                edges: self.number(edges, "edge count")?,
            },
            _ => {
                return Err(self.error(
                    "expected a header 't N M' (Sun & Luo), 't # s ID' (G-CARE query) \
                     or 't # ID' (G-CARE data graph)",
                ));
            }
        };
        self.format = Some(format);
        Ok(())
    }

    fn format(&self) -> Result<Format> {
        self.format
            .ok_or_else(|| self.error("expected the 't' header line before vertices and edges"))
    }

    fn vertex(&mut self, fields: &[&str]) -> Result<()> {
        let format = self.format()?;
        let Some((id, rest)) = fields.split_first() else {
            return Err(self.error("a vertex line needs an id: 'v id ...'"));
        };
        let id: usize = self.number(id, "vertex id")?;
        if id != self.graph.vertices.len() {
            return Err(self.error(format!(
                "vertex id {id} out of order: expected {}",
                self.graph.vertices.len()
            )));
        }
        let vertex = match (format, rest) {
            (Format::SunLuo { .. }, [label, degree]) => {
                self.number::<u64>(degree, "degree")?;
                Vertex {
                    labels: vec![self.label(label)?],
                    bound: None,
                }
            }
            (Format::SunLuo { .. }, _) => {
                return Err(self.error("expected 'v id label degree'"));
            }
            (Format::GcareQuery, [label, dvid]) => {
                let label: i64 = self.number(label, "vertex label")?;
                let dvid: i64 = self.number(dvid, "data vertex id (dvid)")?;
                Vertex {
                    labels: match label {
                        -1 => Vec::new(),
                        l if l >= 0 => vec![l],
                        l => {
                            return Err(
                                self.error(format!("vertex label {l}: expected -1 or more"))
                            );
                        }
                    },
                    bound: match u64::try_from(dvid) {
                        Ok(v) => Some(v),
                        Err(_) if dvid == -1 => None,
                        Err(_) => {
                            return Err(self.error(format!("dvid {dvid}: expected -1 or more")));
                        }
                    },
                }
            }
            (Format::GcareQuery, _) => {
                return Err(self.error("expected 'v id label dvid'"));
            }
            (Format::GcareData, labels) => {
                let mut kept = Vec::with_capacity(labels.len());
                for label in labels {
                    let label: i64 = self.number(label, "vertex label")?;
                    if label >= 0 {
                        kept.push(label);
                    }
                }
                kept.sort_unstable();
                kept.dedup();
                Vertex {
                    labels: kept,
                    bound: None,
                }
            }
        };
        self.graph.vertices.push(vertex);
        Ok(())
    }

    fn edge(&mut self, fields: &[&str]) -> Result<()> {
        let format = self.format()?;
        let (ends, labels) = match (format, fields) {
            (Format::SunLuo { .. }, [u, v]) => ([*u, *v], &[][..]),
            (Format::SunLuo { .. }, [u, v, label]) => ([*u, *v], std::slice::from_ref(label)),
            (Format::SunLuo { .. }, _) => {
                return Err(self.error("expected 'e u v' or 'e u v label'"));
            }
            (Format::GcareQuery, [u, v, label]) => ([*u, *v], std::slice::from_ref(label)),
            (Format::GcareQuery, _) => return Err(self.error("expected 'e src dst elabel'")),
            (Format::GcareData, [u, v, labels @ ..]) if !labels.is_empty() => ([*u, *v], labels),
            (Format::GcareData, _) => {
                return Err(self.error("expected 'e src dst elabel [elabel ...]'"));
            }
        };
        let [src, dst] = [self.endpoint(ends[0])?, self.endpoint(ends[1])?];
        if labels.is_empty() {
            self.graph.edges.push(Edge { src, dst, label: 0 });
        }
        for label in labels {
            let label = self.label(label)?;
            self.graph.edges.push(Edge { src, dst, label });
        }
        Ok(())
    }

    fn endpoint(&self, field: &str) -> Result<usize> {
        let id: usize = self.number(field, "vertex id")?;
        if id >= self.graph.vertices.len() {
            return Err(self.error(format!(
                "edge names vertex {id}, but only {} vertices are listed before this line",
                self.graph.vertices.len()
            )));
        }
        Ok(id)
    }

    fn label(&self, field: &str) -> Result<i64> {
        let label: i64 = self.number(field, "label")?;
        if label < 0 {
            return Err(self.error(format!("label {label} is negative")));
        }
        Ok(label)
    }

    fn number<T: std::str::FromStr>(&self, field: &str, what: &str) -> Result<T> {
        field
            .parse()
            .map_err(|_| self.error(format!("'{field}' is not a valid {what}")))
    }

    fn finish(self) -> Result<QueryGraph> {
        let Some(format) = self.format else {
            return Err(Error::file_format(
                self.path,
                1,
                "empty file: expected a 't' header line",
            ));
        };
        if let Format::SunLuo { vertices, edges } = format {
            let (found_vertices, found_edges) = (
                self.graph.vertices.len() as u64,
                self.graph.edges.len() as u64,
            );
            if (found_vertices, found_edges) != (vertices, edges) {
                return Err(Error::file_format(
                    self.path,
                    1,
                    format!(
                        "the header declares {vertices} vertices and {edges} edges, \
                         the file has {found_vertices} and {found_edges}"
                    ),
                ));
            }
        }
        Ok(self.graph)
    }
}

impl QueryGraph {
    /// The data graph as two bags: `edges(src, dst, label)` with both
    /// directions of every edge, and `labels(vertex, label)` with one row
    /// per label of every vertex. Repeated edges and labels are stored once
    /// (the graph is a set), so counts over them are homomorphism counts.
    /// `src`, `dst` and `vertex` all have the number of vertices as their
    /// size, and both `label` dimensions the largest label + 1, so
    /// statements joining the two tables bind.
    pub fn tensors(&self) -> Result<(Tensor, Tensor)> {
        let graph = self;
        let vertices = graph.vertices.len() as u64;
        let max_label = graph
            .vertices
            .iter()
            .flat_map(|v| v.labels.iter().copied())
            .chain(graph.edges.iter().map(|e| e.label))
            .max()
            .unwrap_or(0);
        let label_size = u64::try_from(max_label)
            .ok()
            .and_then(|m| m.checked_add(1))
            .ok_or_else(|| Error::Invalid(format!("label {max_label} is out of range")))?;
        let coordinate = |id: usize| {
            i64::try_from(id).map_err(|_| Error::Invalid(format!("vertex id {id} is out of range")))
        };

        let mut directed: Vec<[i64; 3]> = Vec::with_capacity(graph.edges.len() * 2);
        for edge in &graph.edges {
            let (src, dst) = (coordinate(edge.src)?, coordinate(edge.dst)?);
            directed.push([src, dst, edge.label]);
            directed.push([dst, src, edge.label]);
        }
        directed.sort_unstable();
        directed.dedup();
        let edges = Tensor::from_coo(Coo {
            dims: vec![
                DimensionSpec::new("src", Some(vertices)),
                DimensionSpec::new("dst", Some(vertices)),
                DimensionSpec::new("label", Some(label_size)),
            ],
            coords: (0..3)
                .map(|d| directed.iter().map(|row| row[d]).collect())
                .collect(),
            values: Vec::new(),
            column_order: None,
        })?;

        let mut vertex_column = Vec::new();
        let mut label_column = Vec::new();
        for (id, vertex) in graph.vertices.iter().enumerate() {
            let id = coordinate(id)?;
            let mut labels = vertex.labels.clone();
            labels.sort_unstable();
            labels.dedup();
            for label in labels {
                vertex_column.push(id);
                label_column.push(label);
            }
        }
        let labels = Tensor::from_coo(Coo {
            dims: vec![
                DimensionSpec::new("vertex", Some(vertices)),
                DimensionSpec::new("label", Some(label_size)),
            ],
            coords: vec![vertex_column, label_column],
            values: Vec::new(),
            column_order: None,
        })?;
        Ok((edges, labels))
    }
}
