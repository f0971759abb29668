//! Subgraph counting: graph files, their SQL and einsum forms, and counts
//! checked against brute force and against the datasets' `truth/` files.

mod common;
#[path = "../benches/workload/subgraph.rs"]
mod subgraph;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use arrow::array::{Array, Int64Array};
use einsql::io::graph::{Edge, QueryGraph, Vertex};
use einsql::{Database, Error};
use subgraph::{Truth, load_data_graph, read_truth, to_einsum, to_sql};

/// Writes `text` to `name` in a new temporary folder.
fn write_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write graph file");
    (dir, path)
}

fn vertex(labels: &[i64]) -> Vertex {
    Vertex {
        labels: labels.to_vec(),
        bound: None,
    }
}

fn edge(src: usize, dst: usize, label: i64) -> Edge {
    Edge { src, dst, label }
}

#[test]
fn parses_the_sun_luo_format() {
    let (_dir, path) = write_file(
        "q.graph",
        "t 3 3\nv 0 12 2\nv 1 3 2\n\nv 2 0 2\ne 0 1 0\ne 1 2\ne 0 2 4\n",
    );
    let graph = QueryGraph::read(&path).expect("valid file");
    assert_eq!(
        graph,
        QueryGraph {
            vertices: vec![vertex(&[12]), vertex(&[3]), vertex(&[0])],
            edges: vec![edge(0, 1, 0), edge(1, 2, 0), edge(0, 2, 4)],
        }
    );
}

#[test]
fn parses_the_gcare_query_format() {
    let (_dir, path) = write_file(
        "q.txt",
        "t # s 7\nv 0 5 -1\nv 1 -1 -1\nv 2 2 41\ne 0 1 3\ne 1 2 0\n",
    );
    let graph = QueryGraph::read(&path).expect("valid file");
    assert_eq!(
        graph,
        QueryGraph {
            vertices: vec![
                vertex(&[5]),
                vertex(&[]),
                Vertex {
                    labels: vec![2],
                    bound: Some(41),
                },
            ],
            edges: vec![edge(0, 1, 3), edge(1, 2, 0)],
        }
    );
}

#[test]
fn parses_the_gcare_data_format_with_several_labels() {
    let (_dir, path) = write_file(
        "g.txt",
        "t # 16\nv 0 4 1 4\nv 1\nv 2 -1\nv 3 0\ne 0 1 0\ne 1 2 2 5\n",
    );
    let graph = QueryGraph::read(&path).expect("valid file");
    assert_eq!(
        graph,
        QueryGraph {
            vertices: vec![vertex(&[1, 4]), vertex(&[]), vertex(&[]), vertex(&[0])],
            edges: vec![edge(0, 1, 0), edge(1, 2, 2), edge(1, 2, 5)],
        }
    );
}

#[test]
fn malformed_graph_files_name_the_line() {
    let cases: &[(&str, u64, &str)] = &[
        ("", 1, "empty file"),
        ("v 0 1 0\n", 1, "expected the 't' header"),
        ("t 2\n", 1, "expected a header"),
        (
            "t 2 1\nv 0 1 1\nv 1 x 1\ne 0 1\n",
            3,
            "'x' is not a valid label",
        ),
        ("t 2 1\nv 0 1 1\nv 2 1 1\n", 3, "vertex id 2 out of order"),
        ("t 2 1\nv 0 1 1\nv 1 1\n", 3, "expected 'v id label degree'"),
        ("t 2 1\nv 0 1 1\nv 1 1 1\ne 0 5\n", 4, "edge names vertex 5"),
        ("t 2 1\nv 0 1 1\nv 1 -3 1\n", 3, "label -3 is negative"),
        (
            "t 2 1\nv 0 1 1\nv 1 1 1\n",
            1,
            "declares 2 vertices and 1 edges",
        ),
        ("t 1 0\nv 0 1 0\nt 1 0\n", 3, "a second 't' header"),
        ("t 1 0\n\nx 0\n", 3, "unknown line kind 'x'"),
        ("t # s 1\nv 0 1\n", 2, "expected 'v id label dvid'"),
        ("t # s 1\nv 0 -2 -1\n", 2, "vertex label -2"),
        ("t # s 1\nv 0 1 -7\n", 2, "dvid -7"),
        (
            "t # s 1\nv 0 1 -1\nv 1 1 -1\ne 0 1\n",
            4,
            "expected 'e src dst elabel'",
        ),
        (
            "t # 3\nv 0 1\ne 0 0\n",
            3,
            "expected 'e src dst elabel [elabel ...]'",
        ),
    ];
    for (text, line, message) in cases {
        let (_dir, path) = write_file("bad.graph", text);
        let error = QueryGraph::read(&path).expect_err(text);
        match &error {
            Error::FileFormat {
                path: at,
                line: found,
                message: said,
            } => {
                assert_eq!(at, &path, "{text:?}");
                assert_eq!(found, line, "{text:?}: {error}");
                assert!(said.contains(message), "{text:?}: {error}");
            }
            other => panic!("{text:?}: expected a file-format error, got {other}"),
        }
        assert!(
            error
                .to_string()
                .starts_with(&format!("{}:{line}: ", path.display()))
        );
    }
    let missing = QueryGraph::read("/no/such/graph.graph").expect_err("missing file");
    assert!(matches!(missing, Error::Io { .. }), "{missing}");
}

