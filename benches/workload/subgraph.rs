//! The subgraph-counting workload (Galley section 8.2), shared by the
//! tests and benchmarks that include this file: data graphs stored as the
//! bags `edges` and `labels`, query graphs turned into one SQL or einsum
//! statement that counts their homomorphisms into the data graph (vertex
//! labels must match, edge labels must match), and the known counts of the
//! `truth/` folders. Both statements go through the ordinary front-ends, so
//! SQL and tensor index notation are compared on the same question.
// Each test or bench crate that includes this file uses part of it.
#![allow(dead_code)]

use std::path::Path;

use einsql::io::graph::QueryGraph;
use einsql::{Database, Error, Result};

/// The table of directed edges: `edges(src, dst, label)`.
pub const EDGES_TABLE: &str = "edges";
/// The table of vertex labels: `labels(vertex, label)`.
pub const LABELS_TABLE: &str = "labels";

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

/// Reads the data graph at `path` (either format) and stores it in `db`
/// (see [`load_data_graph`]).
pub fn load_data_file(db: &Database, path: impl AsRef<Path>) -> Result<QueryGraph> {
    let graph = QueryGraph::read(path)?;
    load_data_graph(db, &graph)?;
    Ok(graph)
}

/// Stores `graph` in `db` as two new bags (an error if either table exists):
/// [`EDGES_TABLE`] and [`LABELS_TABLE`] (see [`QueryGraph::tensors`]).
pub fn load_data_graph(db: &Database, graph: &QueryGraph) -> Result<()> {
    // Refuse before storing either table, so a clash leaves nothing behind.
    let existing = db.table_names();
    if let Some(name) = [EDGES_TABLE, LABELS_TABLE]
        .into_iter()
        .find(|name| existing.iter().any(|e| e.eq_ignore_ascii_case(name)))
    {
        return Err(Error::TableExists(name.to_string()));
    }
    let (edges, labels) = graph.tensors()?;
    db.create_table_from_tensor(EDGES_TABLE, edges)?;
    db.create_table_from_tensor(LABELS_TABLE, labels)
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
    check_expressible(query)?;
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
    check_expressible(query)?;
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
    let incident = incidence(query);
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

/// The edges touching each vertex, by index (a self-loop is listed once).
fn incidence(graph: &QueryGraph) -> Vec<Vec<usize>> {
    let mut incident = vec![Vec::new(); graph.vertices.len()];
    for (e, edge) in graph.edges.iter().enumerate() {
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
fn check_expressible(graph: &QueryGraph) -> Result<()> {
    if graph.vertices.is_empty() {
        return Err(Error::NotSupported(
            "a query graph without vertices has no SQL or einsum form".to_string(),
        ));
    }
    for edge in &graph.edges {
        let end = edge.src.max(edge.dst);
        if end >= graph.vertices.len() {
            return Err(Error::Invalid(format!(
                "edge ({}, {}) names vertex {end}, but the query graph has {} vertices",
                edge.src,
                edge.dst,
                graph.vertices.len()
            )));
        }
    }
    let incident = incidence(graph);
    for (id, (vertex, edges)) in graph.vertices.iter().zip(&incident).enumerate() {
        if vertex.labels.is_empty() && edges.is_empty() {
            return Err(Error::NotSupported(format!(
                "query vertex {id} has neither a label nor an edge; the relational form \
                 (edges, labels) has no table of all data vertices to range it over"
            )));
        }
    }
    Ok(())
}
