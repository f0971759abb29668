//! Subgraph counting: graph files in, SQL and einsum queries out.
//!
//! The front door of the subgraph-counting tests and benchmarks (Galley
//! section 8.2). [`QueryGraph::read`] parses a query or data graph in the
//! Sun & Luo format of `../shared/datasets/subgraph` or in the G-CARE
//! format; [`load_data_graph`] stores a data graph in a [`Database`] as the
//! two bags `edges(src, dst, label)` (both directions of every undirected
//! edge) and `labels(vertex, label)`; [`to_sql`] and [`to_einsum`] turn a
//! query graph into one statement that counts its homomorphisms into the
//! data graph (vertex labels must match, edge labels must match). Both
//! statements then go through the ordinary front-ends, so SQL and tensor
//! index notation are compared on the same question. [`read_truth`] reads
//! the known counts of the `truth/` folders.

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::Database;
use crate::error::{Error, Result};
use crate::storage::{Coo, DimensionSpec, Tensor};

/// The table of directed edges: `edges(src, dst, label)`.
pub const EDGES_TABLE: &str = "edges";
/// The table of vertex labels: `labels(vertex, label)`.
pub const LABELS_TABLE: &str = "labels";

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

/// A known count from a `truth/` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truth {
    /// A count to compare against.
    Count(u64),
    /// A count at or above [`UNTRUSTED_FROM`]: the original computation
    /// overflowed its 64-bit counter there, so the number means nothing.
    Untrusted(u64),
}

impl Truth {
    /// The count, if it can be trusted.
    pub fn trusted(self) -> Option<u64> {
        match self {
            Truth::Count(n) => Some(n),
            Truth::Untrusted(_) => None,
        }
    }
}

/// Counts from 90% of `i64::MAX` (about 8.3e18) up are not trusted: the
/// datasets README warns that counts near 9.2e18 overflowed.
pub const UNTRUSTED_FROM: u64 = i64::MAX as u64 / 10 * 9;