#[test]
fn truth_files_are_read_with_the_overflow_caveat() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write truth");
        path
    };
    assert_eq!(
        read_truth(write("a", "196")).expect("valid"),
        Some(Truth::Count(196))
    );
    assert_eq!(
        read_truth(write("b", "  42\n")).expect("valid"),
        Some(Truth::Count(42))
    );
    let overflowed = read_truth(write("c", "8974144457037714432\n")).expect("valid");
    assert_eq!(overflowed, Some(Truth::Untrusted(8974144457037714432)));
    assert_eq!(overflowed.and_then(Truth::trusted), None);
    assert_eq!(
        read_truth(dir.path().join("missing")).expect("absent"),
        None
    );
    for (text, line) in [("", 1), ("12x\n", 1), ("\n12\n13\n", 3), ("-4", 1)] {
        match read_truth(write("bad", text)) {
            Err(Error::FileFormat { line: found, .. }) => assert_eq!(found, line, "{text:?}"),
            other => panic!("{text:?}: expected a file-format error, got {other:?}"),
        }
    }
}

/// A path 0-1-2 (labels 3, none, 5) plus a lone vertex 3 (label 7).
fn path_with_lone_vertex() -> QueryGraph {
    QueryGraph {
        vertices: vec![vertex(&[3]), vertex(&[]), vertex(&[5]), vertex(&[7])],
        edges: vec![edge(0, 1, 0), edge(1, 2, 0)],
    }
}

#[test]
fn sql_form_is_the_readme_relational_form() {
    assert_eq!(
        to_sql(&path_with_lone_vertex()).expect("expressible"),
        "SELECT COUNT(*) FROM edges e0, edges e1, labels l0, labels l1, labels l2 \
         WHERE e0.label = 0 AND e0.dst = e1.src AND e1.label = 0 \
         AND l0.vertex = e0.src AND l0.label = 3 AND l1.vertex = e1.dst AND l1.label = 5 \
         AND l2.label = 7"
    );
    // A triangle with a self-loop, a vertex bound to data vertex 9 and
    // a vertex with two labels.
    let query = QueryGraph {
        vertices: vec![
            vertex(&[1, 2]),
            Vertex {
                labels: vec![],
                bound: Some(9),
            },
            vertex(&[]),
        ],
        edges: vec![edge(0, 1, 0), edge(1, 2, 4), edge(2, 0, 0), edge(2, 2, 1)],
    };
    assert_eq!(
        to_sql(&query).expect("expressible"),
        "SELECT COUNT(*) FROM edges e0, edges e1, edges e2, edges e3, labels l0, labels l1 \
         WHERE e0.dst = 9 AND e0.label = 0 AND e0.dst = e1.src AND e1.label = 4 \
         AND e1.dst = e2.src AND e0.src = e2.dst AND e2.label = 0 \
         AND e1.dst = e3.src AND e1.dst = e3.dst AND e3.label = 1 \
         AND l0.vertex = e0.src AND l0.label = 1 AND l1.vertex = e0.src AND l1.label = 2"
    );
    assert_eq!(
        to_einsum(&query, "t").expect("expressible"),
        "t = SUM(v0,v2) labels[v0,1] * labels[v0,2] * edges[v0,9,0] * \
         edges[9,v2,4] * edges[v0,v2,0] * edges[v2,v2,1];"
    );
}

