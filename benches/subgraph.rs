//! The einsql side of the subgraph-counting benchmark against DuckDB
//! (Galley section 8.2; `scripts/subgraph-bench` drives both engines).
//!
//! Two modes, both plain command lines (`cargo bench --bench subgraph --
//! MODE ...`):
//!
//! - `emit` reads a dataset folder (a data graph `<name>.graph`, a query
//!   folder and a `truth/` folder, in the Sun & Luo or G-CARE format; by
//!   default `../shared/datasets/subgraph/<name>`), loads the data graph into
//!   einsql exactly as `run` will, and writes into an output folder what the
//!   other engine needs: `edges.csv` (`src,dst,label`, both directions of
//!   every edge) and `labels.csv` (`vertex,label`) copied out of the loaded
//!   tables, `queries.jsonl` with one `{name, vertices, edges, sql, truth}`
//!   per selected query (the text of `subgraph::to_sql`, which both
//!   engines run unchanged; `truth` is null where `truth/` has no
//!   trustworthy count), and `dataset.json` naming the data graph file.
//! - `run` loads that data graph once into an in-memory [`Database`], then
//!   for each query of `queries.jsonl`: untimed warm-up runs until the
//!   warm-up time has passed (`--warm-up`, at least one run), then one
//!   timed run, each stopped after the timeout through the database's
//!   [`Interrupt`]. It prints one JSON line per query: `name`, `count`,
//!   `status` (`ok`, `timeout` or `error`), `message`, `seconds` (the
//!   whole statement, wall clock), `first_seconds` and `warm_up_runs` (the
//!   first warm-up run's time and how many there were),
//!   `parse_seconds` and `bind_seconds`
//!   (parsing the SQL text, binding it), `optimize_seconds` (of which
//!   `reduce_seconds` in the semijoin reductions), `phase_seconds` (per
//!   optimizer phase) and `plan` (from
//!   [`Database::execute_profiled`]: the optimizer's plan with estimated and
//!   actual entries per step; `EXPLAIN`'s plan for a query that did not
//!   finish). With `--paced` it runs a query when its name arrives on
//!   standard input, one name per line, and answers each with its line:
//!   the driver times the other engine on the same query between two
//!   names, so that both engines' timings of a query fall in the same
//!   window of a shared machine.
//!
//! Bad input (a missing folder, a malformed graph or truth file, a query
//! without SQL form) is reported per file with its line, never a panic; a
//! query that cannot be written as SQL is left out of `queries.jsonl` with a
//! note on standard error.

/// Allocations go to mimalloc (the `mimalloc` feature, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "workload/subgraph.rs"]
mod subgraph;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use arrow::array::{Array, Decimal128Array, Int64Array, UInt64Array};
use einsql::io::graph::QueryGraph;
use einsql::{Database, Error, Interrupt};
use serde::{Deserialize, Serialize};
use subgraph::{Truth, load_data_file, read_truth, to_sql};

/// A failure of the harness itself, as a sentence for standard error.
#[derive(Debug)]
struct Failure(String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure(error.to_string())
    }
}

/// `Err(Failure)` with a message.
fn fail<T>(message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure(message.into()))
}

/// The usage text printed for `--help` and after argument errors.
const USAGE: &str = "\
usage: cargo bench --bench subgraph -- emit DATASET [options]
       cargo bench --bench subgraph -- run --input DIR [options]

emit: write the data graph as CSV and the selected queries as SQL
  DATASET               a dataset name under ../shared/datasets/subgraph
                        ($EINSQL_DATA/subgraph), or a dataset folder
  --out DIR             output folder (required)
  --queries lite|full   queries-lite/ (default) or queries/
  --max-vertices N      only query graphs with at most N vertices
  --limit N             the first N queries (by file name)
  --sample N            N queries spread evenly over the sorted list