/// Reads `path`, a `truth/<query file name>` file holding one integer.
/// `None` when the file does not exist (the count was never computed).
pub fn read_truth(path: impl AsRef<Path>) -> Result<Option<Truth>> {
    let path = path.as_ref();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut found = None;
    for (number, line) in (1u64..).zip(text.lines()) {
        for token in line.split_whitespace() {
            if found.is_some() {
                return Err(Error::file_format(
                    path,
                    number,
                    format!("unexpected '{token}' after the count"),
                ));
            }
            let count: u64 = token.parse().map_err(|_| {
                Error::file_format(path, number, format!("'{token}' is not a count"))
            })?;
            found = Some(count);
        }
    }
    match found {
        Some(n) if n >= UNTRUSTED_FROM => Ok(Some(Truth::Untrusted(n))),
        Some(n) => Ok(Some(Truth::Count(n))),
        None => Err(Error::file_format(path, 1, "empty file: expected a count")),
    }
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

    /// The edges touching each vertex, by index (a self-loop is listed once).
    fn incidence(&self) -> Vec<Vec<usize>> {
        let mut incident = vec![Vec::new(); self.vertices.len()];
        for (e, edge) in self.edges.iter().enumerate() {
            if let Some(list) = incident.get_mut(edge.src) {
                list.push(e);
            }
            if edge.dst != edge.src
                && let Some(list) = incident.get_mut(edge.dst)
            {
                list.push(e);
            }
        }
        incident
    }

    /// Checks that every edge names existing vertices and that every
    /// vertex can be expressed over the two tables: it needs an edge or a
    /// label, since no table lists every data vertex.
    fn check_expressible(&self) -> Result<()> {
        if self.vertices.is_empty() {
            return Err(Error::NotSupported(
                "a query graph without vertices has no SQL or einsum form".to_string(),
            ));
        }
        for edge in &self.edges {
            let end = edge.src.max(edge.dst);
            if end >= self.vertices.len() {
                return Err(Error::Invalid(format!(
                    "edge ({}, {}) names vertex {end}, but the query graph has {} vertices",
                    edge.src,
                    edge.dst,
                    self.vertices.len()
                )));
            }
        }
        let incident = self.incidence();
        for (id, (vertex, edges)) in self.vertices.iter().zip(&incident).enumerate() {
            if vertex.labels.is_empty() && edges.is_empty() {
                return Err(Error::NotSupported(format!(
                    "query vertex {id} has neither a label nor an edge; the relational form \
                     (edges, labels) has no table of all data vertices to range it over"
                )));
            }
        }
        Ok(())
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

/// Reads the data graph at `path` (either format) and stores it in `db`
/// (see [`load_data_graph`]).
pub fn load_data_file(db: &Database, path: impl AsRef<Path>) -> Result<QueryGraph> {
    let graph = QueryGraph::read(path)?;
    load_data_graph(db, &graph)?;
    Ok(graph)
}

/// Stores `graph` in `db` as two new bags (an error if either table exists):
/// [`EDGES_TABLE`] `(src, dst, label)` with both directions of every edge,
/// and [`LABELS_TABLE`] `(vertex, label)` with one row per label of every
/// vertex. Repeated edges and labels are stored once (the graph is a set),
/// so counts are homomorphism counts. `src`, `dst` and `vertex` all have the
/// number of vertices as their size, and both `label` dimensions the
/// largest label + 1, so einsum statements joining the two tables bind.
pub fn load_data_graph(db: &Database, graph: &QueryGraph) -> Result<()> {
    // Refuse before storing either table, so a clash leaves nothing behind.
    let existing = db.table_names();
    if let Some(name) = [EDGES_TABLE, LABELS_TABLE]
        .into_iter()
        .find(|name| existing.iter().any(|e| e.eq_ignore_ascii_case(name)))
    {
        return Err(Error::TableExists(name.to_string()));
    }
    let (edges, labels) = data_tensors(graph)?;
    db.create_table_from_tensor(EDGES_TABLE, edges)?;
    db.create_table_from_tensor(LABELS_TABLE, labels)
}

/// The `edges` and `labels` tensors of a data graph.
fn data_tensors(graph: &QueryGraph) -> Result<(Tensor, Tensor)> {
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

/// How a query vertex appears in a statement: an index variable, or the
/// data vertex it is bound to.
fn vertex_term(graph: &QueryGraph, id: usize) -> String {
    match graph.vertices.get(id).and_then(|v| v.bound) {
        Some(data_vertex) => data_vertex.to_string(),
        None => format!("v{id}"),
    }
}

/// The SQL text that counts the homomorphisms of `query` into the data
/// graph stored by [`load_data_graph`]: the relational form of the datasets
/// README,
///
/// ```text
/// SELECT COUNT(*) FROM edges e0, edges e1, labels l0, labels l1
/// WHERE e0.label = 0 AND e0.dst = e1.src AND e1.label = 0
///   AND l0.vertex = e0.src AND l0.label = 3 AND l1.vertex = e1.dst AND l1.label = 5
/// ```
///
/// (on one line): one `edges` row `eK` per query edge in file order (its
/// `src` and `dst` are the edge's two ends), one `labels` row per (vertex,
/// label) pair in vertex order. A vertex's first column stands for it;
/// every later column of the same vertex is equated to that one
/// (`e0.dst = e1.src`, `l0.vertex = e0.src`). A bound
/// vertex (G-CARE dvid) equates its first column to the data vertex id. A
/// vertex without edges is ranged over by its `labels` rows alone, so it
/// multiplies the count by the number of data vertices carrying its labels.
///
/// Errors: a query without vertices, an edge naming a missing vertex, and a
/// vertex with neither an edge nor a label ([`Error::NotSupported`]: no
/// table lists every data vertex).
pub fn to_sql(query: &QueryGraph) -> Result<String> {
    query.check_expressible()?;
    let mut from = Vec::new();
    let mut conjuncts = Vec::new();
    // The first column of each vertex, which stands for it.
    let mut first: Vec<Option<String>> = vec![None; query.vertices.len()];
    // The column standing for `vertex` before this one, if any; records
    // `column` (and its bound data vertex) when it is the first.
    let mut earlier = |vertex: usize, column: &str, conjuncts: &mut Vec<String>| {
        if first[vertex].is_none() {
            if let Some(data_vertex) = query.vertices[vertex].bound {
                conjuncts.push(format!("{column} = {data_vertex}"));
            }
            first[vertex] = Some(column.to_string());
            return None;
        }
        first[vertex].clone()
    };
    for (k, edge) in query.edges.iter().enumerate() {
        from.push(format!("{EDGES_TABLE} e{k}"));
        for (end, side) in [(edge.src, "src"), (edge.dst, "dst")] {
            let column = format!("e{k}.{side}");
            if let Some(representative) = earlier(end, &column, &mut conjuncts) {
                conjuncts.push(format!("{representative} = {column}"));
            }
        }
        conjuncts.push(format!("e{k}.label = {}", edge.label));
    }
    let mut k = 0;
    for (id, vertex) in query.vertices.iter().enumerate() {
        for label in &vertex.labels {
            from.push(format!("{LABELS_TABLE} l{k}"));
            let column = format!("l{k}.vertex");
            if let Some(representative) = earlier(id, &column, &mut conjuncts) {
                conjuncts.push(format!("{column} = {representative}"));
            }
            conjuncts.push(format!("l{k}.label = {label}"));
            k += 1;
        }
    }
    let mut sql = format!("SELECT COUNT(*) FROM {}", from.join(", "));
    if !conjuncts.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conjuncts.join(" AND "));
    }
    Ok(sql)
}

/// One factor of the einsum product.
enum Factor {
    /// `edges[a, b, label]`.
    Edge { a: usize, b: usize, label: i64 },
    /// `labels[vertex, label]`.
    Label { vertex: usize, label: i64 },
}

/// The same count as [`to_sql`] in tensor index notation, storing it as
/// the scalar `output`:
///
/// ```text
/// t = SUM(v0,v1,v2) labels[v0,3] * edges[v0,v1,0] * edges[v1,v2,0] * labels[v2,5];
/// ```
///
/// Query vertex `K` is the index `vK` (a bound vertex is its data vertex
/// id, a constant), and all indices are summed. The factors are ordered as
/// a join order for an evaluator that joins them left to right: vertices
/// are bound one at a time, starting from a labelled vertex of highest
/// degree and then always the vertex with the most edges to vertices
/// already bound (ties: labelled first, then lowest id); each vertex brings
/// the edge that binds it, then its labels, then its other edges to bound
/// vertices. The product is the same in any order.
///
/// Errors: as for [`to_sql`].
pub fn to_einsum(query: &QueryGraph, output: &str) -> Result<String> {
    query.check_expressible()?;
    let factors = join_order(query);
    let mut indices: Vec<String> = Vec::new();
    let mut terms = Vec::with_capacity(factors.len());
    for factor in &factors {
        let (text, ends) = match *factor {
            Factor::Edge { a, b, label } => (
                format!(
                    "{EDGES_TABLE}[{},{},{label}]",
                    vertex_term(query, a),
                    vertex_term(query, b)
                ),
                vec![a, b],
            ),
            Factor::Label { vertex, label } => (
                format!("{LABELS_TABLE}[{},{label}]", vertex_term(query, vertex)),
                vec![vertex],
            ),
        };
        for end in ends {
            let term = vertex_term(query, end);
            if query.vertices[end].bound.is_none() && !indices.contains(&term) {
                indices.push(term);
            }
        }
        terms.push(text);
    }
    let aggregate = if indices.is_empty() {
        String::new()
    } else {
        format!("SUM({}) ", indices.join(","))
    };
    Ok(format!("{output} = {aggregate}{};", terms.join(" * ")))
}

/// The factors of [`to_einsum`], in join order.
fn join_order(query: &QueryGraph) -> Vec<Factor> {
    let n = query.vertices.len();
    let incident = query.incidence();
    let other = |e: usize, v: usize| {
        let edge = query.edges[e];
        if edge.src == v { edge.dst } else { edge.src }
    };
    let selective = |v: usize| {
        let vertex = &query.vertices[v];
        !vertex.labels.is_empty() || vertex.bound.is_some()
    };
    let mut bound = vec![false; n];
    let mut emitted = vec![false; query.edges.len()];
    let mut factors = Vec::with_capacity(query.edges.len() + n);
    for _ in 0..n {
        // The next vertex: the most connected to bound ones, else the
        // start of a new component.
        let links = |v: usize| {
            incident[v]
                .iter()
                .filter(|&&e| !emitted[e] && bound[other(e, v)])
                .count()
        };
        let candidates = (0..n).filter(|&v| !bound[v]);
        let connected = candidates
            .clone()
            .map(|v| (links(v), selective(v), std::cmp::Reverse(v)))
            .filter(|(l, _, _)| *l > 0)
            .max();
        let next = match connected {
            Some((_, _, std::cmp::Reverse(v))) => v,
            None => match candidates
                .map(|v| (selective(v), incident[v].len(), std::cmp::Reverse(v)))
                .max()
            {
                Some((_, _, std::cmp::Reverse(v))) => v,
                None => break,
            },
        };
        let mut closing: Vec<usize> = incident[next]
            .iter()
            .copied()
            .filter(|&e| !emitted[e] && (bound[other(e, next)] || other(e, next) == next))
            .collect();
        closing.sort_unstable();
        bound[next] = true;
        // The edge that binds `next` first, then its labels, then the rest.
        let binding = closing
            .iter()
            .position(|&e| other(e, next) != next)
            .map(|p| closing.remove(p));
        let mut push_edge = |e: usize, factors: &mut Vec<Factor>| {
            emitted[e] = true;
            factors.push(Factor::Edge {
                a: other(e, next),
                b: next,
                label: query.edges[e].label,
            });
        };
        if let Some(e) = binding {
            push_edge(e, &mut factors);
        }
        for &label in &query.vertices[next].labels {
            factors.push(Factor::Label {
                vertex: next,
                label,
            });
        }
        for e in closing {
            push_edge(e, &mut factors);
        }
    }
    factors
}