#[test]
fn einsum_form_binds_vertices_in_join_order() {
    assert_eq!(
        to_einsum(&path_with_lone_vertex(), "n").expect("expressible"),
        "n = SUM(v0,v1,v2,v3) labels[v0,3] * edges[v0,v1,0] * edges[v1,v2,0] * \
         labels[v2,5] * labels[v3,7];"
    );
    // A 4-cycle with a chord. Vertex 0 starts (labelled, degree 3, lowest
    // id); 1, 2 and 3 tie on one link to it and the labelled 2 wins; then 1
    // and 3 tie on two links and the labelled 3 wins; 1 closes two edges.
    let query = QueryGraph {
        vertices: vec![vertex(&[1]), vertex(&[]), vertex(&[2]), vertex(&[2])],
        edges: vec![
            edge(0, 1, 0),
            edge(1, 2, 0),
            edge(2, 3, 0),
            edge(3, 0, 0),
            edge(0, 2, 0),
        ],
    };
    assert_eq!(
        to_einsum(&query, "c").expect("expressible"),
        "c = SUM(v0,v2,v3,v1) labels[v0,1] * edges[v0,v2,0] * labels[v2,2] * \
         edges[v2,v3,0] * labels[v3,2] * edges[v0,v3,0] * edges[v0,v1,0] * edges[v2,v1,0];"
    );
}

#[test]
fn vertices_without_edges_or_labels_are_refused() {
    let query = QueryGraph {
        vertices: vec![vertex(&[1]), vertex(&[]), vertex(&[])],
        edges: vec![edge(0, 1, 0)],
    };
    for result in [to_sql(&query), to_einsum(&query, "t")] {
        match result {
            Err(Error::NotSupported(message)) => {
                assert!(message.contains("query vertex 2"), "{message}")
            }
            other => panic!("expected NotSupported, got {other:?}"),
        }
    }
    let dangling = QueryGraph {
        vertices: vec![vertex(&[1])],
        edges: vec![edge(0, 3, 0)],
    };
    assert!(matches!(to_sql(&dangling), Err(Error::Invalid(_))));
    assert!(matches!(
        to_einsum(&QueryGraph::default(), "t"),
        Err(Error::NotSupported(_))
    ));
}

/// A small data graph with repeated edges, a self-loop, several labels on
/// one vertex, a vertex without labels, an isolated vertex and two edge
/// labels.
fn small_data_graph() -> QueryGraph {
    QueryGraph {
        vertices: vec![
            vertex(&[0]),
            vertex(&[1]),
            vertex(&[0, 2]),
            vertex(&[1]),
            vertex(&[]),
            vertex(&[0]),
            vertex(&[2]),
        ],
        edges: vec![
            edge(0, 1, 0),
            edge(1, 2, 0),
            edge(2, 0, 0),
            edge(2, 3, 0),
            edge(3, 4, 1),
            edge(4, 0, 0),
            edge(1, 0, 0),
            edge(5, 5, 0),
            edge(5, 2, 1),
            edge(3, 1, 0),
        ],
    }
}

#[test]
fn data_graph_loads_as_two_bags() {
    let db = Database::open_in_memory();
    load_data_graph(&db, &small_data_graph()).expect("load");
    let edges = db.table("edges").expect("edges");
    let labels = db.table("labels").expect("labels");
    assert!(edges.is_bag() && labels.is_bag());
    // 10 edge lines, one repeated (1 0), one self-loop: 8 distinct
    // undirected edges besides the loop, 2 * 8 + 1 directed rows.
    assert_eq!(edges.nnz(), 17);
    assert_eq!(labels.nnz(), 7);
    let sizes = |t: &einsql::storage::Tensor| -> Vec<(String, u64)> {
        t.dims().iter().map(|d| (d.name.clone(), d.size)).collect()
    };
    assert_eq!(
        sizes(&edges),
        [("src", 7), ("dst", 7), ("label", 3)].map(|(n, s)| (n.to_string(), s))
    );
    assert_eq!(
        sizes(&labels),
        [("vertex", 7), ("label", 3)].map(|(n, s)| (n.to_string(), s))
    );
    let described = db.execute("DESCRIBE edges").expect("describe");
    let types = described.batches[0]
        .column(1)
        .as_any()
        .downcast_ref::<arrow::array::StringArray>()
        .expect("type column")
        .iter()
        .map(|t| t.unwrap_or_default().to_string())
        .collect::<Vec<_>>();
    assert_eq!(types, ["BIGINT", "BIGINT", "BIGINT"]);
    let again = load_data_graph(&db, &small_data_graph()).expect_err("tables exist");
    assert!(matches!(again, Error::TableExists(_)), "{again}");
    // A clash on `labels` alone stores no `edges` either.
    let other = Database::open_in_memory();
    other
        .execute("CREATE TABLE Labels (x INT)")
        .expect("create");
    let clash = load_data_graph(&other, &small_data_graph()).expect_err("labels exists");
    assert!(matches!(clash, Error::TableExists(_)), "{clash}");
    assert_eq!(other.table_names(), ["Labels"]);
}