run: time the queries of an emitted folder on einsql
  --input DIR           a folder written by emit (required)
  --threads N           SET threads = N (default: 0, all cores)
  --timeout SECONDS     per-query timeout (default 30)
  --warm-up SECONDS     untimed runs of a query until this much time has
                        passed, at least one (default 0.005)
  --memory-limit SIZE   SET memory_limit = 'SIZE' (default: einsql's)
  --setting NAME=VALUE  an extra SET NAME = VALUE (repeatable)
  --only NAME           only the query NAME (repeatable)
  --paced               run a query when its name arrives on standard input
                        (one per line), in that order, until input ends";

/// The default warm-up: untimed runs of a query until this much time has
/// passed. On this project's virtual machines a core that waited (as the
/// harness waits for the other engine's turn) runs slower for about a
/// millisecond of work after it wakes; one run of a statement of a few
/// hundred microseconds does not cover that, and the timed run would
/// measure the wake-up rather than the engine. 5 ms of runs brought
/// hprd's lite median statement, paced, from 464 to 251 µs, near the 260
/// µs of running back to back (`docs/benchmarks.md`, "Lite sets, 1 and 2
/// threads, a warm-up of 5 ms").
const WARM_UP: Duration = Duration::from_millis(5);

/// The command line of `emit`.
#[derive(Debug, Default)]
struct EmitArgs {
    dataset: String,
    out: PathBuf,
    queries: QuerySet,
    max_vertices: Option<usize>,
    limit: Option<usize>,
    sample: Option<usize>,
}

/// Which query folder of a dataset to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum QuerySet {
    /// `queries-lite/`: the queries the Galley paper timed.
    #[default]
    Lite,
    /// `queries/`: every query graph.
    Full,
}

impl QuerySet {
    fn folder(self) -> &'static str {
        match self {
            QuerySet::Lite => "queries-lite",
            QuerySet::Full => "queries",
        }
    }
}

/// The command line of `run`.
#[derive(Debug)]
struct RunArgs {
    input: PathBuf,
    threads: usize,
    timeout: Duration,
    /// Untimed runs of a query until this much time has passed.
    warm_up: Duration,
    memory_limit: Option<String>,
    settings: Vec<(String, String)>,
    only: Vec<String>,
    /// Queries are named one at a time on standard input.
    paced: bool,
}

/// A parsed command line.
#[derive(Debug)]
enum Command {
    Emit(EmitArgs),
    Run(RunArgs),
    Help,
}

/// Parses the arguments after the program name. `cargo bench` appends
/// `--bench`, which is ignored.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, Failure> {
    let mut args = args.into_iter().filter(|a| a != "--bench");
    let mode = match args.next() {
        Some(mode) => mode,
        None => return Ok(Command::Help),
    };
    let rest: Vec<String> = args.collect();
    if mode == "--help" || mode == "-h" || rest.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Command::Help);
    }
    let mut options = Options::new(&mode, rest);
    match mode.as_str() {
        "emit" => {
            let mut emit = EmitArgs::default();
            let mut dataset = None;
            while let Some(arg) = options.next_arg() {
                match arg.as_str() {
                    "--out" => emit.out = PathBuf::from(options.value(&arg)?),
                    "--queries" => {
                        emit.queries = match options.value(&arg)?.as_str() {
                            "lite" => QuerySet::Lite,
                            "full" => QuerySet::Full,
                            other => {
                                return fail(format!(
                                    "--queries must be 'lite' or 'full', not '{other}'"
                                ));
                            }
                        }
                    }
                    "--max-vertices" => emit.max_vertices = Some(options.number(&arg)?),
                    "--limit" => emit.limit = Some(options.number(&arg)?),
                    "--sample" => emit.sample = Some(options.number(&arg)?),
                    flag if flag.starts_with("--") => return options.unknown(flag),
                    _ if dataset.is_none() => dataset = Some(arg),
                    _ => return fail(format!("emit: unexpected argument '{arg}'")),
                }
            }
            emit.dataset = dataset.ok_or_else(|| Failure("emit: name a dataset".into()))?;
            if emit.out.as_os_str().is_empty() {
                return fail("emit: --out DIR is required");
            }
            Ok(Command::Emit(emit))
        }
        "run" => {
            let mut run = RunArgs {
                input: PathBuf::new(),
                threads: 0,
                timeout: Duration::from_secs(30),
                warm_up: WARM_UP,
                memory_limit: None,
                settings: Vec::new(),
                only: Vec::new(),
                paced: false,
            };
            while let Some(arg) = options.next_arg() {
                match arg.as_str() {
                    "--input" => run.input = PathBuf::from(options.value(&arg)?),
                    "--threads" => run.threads = options.number(&arg)?,
                    "--timeout" => {
                        let seconds: f64 = options.number(&arg)?;
                        run.timeout = Duration::try_from_secs_f64(seconds)
                            .ok()
                            .filter(|t| !t.is_zero())
                            .ok_or_else(|| {
                                Failure(format!(
                                    "--timeout must be a positive number of seconds, not {seconds}"
                                ))
                            })?;
                    }
                    "--warm-up" => {
                        let seconds: f64 = options.number(&arg)?;
                        run.warm_up = Duration::try_from_secs_f64(seconds).map_err(|_| {
                            Failure(format!(
                                "--warm-up must be a number of seconds, 0 or more, not {seconds}"
                            ))
                        })?;
                    }
                    "--memory-limit" => run.memory_limit = Some(options.value(&arg)?),
                    "--setting" => {
                        let text = options.value(&arg)?;
                        let Some((name, value)) = text.split_once('=') else {
                            return fail(format!("--setting wants NAME=VALUE, not '{text}'"));
                        };
                        run.settings
                            .push((name.trim().to_string(), value.trim().to_string()));
                    }
                    "--only" => run.only.push(options.value(&arg)?),
                    "--paced" => run.paced = true,
                    flag => return options.unknown(flag),
                }
            }
            if run.input.as_os_str().is_empty() {
                return fail("run: --input DIR is required");
            }
            Ok(Command::Run(run))
        }
        other => fail(format!("unknown mode '{other}': expected 'emit' or 'run'")),
    }
}

/// The options after the mode, consumed one by one.
struct Options {
    mode: String,
    args: std::vec::IntoIter<String>,
}

impl Options {
    fn new(mode: &str, args: Vec<String>) -> Options {
        Options {
            mode: mode.to_string(),
            args: args.into_iter(),
        }
    }

    fn next_arg(&mut self) -> Option<String> {
        self.args.next()
    }

    fn value(&mut self, flag: &str) -> Result<String, Failure> {
        self.args
            .next()
            .ok_or_else(|| Failure(format!("{flag} needs a value")))
    }

    fn number<T: std::str::FromStr>(&mut self, flag: &str) -> Result<T, Failure> {
        let text = self.value(flag)?;
        text.parse()
            .map_err(|_| Failure(format!("{flag} wants a number, not '{text}'")))
    }

    fn unknown<T>(&self, flag: &str) -> Result<T, Failure> {
        fail(format!("{}: unknown option '{flag}'", self.mode))
    }
}

/// One line of `queries.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
struct QueryLine {
    /// The query file name.
    name: String,
    /// Query vertices.
    vertices: usize,
    /// Query edges.
    edges: usize,
    /// The SQL text both engines run.
    sql: String,
    /// The trustworthy count from `truth/`, if any.
    truth: Option<u64>,
}

/// `dataset.json`: where the emitted queries came from.
#[derive(Debug, Serialize, Deserialize)]
struct DatasetInfo {
    /// The dataset's name (its folder name).
    name: String,
    /// The data graph file, absolute.
    graph: PathBuf,
    /// The query folder, absolute.
    queries: PathBuf,
    /// Data graph vertices.
    vertices: usize,
    /// Data graph undirected edges (as listed in the file).
    edges: usize,
}

/// The dataset folder named by `dataset`: an existing folder, else a name
/// under the datasets' `subgraph/` folder.
fn dataset_folder(dataset: &str) -> Result<PathBuf, Failure> {
    let direct = PathBuf::from(dataset);
    if direct.is_dir() {
        return Ok(direct);
    }
    let root = std::env::var_os("EINSQL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"));
    let folder = root.join("subgraph").join(dataset);
    if folder.is_dir() {
        Ok(folder)
    } else {
        fail(format!(
            "no dataset '{dataset}': neither a folder nor '{}' exists (set EINSQL_DATA to the datasets folder)",
            folder.display()
        ))
    }
}