#[test]
fn data_graph_tables_persist() {
    let dir = tempfile::tempdir().expect("temporary folder");
    {
        let db = Database::open(dir.path()).expect("open");
        load_data_graph(&db, &small_data_graph()).expect("load");
    }
    let db = Database::open(dir.path()).expect("reopen");
    assert_eq!(db.table("edges").expect("edges").nnz(), 17);
    assert_eq!(db.table("labels").expect("labels").nnz(), 7);
}

/// The number of homomorphisms of `query` into `data`, by trying every map
/// of query vertices to data vertices.
fn brute_force_count(query: &QueryGraph, data: &QueryGraph) -> i64 {
    let n = data.vertices.len();
    let has_edge = |a: usize, b: usize, label: i64| {
        data.edges
            .iter()
            .any(|e| e.label == label && ((e.src == a && e.dst == b) || (e.src == b && e.dst == a)))
    };
    let mut count = 0;
    let mut map = vec![0usize; query.vertices.len()];
    loop {
        let labels_match = query.vertices.iter().zip(&map).all(|(q, &d)| {
            q.labels.iter().all(|l| data.vertices[d].labels.contains(l))
                && q.bound.is_none_or(|b| b == d as u64)
        });
        if labels_match
            && query
                .edges
                .iter()
                .all(|e| has_edge(map[e.src], map[e.dst], e.label))
        {
            count += 1;
        }
        // The next map, as a number in base n.
        let mut position = 0;
        loop {
            if position == map.len() {
                return count;
            }
            map[position] += 1;
            if map[position] < n {
                break;
            }
            map[position] = 0;
            position += 1;
        }
    }
}

/// The single value of the scalar table `name`.
fn scalar(db: &Database, name: &str) -> i64 {
    let table = db.table(name).expect("result table");
    let column = table.annotation_columns()[0]
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("an integer count")
        .clone();
    assert_eq!(column.len(), 1, "a scalar has one entry");
    column.value(0)
}

/// A random query graph of 1 to 4 vertices whose vertices all have an
/// edge or a label.
fn random_query(rng: &mut common::Rng) -> QueryGraph {
    let n = 1 + rng.below(4);
    let mut query = QueryGraph::default();
    for _ in 0..n {
        let labels: Vec<i64> = match rng.below(4) {
            0 | 1 => Vec::new(),
            2 => vec![rng.below(3) as i64],
            _ => vec![0, 2],
        };
        query.vertices.push(vertex(&labels));
    }
    for _ in 0..rng.below(5) {
        let label = if rng.below(4) == 0 { 1 } else { 0 };
        query.edges.push(edge(rng.below(n), rng.below(n), label));
    }
    if rng.below(6) == 0 {
        let v = rng.below(n);
        query.vertices[v].bound = Some(rng.below(7) as u64);
    }
    for v in 0..n {
        let touched = query.edges.iter().any(|e| e.src == v || e.dst == v);
        if !touched && query.vertices[v].labels.is_empty() {
            query.vertices[v].labels.push(rng.below(3) as i64);
        }
    }
    query
}