/// The data graph of a dataset folder: `<folder name>.graph`, else the one
/// `.graph` file directly in the folder.
fn data_graph_file(folder: &Path) -> Result<PathBuf, Failure> {
    if let Some(name) = folder.file_name() {
        let named = folder.join(format!("{}.graph", name.to_string_lossy()));
        if named.is_file() {
            return Ok(named);
        }
    }
    let graphs: Vec<PathBuf> = sorted_files(folder)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "graph"))
        .collect();
    match graphs.as_slice() {
        [one] => Ok(one.clone()),
        [] => fail(format!("'{}' holds no .graph data file", folder.display())),
        _ => fail(format!(
            "'{}' holds several .graph files; name the data graph <folder>.graph",
            folder.display()
        )),
    }
}

/// The files directly in `dir`, sorted by name.
fn sorted_files(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// `count` items spread evenly over `items` (all of them if fewer).
fn spread<T>(items: Vec<T>, count: usize) -> Vec<T> {
    let total = items.len();
    if count >= total {
        return items;
    }
    items
        .into_iter()
        .enumerate()
        .filter(|(i, _)| (i * count) % total < count)
        .map(|(_, item)| item)
        .collect()
}

/// The `emit` mode.
fn emit(args: &EmitArgs) -> Result<(), Failure> {
    let folder = dataset_folder(&args.dataset)?;
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| args.dataset.clone());
    let graph_file = data_graph_file(&folder)?;
    let query_dir = folder.join(args.queries.folder());
    if !query_dir.is_dir() {
        return fail(format!("no query folder '{}'", query_dir.display()));
    }
    std::fs::create_dir_all(&args.out).map_err(|e| Error::io(&args.out, e))?;
    let out = args
        .out
        .canonicalize()
        .map_err(|e| Error::io(&args.out, e))?;

    let db = Database::open_in_memory();
    let data = load_data_file(&db, &graph_file)?;
    for (table, columns) in [("edges", "src, dst, label"), ("labels", "vertex, label")] {
        let file = out.join(format!("{table}.csv"));
        let path = file.to_string_lossy().replace('\'', "''");
        db.execute(&format!(
            "COPY (SELECT {columns} FROM {table} ORDER BY {columns}) TO '{path}' (FORMAT csv)"
        ))?;
    }

    let mut selected = Vec::new();
    for file in sorted_files(&query_dir)? {
        let graph = QueryGraph::read(&file)?;
        if args.max_vertices.is_some_and(|m| graph.vertices.len() > m) {
            continue;
        }
        selected.push((file, graph));
    }
    if let Some(limit) = args.limit {
        selected.truncate(limit);
    }
    if let Some(sample) = args.sample {
        selected = spread(selected, sample);
    }

    let jsonl = out.join("queries.jsonl");
    let mut lines = String::new();
    let mut written = 0;
    for (file, graph) in selected {
        let file_name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sql = match to_sql(&graph) {
            Ok(sql) => sql,
            Err(e) => {
                eprintln!("{}: left out: {e}", file.display());
                continue;
            }
        };
        let truth = read_truth(folder.join("truth").join(&file_name))?.and_then(Truth::trusted);
        let line = QueryLine {
            name: file_name,
            vertices: graph.vertices.len(),
            edges: graph.edges.len(),
            sql,
            truth,
        };
        lines.push_str(&to_json(&line)?);
        lines.push('\n');
        written += 1;
    }
    std::fs::write(&jsonl, lines).map_err(|e| Error::io(&jsonl, e))?;

    let info = DatasetInfo {
        name,
        graph: graph_file
            .canonicalize()
            .map_err(|e| Error::io(&graph_file, e))?,
        queries: query_dir
            .canonicalize()
            .map_err(|e| Error::io(&query_dir, e))?,
        vertices: data.vertices.len(),
        edges: data.edges.len(),
    };
    let info_file = out.join("dataset.json");
    std::fs::write(&info_file, to_json(&info)? + "\n").map_err(|e| Error::io(&info_file, e))?;
    eprintln!(
        "{}: {} vertices, {} edges; {written} queries written to {}",
        info.name,
        info.vertices,
        info.edges,
        out.display()
    );
    Ok(())
}