#[test]
fn einsum_counts_match_brute_force_on_a_small_graph() {
    let data = small_data_graph();
    let db = Database::open_in_memory();
    load_data_graph(&db, &data).expect("load");
    let triangle = |labels: [&[i64]; 3]| QueryGraph {
        vertices: labels.iter().map(|l| vertex(l)).collect(),
        edges: vec![edge(0, 1, 0), edge(1, 2, 0), edge(2, 0, 0)],
    };
    let mut queries = vec![
        triangle([&[], &[], &[]]),
        triangle([&[0], &[1], &[]]),
        triangle([&[0], &[1], &[2]]),
        // Paths, a star, a lone vertex, and a lone unlabelled edge.
        QueryGraph {
            vertices: vec![vertex(&[]), vertex(&[1]), vertex(&[]), vertex(&[0])],
            edges: vec![edge(0, 1, 0), edge(1, 2, 0), edge(2, 3, 0)],
        },
        QueryGraph {
            vertices: vec![vertex(&[]), vertex(&[0]), vertex(&[1]), vertex(&[])],
            edges: vec![edge(0, 1, 0), edge(0, 2, 0), edge(3, 0, 1)],
        },
        QueryGraph {
            vertices: vec![vertex(&[0])],
            edges: vec![],
        },
        QueryGraph {
            vertices: vec![vertex(&[]), vertex(&[])],
            edges: vec![edge(0, 1, 1)],
        },
        QueryGraph {
            vertices: vec![vertex(&[2]), vertex(&[0])],
            edges: vec![],
        },
    ];
    let mut rng = common::Rng(0x5eed_2024);
    queries.extend((0..60).map(|_| random_query(&mut rng)));
    let mut nonzero = 0;
    for query in &queries {
        let expected = brute_force_count(query, &data);
        let statement = to_einsum(query, "count").expect("expressible");
        db.execute(&statement)
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
        assert_eq!(scalar(&db, "count"), expected, "{statement}\n{query:?}");
        nonzero += usize::from(expected > 0);
    }
    assert!(
        nonzero > queries.len() / 3,
        "too few queries with matches ({nonzero})"
    );
}

/// How one query went on the reference evaluator.
enum Outcome {
    Count(i64),
    /// Did not finish within the budget, or hit the evaluator's size limit.
    Skipped(String),
    Failed(String),
}

/// Runs `text` on `db`, interrupting it after `budget`; the count is the
/// scalar `result` (einsum) or the one value of the result rows (SQL).
fn run_with_budget(db: &Database, text: &str, budget: Duration, result: Option<&str>) -> Outcome {
    let interrupt = db.interrupt();
    let (sender, receiver) = mpsc::channel();
    let outcome = std::thread::scope(|scope| {
        scope.spawn(move || {
            // The receiver outlives this thread.
            let _ = sender.send(db.execute(text));
        });
        let answer = match receiver.recv_timeout(budget) {
            Ok(answer) => answer,
            Err(_) => {
                interrupt.request();
                match receiver.recv() {
                    Ok(answer) => answer,
                    Err(e) => return Outcome::Failed(format!("worker vanished: {e}")),
                }
            }
        };
        match answer {
            Ok(rows) => match result {
                Some(name) => Outcome::Count(scalar(db, name)),
                None => match rows.batches.iter().find(|b| b.num_rows() > 0) {
                    Some(batch) if rows.num_rows() == 1 && batch.num_columns() == 1 => {
                        match batch.column(0).as_any().downcast_ref::<Int64Array>() {
                            Some(counts) => Outcome::Count(counts.value(0)),
                            None => Outcome::Failed(format!(
                                "COUNT(*) came back as {}",
                                batch.column(0).data_type()
                            )),
                        }
                    }
                    _ => {
                        Outcome::Failed(format!("expected one count, got {} rows", rows.num_rows()))
                    }
                },
            },
            Err(Error::Cancelled) => Outcome::Skipped(format!("over the {budget:?} budget")),
            Err(Error::NotSupported(message))
                if message.contains(&einsql::reference::ASSIGNMENT_LIMIT.to_string()) =>
            {
                Outcome::Skipped("over the reference evaluator's size limit".to_string())
            }
            Err(e) => Outcome::Failed(e.to_string()),
        }
    });
    interrupt.clear();
    outcome
}

/// Which form of the queries to run.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    Einsum,
    Sql,
}