/// `value` as one line of JSON.
fn to_json(value: &impl Serialize) -> Result<String, Failure> {
    serde_json::to_string(value).map_err(|e| Failure(format!("cannot write JSON: {e}")))
}

/// Reads `path`, one JSON value of type `T` per non-empty line.
fn read_json_lines<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, Failure> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut values = Vec::new();
    for (number, line) in (1u64..).zip(std::io::BufReader::new(file).lines()) {
        let line = line.map_err(|e| Error::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(&line)
            .map_err(|e| Failure(Error::file_format(path, number, e.to_string()).to_string()))?;
        values.push(value);
    }
    Ok(values)
}

/// How one query ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Ok,
    Timeout,
    Error,
}

/// One line of `run`'s output.
#[derive(Debug, Serialize)]
struct Outcome {
    name: String,
    count: Option<i128>,
    status: Status,
    message: Option<String>,
    /// Wall-clock seconds of the timed run (up to the timeout).
    seconds: f64,
    /// Wall-clock seconds of the first warm-up run, when it finished.
    first_seconds: Option<f64>,
    /// How many warm-up runs finished.
    warm_up_runs: u32,
    /// Seconds spent parsing the SQL text, when the database reports them.
    parse_seconds: Option<f64>,
    /// Seconds spent binding it, likewise.
    bind_seconds: Option<f64>,
    /// Seconds spent optimizing, when the database reports them.
    optimize_seconds: Option<f64>,
    /// Of which in the semijoin reductions.
    reduce_seconds: Option<f64>,
    /// Seconds per optimizer phase (by the name `SET
    /// disabled_optimizers` takes), over every program of the statement.
    phase_seconds: Option<BTreeMap<&'static str, f64>>,
    plan: Option<String>,
}

/// One finished execution.
struct Execution {
    count: i128,
    /// Wall-clock seconds of the whole statement.
    seconds: f64,
    /// What the statement reported: the parse, bind, optimization and
    /// reduction times, and the plan with estimated and actual entries per
    /// step (written only for the timed run, after the clock stopped).
    profile: einsql::Profile,
}

/// The time of each optimizer phase, summed over the statement's programs.
fn phase_seconds(profile: &einsql::Profile) -> BTreeMap<&'static str, f64> {
    let mut out = BTreeMap::new();
    for phase in profile
        .programs
        .iter()
        .filter_map(|p| p.optimized.as_ref())
        .flat_map(|o| &o.phases)
    {
        *out.entry(phase.phase.name()).or_insert(0.0) += phase.time.as_secs_f64();
    }
    out
}

/// Whether `error` (possibly wrapped with a position) is a cancellation.
fn is_cancelled(error: &Error) -> bool {
    match error {
        Error::Cancelled => true,
        Error::Positioned { source, .. } => is_cancelled(source),
        _ => false,
    }
}

/// The single integer of a `SELECT COUNT(*)` result (a `HUGEINT` past
/// 64 bits).
fn single_count(result: &einsql::QueryResult) -> Result<i128, String> {
    let batch = result
        .batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .ok_or("the query returned no row")?;
    if result.num_rows() != 1 || batch.num_columns() != 1 {
        return Err(format!(
            "expected one count, got {} rows of {} columns",
            result.num_rows(),
            batch.num_columns()
        ));
    }
    let column = batch.column(0);
    if column.is_null(0) {
        return Err("the count is NULL".to_string());
    }
    let any = column.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        return Ok(i128::from(a.value(0)));
    }
    if let Some(a) = any.downcast_ref::<UInt64Array>() {
        return Ok(i128::from(a.value(0)));
    }
    if let Some(a) = any.downcast_ref::<Decimal128Array>()
        && a.scale() == 0
    {
        return Ok(a.value(0));
    }
    Err(format!("the count has type {}", column.data_type()))
}