/// Runs every `queries-lite` query of `yeast` and `hprd` in `form` with a
/// per-query `budget` and compares with `truth/`: wrong counts and errors
/// fail, queries over budget are listed as skipped. The datasets run one
/// after the other (the SQL test runs beside this one on the other core).
fn queries_lite_match_truth(form: Form, budget: Duration) {
    let Some(datasets) = common::datasets() else {
        return;
    };
    let started = Instant::now();
    let failures: Vec<String> = ["yeast", "hprd"]
        .iter()
        .flat_map(|name| {
            let folder = datasets.join("subgraph").join(name);
            dataset_matches_truth(name, &folder, form, budget)
        })
        .collect();
    eprintln!("all queries-lite in {:?}", started.elapsed());
    assert!(
        failures.is_empty(),
        "{} wrong or failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// [`queries_lite_match_truth`] on the dataset in `folder`: the failures.
fn dataset_matches_truth(name: &str, folder: &Path, form: Form, budget: Duration) -> Vec<String> {
    if !folder.is_dir() {
        eprintln!("skipping {name}: '{}' not found", folder.display());
        return Vec::new();
    }
    let db = Database::open_in_memory();
    // The oracle: tests/exec_subgraph.rs checks the executor.
    db.execute("SET engine = 'reference'")
        .expect("engine setting");
    let loaded = Instant::now();
    subgraph::load_data_file(&db, folder.join(format!("{name}.graph"))).expect("data graph");
    eprintln!("{name}: loaded in {:?}", loaded.elapsed());
    let mut failures = Vec::new();
    let (mut matched, mut skipped, mut untrusted) = (0, 0, 0);
    let queries = query_files(&folder.join("queries-lite"));
    for path in &queries {
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("?");
        let truth = match read_truth(folder.join("truth").join(file)) {
            Ok(Some(Truth::Count(n))) => n,
            Ok(Some(Truth::Untrusted(_)) | None) => {
                untrusted += 1;
                continue;
            }
            Err(e) => {
                failures.push(format!("{name}/{file}: {e}"));
                continue;
            }
        };
        let query = QueryGraph::read(path).expect("query graph");
        let (text, result) = match form {
            Form::Einsum => (to_einsum(&query, "count"), Some("count")),
            Form::Sql => (to_sql(&query), None),
        };
        let text = text.expect("expressible");
        let clock = Instant::now();
        let outcome = run_with_budget(&db, &text, budget, result);
        let took = clock.elapsed().as_millis();
        match outcome {
            Outcome::Count(n) if u64::try_from(n) == Ok(truth) => {
                eprintln!("{name}/{file}: {n} in {took} ms");
                matched += 1;
            }
            Outcome::Count(n) => {
                failures.push(format!("{name}/{file}: counted {n}, truth {truth}"))
            }
            Outcome::Skipped(why) => {
                eprintln!("skipped {name}/{file} ({why}, {took} ms; truth {truth})");
                skipped += 1;
            }
            Outcome::Failed(e) => failures.push(format!("{name}/{file}: {e}")),
        }
    }
    eprintln!(
        "{name}: {matched} of {} queries match truth, {skipped} skipped, {untrusted} without \
         a trusted count",
        queries.len()
    );
    if matched == 0 && !queries.is_empty() {
        failures.push(format!(
            "{name}: no query finished within {budget:?}, so nothing was checked"
        ));
    }
    failures
}

/// The `.graph` files of `folder`, sorted by name.
fn query_files(folder: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .expect("queries-lite folder")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "graph"))
        .collect();
    files.sort();
    files
}

/// The per-query budget of the reference evaluator on the dataset queries:
/// `$EINSQL_SUBGRAPH_BUDGET` seconds, else [`DEFAULT_BUDGET_SECS`].
fn budget() -> Duration {
    let seconds = std::env::var("EINSQL_SUBGRAPH_BUDGET")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(DEFAULT_BUDGET_SECS);
    Duration::from_secs_f64(seconds)
}

/// Small enough that both datasets take a few minutes of `cargo test`; the
/// queries that need more are reported as skipped.
const DEFAULT_BUDGET_SECS: f64 = 1.0;

#[test]
fn einsum_forms_of_queries_lite_match_truth() {
    queries_lite_match_truth(Form::Einsum, budget());
}

#[test]
fn sql_forms_of_queries_lite_match_truth() {
    queries_lite_match_truth(Form::Sql, budget());
}