/// What the [`Watchdog`] thread is told.
enum Order {
    /// Interrupt the statement about to start once this time has passed.
    Arm(Duration),
    /// The statement ended; answer once no interrupt can come any more.
    Disarm,
}

/// Stops a statement through the database's [`Interrupt`] once its time is
/// up: one thread for the whole run, armed before each statement and
/// disarmed after it, so that no thread starts beside a timed statement.
/// The thread ends once the watchdog is dropped.
struct Watchdog {
    orders: mpsc::Sender<Order>,
    disarmed: mpsc::Receiver<()>,
}

impl Watchdog {
    fn new(interrupt: Interrupt) -> Watchdog {
        let (orders, inbox) = mpsc::channel::<Order>();
        let (acknowledge, disarmed) = mpsc::channel::<()>();
        thread::spawn(move || {
            while let Ok(order) = inbox.recv() {
                if let Order::Arm(limit) = order {
                    match inbox.recv_timeout(limit) {
                        Ok(_) => {}
                        Err(mpsc::RecvTimeoutError::Timeout) => {
                            interrupt.request();
                            if inbox.recv().is_err() {
                                return;
                            }
                        }
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
                if acknowledge.send(()).is_err() {
                    return;
                }
            }
        });
        Watchdog { orders, disarmed }
    }

    fn arm(&self, limit: Duration) -> Result<(), String> {
        self.orders
            .send(Order::Arm(limit))
            .map_err(|_| "the timeout thread failed".to_string())
    }

    /// Returns once the watchdog will not interrupt any more.
    fn disarm(&self) -> Result<(), String> {
        self.orders
            .send(Order::Disarm)
            .ok()
            .and_then(|()| self.disarmed.recv().ok())
            .ok_or_else(|| "the timeout thread failed".to_string())
    }
}

/// Runs `sql` on `db`, stopped through `interrupt` by `watchdog` after
/// `timeout`. `Ok(None)`: timed out.
fn timed(
    db: &Database,
    interrupt: &Interrupt,
    watchdog: &Watchdog,
    sql: &str,
    timeout: Duration,
) -> Result<Option<Execution>, String> {
    watchdog.arm(timeout)?;
    let started = Instant::now();
    let result = db.execute_profiled(sql);
    let seconds = started.elapsed().as_secs_f64();
    watchdog.disarm()?;
    let fired = interrupt.is_requested();
    interrupt.clear();
    match result {
        Ok((result, profile)) => Ok(Some(Execution {
            count: single_count(&result)?,
            seconds,
            profile,
        })),
        Err(e) if fired && is_cancelled(&e) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// The plan text of `sql` from `EXPLAIN`, for queries that did not finish
/// (none where it fails).
fn plan_text(db: &Database, sql: &str) -> Option<String> {
    let result = db.execute(&format!("EXPLAIN {sql}")).ok()?;
    let mut lines = Vec::new();
    for batch in &result.batches {
        let column = batch.column(0);
        let strings = column
            .as_any()
            .downcast_ref::<arrow::array::StringArray>()?;
        lines.extend(strings.iter().flatten().map(str::to_string));
    }
    Some(lines.join("\n"))
}

/// A query's warm-up runs.
#[derive(Clone, Copy, Debug, Default)]
struct WarmUp {
    /// Wall-clock seconds of the first, when it finished.
    first_seconds: Option<f64>,
    /// How many finished.
    runs: u32,
}

/// Untimed warm-up runs until `args.warm_up` has passed (at least one),
/// then the timed run, of one query, each stopped after `args.timeout`.
fn measure(
    db: &Database,
    interrupt: &Interrupt,
    watchdog: &Watchdog,
    query: &QueryLine,
    args: &RunArgs,
) -> Outcome {
    let timeout = args.timeout;
    let outcome = |status, message: Option<String>, seconds, warm: WarmUp| Outcome {
        name: query.name.clone(),
        count: None,
        status,
        message,
        seconds,
        first_seconds: warm.first_seconds,
        warm_up_runs: warm.runs,
        parse_seconds: None,
        bind_seconds: None,
        optimize_seconds: None,
        reduce_seconds: None,
        phase_seconds: None,
        plan: plan_text(db, &query.sql),
    };
    let limit = timeout.as_secs_f64();
    let started = Instant::now();
    let mut warm = WarmUp::default();
    loop {
        let warming = warm.runs == 0 || started.elapsed() < args.warm_up;
        match timed(db, interrupt, watchdog, &query.sql, timeout) {
            Ok(Some(execution)) if !warming => {
                return Outcome {
                    name: query.name.clone(),
                    count: Some(execution.count),
                    status: Status::Ok,
                    message: None,
                    seconds: execution.seconds,
                    first_seconds: warm.first_seconds,
                    warm_up_runs: warm.runs,
                    parse_seconds: Some(execution.profile.parse.as_secs_f64()),
                    bind_seconds: Some(execution.profile.bind.as_secs_f64()),
                    optimize_seconds: Some(execution.profile.optimize.as_secs_f64()),
                    reduce_seconds: Some(execution.profile.reduce.as_secs_f64()),
                    phase_seconds: Some(phase_seconds(&execution.profile)),
                    plan: Some(execution.profile.plan()),
                };
            }
            Ok(Some(execution)) => {
                warm.first_seconds.get_or_insert(execution.seconds);
                warm.runs += 1;
            }
            Ok(None) => {
                let when = if warming { "warm-up" } else { "timed run" };
                let message = format!("{when} exceeded {limit} s");
                return outcome(Status::Timeout, Some(message), limit, warm);
            }
            Err(message) => return outcome(Status::Error, Some(message), 0.0, warm),
        }
    }
}

/// The `run` mode.
fn run(args: &RunArgs) -> Result<(), Failure> {
    let info_file = args.input.join("dataset.json");
    let text = std::fs::read_to_string(&info_file).map_err(|e| Error::io(&info_file, e))?;
    let info: DatasetInfo = serde_json::from_str(&text)
        .map_err(|e| Failure(format!("{}: {e}", info_file.display())))?;
    let mut queries: Vec<QueryLine> = read_json_lines(&args.input.join("queries.jsonl"))?;
    if !args.only.is_empty() {
        queries.retain(|q| args.only.contains(&q.name));
    }

    let db = Database::open_in_memory();
    let started = Instant::now();
    load_data_file(&db, &info.graph)?;
    eprintln!(
        "{}: data graph loaded in {:.2} s; {} queries",
        info.name,
        started.elapsed().as_secs_f64(),
        queries.len()
    );
    db.execute(&format!("SET threads = {}", args.threads))?;
    if let Some(limit) = &args.memory_limit {
        db.execute(&format!(
            "SET memory_limit = '{}'",
            limit.replace('\'', "''")
        ))?;
    }
    for (name, value) in &args.settings {
        db.execute(&format!("SET {name} = {value}"))
            .map_err(|e| Failure(format!("SET {name} = {value}: {e}")))?;
    }
    let interrupt = db.interrupt();
    let watchdog = Watchdog::new(interrupt.clone());
    let stdout = std::io::stdout();
    let answer = |query: &QueryLine| -> Result<(), Failure> {
        let outcome = measure(&db, &interrupt, &watchdog, query, args);
        let line = to_json(&outcome)?;
        let mut out = stdout.lock();
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .map_err(|e| Failure(format!("cannot write to standard output: {e}")))
    };
    if !args.paced {
        return queries.iter().try_for_each(answer);
    }
    let by_name: HashMap<&str, &QueryLine> = queries.iter().map(|q| (q.name.as_str(), q)).collect();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| Failure(format!("cannot read standard input: {e}")))?;
        let name = line.trim();
        if name.is_empty() {
            continue;
        }
        let Some(query) = by_name.get(name) else {
            return fail(format!(
                "--paced: no query '{name}' among those selected from {}",
                args.input.join("queries.jsonl").display()
            ));
        };
        answer(query)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let result = parse_args(std::env::args().skip(1)).and_then(|command| match command {
        Command::Emit(args) => emit(&args),
        Command::Run(args) => run(&args),
        Command::Help => {
            println!("{USAGE}");
            Ok(())
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("subgraph: {failure}");
            ExitCode::FAILURE
        }
    }
}
