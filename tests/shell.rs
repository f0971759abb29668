//! The `einsql` binary driven non-interactively: `-c`, `-f`, standard
//! input, every dot-command, every output mode, error reports and exit
//! codes, and the README's first session (the transcript in `README.md`)
//! replayed through standard input.
//!
//! Tests that load sample files (`.load`, `.save`, `sql/samples.sql`, the
//! first session) or open database directories (`einsql DIR`, `.open`)
//! need the file readers and the on-disk store.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository root: the shell runs there, so `data/` and `sql/` resolve.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `einsql` command, without colour or history.
fn einsql() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_einsql"));
    command
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("EINSQL_HISTORY", "");
    command
}

/// What a run printed and how it ended.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn finish(output: Output) -> Run {
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `einsql ARGS` with `stdin` as its standard input.
fn run_with_stdin(command: &mut Command, stdin: &str) -> Run {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("einsql starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("stdin takes the input");
    finish(child.wait_with_output().expect("einsql runs"))
}

/// Runs `einsql ARGS` with an empty standard input.
fn run(args: &[&str]) -> Run {
    run_with_stdin(einsql().args(args), "")
}

/// Runs `einsql -c TEXT` (dot-commands on their own lines).
fn command(text: &str) -> Run {
    run(&["-c", text])
}

const POINTS: &str = "CREATE TABLE points (i INT, j INT, v DOUBLE, PRIMARY KEY (i, j));\n\
     INSERT INTO points VALUES (0, 1, 0.5), (2, 0, -1.25), (1, 1, 3);\n";

#[test]
fn help_and_version() {
    let help = run(&["--help"]);
    assert_eq!(help.code, Some(0));
    assert!(
        help.stdout.contains("Usage: einsql [OPTIONS] [DATABASE]"),
        "{}",
        help.stdout
    );
    for option in [
        "--command",
        "--file",
        "--mode",
        "--bail",
        "--threads",
        "EINSQL_HISTORY",
    ] {
        assert!(help.stdout.contains(option), "{option} in {}", help.stdout);
    }
    let version = run(&["--version"]);
    assert_eq!(version.code, Some(0));
    assert_eq!(
        version.stdout,
        format!("einsql {}\n", env!("CARGO_PKG_VERSION"))
    );
    let bad = run(&["--mode", "box"]);
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("invalid value 'box'"), "{}", bad.stderr);
}

#[test]
fn statements_from_the_command_line_print_a_table() {
    let out = command(&format!("{POINTS}SELECT * FROM points;"));
    assert_eq!(out.stderr, "");
    assert_eq!(out.code, Some(0));
    assert_eq!(
        out.stdout,
        "Created table points (0 entries)\n\
         Inserted 3 rows into points\n\
         ┌────────┬────────┬────────┐\n\
         │ i      ┆ j      ┆ v      │\n\
         │ bigint ┆ bigint ┆ double │\n\
         ╞════════╪════════╪════════╡\n\
         │      0 ┆      1 ┆    0.5 │\n\
         │      1 ┆      1 ┆    3.0 │\n\
         │      2 ┆      0 ┆  -1.25 │\n\
         └────────┴────────┴────────┘\n\
         3 rows\n"
    );
}

#[test]
fn every_output_mode() {
    let select = |mode: &str| {
        let out = command(&format!("{POINTS}.mode {mode}\nSELECT * FROM points;"));
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        out.stdout
    };
    let created = "Created table points (0 entries)\nInserted 3 rows into points\n";
    assert_eq!(
        select("csv"),
        format!("{created}i,j,v\n0,1,0.5\n1,1,3.0\n2,0,-1.25\n")
    );
    assert_eq!(
        select("tsv"),
        format!("{created}i\tj\tv\n0\t1\t0.5\n1\t1\t3.0\n2\t0\t-1.25\n")
    );
    assert_eq!(
        select("json"),
        format!(
            "{created}[{{\"i\":0,\"j\":1,\"v\":0.5}},\n{{\"i\":1,\"j\":1,\"v\":3.0}},\n{{\"i\":2,\"j\":0,\"v\":-1.25}}]\n"
        )
    );
    assert_eq!(
        select("markdown"),
        format!(
            "{created}|   i |   j |     v |\n| --: | --: | ----: |\n|   0 |   1 |   0.5 |\n|   1 |   1 |   3.0 |\n|   2 |   0 | -1.25 |\n"
        )
    );
    assert_eq!(
        select("line"),
        format!(
            "{created}i = 0\nj = 1\nv = 0.5\n\ni = 1\nj = 1\nv = 3.0\n\ni = 2\nj = 0\nv = -1.25\n"
        )
    );
    assert!(select("table").contains("│      2 ┆      0 ┆  -1.25 │\n"));
    let out = command(".mode csv\n.mode\n.mode markdwn");
    assert_eq!(out.stdout, "mode csv\n");
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .contains("Mode 'markdwn' does not exist (did you mean 'markdown'?)"),
        "{}",
        out.stderr
    );
}

#[test]
fn mode_option_selects_the_mode() {
    let out = run(&["--mode", "csv", "-c", POINTS, "-c", "SELECT * FROM points;"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // Data modes leave out statement messages.
    assert_eq!(out.stdout, "i,j,v\n0,1,0.5\n1,1,3.0\n2,0,-1.25\n");
}

#[test]
fn large_integers_and_string_keys_are_shown_exactly() {
    let out = command(
        "CREATE TABLE scores (player VARCHAR, round INT, points BIGINT, PRIMARY KEY (player, round));\n\
         INSERT INTO scores VALUES ('zoë', 1, 9223372036854775807), ('ada', 2, -9223372036854775808);\n\
         .mode json\nSELECT * FROM scores;\n.mode csv\nSELECT * FROM scores;",
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.ends_with(
            "[{\"player\":\"ada\",\"round\":2,\"points\":-9223372036854775808},\n\
         {\"player\":\"zoë\",\"round\":1,\"points\":9223372036854775807}]\n\
         player,round,points\nada,2,-9223372036854775808\nzoë,1,9223372036854775807\n"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn maxrows_elides_the_middle_of_long_results() {
    let values: Vec<String> = (0..10).map(|i| format!("({i}, {})", i * 10)).collect();
    let setup = format!(
        "CREATE TABLE t (i INT, v BIGINT, PRIMARY KEY (i));\nINSERT INTO t VALUES {};\n",
        values.join(", ")
    );
    let out = command(&format!("{setup}.maxrows 4\n.maxrows\nSELECT * FROM t;"));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let table = out
        .stdout
        .split_once("maxrows 4\n")
        .expect("setting shown")
        .1;
    assert_eq!(
        table,
        "┌────────┬────────┐\n\
         │ i      ┆ v      │\n\
         │ bigint ┆ bigint │\n\
         ╞════════╪════════╡\n\
         │      0 ┆      0 │\n\
         │      1 ┆     10 │\n\
         │      … ┆      … │\n\
         │      8 ┆     80 │\n\
         │      9 ┆     90 │\n\
         └────────┴────────┘\n\
         10 rows (4 shown)\n"
    );
    let all = command(&format!("{setup}.maxrows 0\nSELECT * FROM t;"));
    assert!(
        all.stdout
            .ends_with("│      9 ┆     90 │\n└────────┴────────┘\n10 rows\n")
    );
    let bad = command(".maxrows many");
    assert_eq!(bad.code, Some(1));
    assert!(
        bad.stderr.contains(".maxrows takes a whole number"),
        "{}",
        bad.stderr
    );
}

#[test]
fn tables_schema_and_describe() {
    let out = command(&format!(
        "{POINTS}CREATE TABLE sales (store VARCHAR, day INT, amount BIGINT, PRIMARY KEY (store, day));\n\
         INSERT INTO sales VALUES ('north', 0, 5), ('south', 3, 7);\n\
         .tables\n.schema\n.schema sales\n.describe sales"
    ));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let after = out
        .stdout
        .split_once("Inserted 2 rows into sales\n")
        .expect("setup ran")
        .1;
    let (listing, description) = after.split_at(after.find("Table sales:").expect("described"));
    assert_eq!(
        listing,
        "points\nsales\n\
         CREATE TABLE points (i BIGINT, j BIGINT, v DOUBLE, PRIMARY KEY (i, j));\n\
         CREATE TABLE sales (store VARCHAR, day BIGINT, amount BIGINT, PRIMARY KEY (store, day));\n\
         CREATE TABLE sales (store VARCHAR, day BIGINT, amount BIGINT, PRIMARY KEY (store, day));\n"
    );
    let lines: Vec<&str> = description.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "Table sales: 2 stored entries",
            "  dimension 1  store   VARCHAR  size 2 (dictionary of 2 strings)",
            "  dimension 2  day     BIGINT   size 4",
            "  value        amount  BIGINT",
        ]
    );
    assert_eq!(
        lines[4..],
        [
            "Degree statistics (the most entries over X for one value of Y):",
            "  D(store) = 2",
            "  D(day) = 2",
            "  D(store,day) = 2",
            "  D(day | store) = 1",
            "  D(store | day) = 1",
            "Fibertree indexes built: none",
        ]
    );
    let missing = command(".describe sails\n.schema sails");
    assert_eq!(missing.code, Some(1));
    assert_eq!(
        missing
            .stderr
            .matches("Table 'sails' does not exist")
            .count(),
        2,
        "{}",
        missing.stderr
    );
}

#[test]
fn syntax_errors_point_at_the_position_and_fail() {
    let out = command("SHOW TABLES;\nSELECT *\n  FORM points;\nSHOW TABLES;");
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr,
        "Error: Syntax error: Expected: end of statement, found: FORM\n \
         --> <command>:3:3\n  |\n3 |   FORM points;\n  |   ^\n"
    );
    // Without --bail the statements after the error still run.
    assert_eq!(out.stdout.matches("0 rows").count(), 2, "{}", out.stdout);
}

#[test]
fn unknown_tables_are_pointed_at_with_a_suggestion() {
    let out = command(&format!("{POINTS}SELECT * FROM pionts;"));
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr,
        "Error: Table 'pionts' does not exist (did you mean 'points'?)\n \
         --> <command>:3:15\n  |\n3 | SELECT * FROM pionts;\n  |               ^\n"
    );
}

#[test]
fn bail_stops_at_the_first_error() {
    let out = run(&["--bail", "-c", "SELECT * FROM nowhere;\nSHOW TABLES;"]);
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .starts_with("Error: Table 'nowhere' does not exist")
    );
    let out = run(&["--bail", "-c", ".nosuch\nSHOW TABLES;"]);
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stdout, "");
}

#[test]
fn unknown_commands_suggest_the_closest() {
    let out = command(".tabels");
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr,
        "Error: Command '.tabels' does not exist (did you mean '.tables'?)\n --> <command>:1:1\n"
    );
    let usage = command(".describe");
    assert_eq!(usage.code, Some(1));
    assert!(
        usage
            .stderr
            .starts_with("Error: Invalid input: usage: .describe TABLE\n")
    );
}

#[test]
fn help_lists_every_command_and_filters() {
    let out = command(".help");
    assert_eq!(out.code, Some(0));
    for name in [
        ".describe",
        ".exit",
        ".explain",
        ".help",
        ".load",
        ".maxrows",
        ".mode",
        ".open",
        ".output",
        ".quit",
        ".read",
        ".save",
        ".schema",
        ".tables",
        ".threads",
        ".timer",
    ] {
        assert!(out.stdout.contains(&format!("  {name}")), "{name}");
    }
    assert!(out.stdout.contains("EXPLAIN"));
    let filtered = command(".help mode");
    assert_eq!(
        filtered.stdout,
        "  .mode [table|csv|tsv|json|markdown|line]  Set (or show) how results are printed\n"
    );
    let none = command(".help zzz");
    assert_eq!(none.code, Some(1));
}

#[test]
fn statements_from_standard_input() {
    let out = run_with_stdin(
        &mut einsql(),
        &format!("{POINTS}-- a comment\nSELECT *\nFROM points\n;\n.mode csv\nSELECT * FROM points"),
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("│      2 ┆      0 ┆  -1.25 │"),
        "{}",
        out.stdout
    );
    // The last statement runs without its semicolon at the end of input.
    assert!(
        out.stdout.ends_with("i,j,v\n0,1,0.5\n1,1,3.0\n2,0,-1.25\n"),
        "{}",
        out.stdout
    );
    let failing = run_with_stdin(&mut einsql(), "SELECT * FROM t;\n");
    assert_eq!(failing.code, Some(1));
    assert!(
        failing.stderr.contains("--> <stdin>:1:15"),
        "{}",
        failing.stderr
    );
}

#[test]
fn scripts_read_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("inner.sql");
    std::fs::write(&inner, "SHOW TABLES;\nSELECT * FROM\n  missing;\n").unwrap();
    let outer = dir.path().join("outer.sql");
    std::fs::write(
        &outer,
        format!(
            "{POINTS}.read {}\n.mode csv\nSELECT * FROM points;\n",
            inner.display()
        ),
    )
    .unwrap();
    let out = run(&["-f", outer.to_str().unwrap()]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .contains(&format!("--> {}:3:3\n", inner.display())),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("points\n"), "{}", out.stdout);
    assert!(out.stdout.ends_with("i,j,v\n0,1,0.5\n1,1,3.0\n2,0,-1.25\n"));
    // A script that reads itself stops with an error.
    let looping = dir.path().join("loop.sql");
    std::fs::write(&looping, format!(".read {}\n", looping.display())).unwrap();
    let out = run(&["-f", looping.to_str().unwrap()]);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.contains("does '"), "{}", out.stderr);
    let missing = run(&["-f", "no/such/script.sql"]);
    assert_eq!(missing.code, Some(1));
    assert!(
        missing.stderr.contains("no/such/script.sql"),
        "{}",
        missing.stderr
    );
}

#[test]
fn output_goes_to_a_file_until_reset() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.csv");
    let out = command(&format!(
        "{POINTS}.mode csv\n.output {}\nSELECT * FROM points;\n.output\nSHOW TABLES;",
        file.display()
    ));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "i,j,v\n0,1,0.5\n1,1,3.0\n2,0,-1.25\n"
    );
    assert_eq!(
        out.stdout,
        "Created table points (0 entries)\nInserted 3 rows into points\nname\npoints\n"
    );
    let bad = command(".output /no/such/dir/out.csv");
    assert_eq!(bad.code, Some(1));
    assert!(
        bad.stderr.contains("/no/such/dir/out.csv"),
        "{}",
        bad.stderr
    );
}

#[test]
fn timer_reports_run_time_on_stderr() {
    let out = command(".timer on\n.timer\nSHOW TABLES;\n.timer off\nSHOW TABLES;");
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.starts_with("timer on\n"), "{}", out.stdout);
    assert_eq!(
        out.stderr.matches("Run Time: ").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(out.stderr.ends_with(" s\n"), "{}", out.stderr);
    let bad = command(".timer maybe");
    assert_eq!(bad.code, Some(1));
    assert!(
        bad.stderr.contains(".timer takes on or off"),
        "{}",
        bad.stderr
    );
}

#[test]
fn explain_prefixes_statements() {
    let out = command(&format!(
        "{POINTS}.explain on\n.explain\nSELECT * FROM points;"
    ));
    assert!(out.stdout.contains("explain on\n"), "{}", out.stdout);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // The plan, not the rows.
    assert!(
        out.stdout.contains("Scan points: dimensions"),
        "{}",
        out.stdout
    );
    let off = command(&format!(
        "{POINTS}.explain on\n.explain off\nSELECT * FROM points;"
    ));
    assert_eq!(off.code, Some(0), "{}", off.stderr);
    assert!(!off.stdout.contains("Scan points"), "{}", off.stdout);
}

#[test]
fn threads_setting() {
    let out = command(&format!(
        "{POINTS}.threads 2\n.threads\n.mode csv\nSELECT * FROM points;"
    ));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("threads 2\n"));
    assert!(out.stdout.ends_with("i,j,v\n0,1,0.5\n1,1,3.0\n2,0,-1.25\n"));
    let default = command(".threads");
    assert!(
        default.stdout.starts_with("threads 0 (one per core: "),
        "{}",
        default.stdout
    );
    let option = run(&["--threads", "1", "-c", ".threads"]);
    assert_eq!(option.stdout, "threads 1\n");
    let bad = command(".threads -1");
    assert_eq!(bad.code, Some(1));
}

#[test]
fn quit_and_exit_stop_the_input() {
    for quit in [".quit", ".exit"] {
        let out = command(&format!("SHOW TABLES;\n{quit}\nSELECT * FROM nowhere;"));
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert_eq!(
            out.stdout,
            "┌─────────┐\n│ name    │\n│ varchar │\n╞═════════╡\n└─────────┘\n0 rows\n"
        );
    }
}

#[test]
fn einsum_statements_reach_the_engine() {
    let out = command("C[i,k] = SUM(j) A[i,j] * B[j,k];\nSHOW TABLES;");
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.starts_with("Error: "), "{}", out.stderr);
    // The report points at the unknown table, once, in input coordinates.
    assert_eq!(
        out.stderr,
        "Error: Table 'A' does not exist\n --> <command>:1:17\n  |\n\
         1 | C[i,k] = SUM(j) A[i,j] * B[j,k];\n  |                 ^\n"
    );
    // The statement after it runs: the splitter ended the einsum at its ';'.
    assert!(out.stdout.ends_with("0 rows\n"), "{}", out.stdout);
}

#[test]
fn einsum_errors_point_into_the_script_like_sql_errors() {
    let out = command(
        "CREATE TABLE a (i INT, v INT, PRIMARY KEY (i));\n\
         SHOW TABLES; t[i] = a[i] *\n   1 $ 2;",
    );
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr,
        "Error: Syntax error: unexpected character '$'\n --> <command>:3:6\n  |\n\
         3 |    1 $ 2;\n  |      ^\n"
    );
}

#[test]
fn strings_and_comments_do_not_end_statements() {
    let out = command(
        "CREATE TABLE words (w VARCHAR, n BIGINT, PRIMARY KEY (w)); -- a; comment\n\
         INSERT INTO words VALUES ('a;b', 1), ('it''s', 2); /* ; */\n.mode csv\nSELECT * FROM words;",
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.ends_with("w,n\na;b,1\nit's,2\n"),
        "{}",
        out.stdout
    );
}

// The tests below need the file readers and writers and the on-disk store.

#[test]
fn load_and_save_sample_files() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("graph.csv");
    let out = command(&format!(
        ".load data/graph.mtx\n.load data/sales.csv AS shop\n.load data/ratings.tns\n\
         .tables\n.save graph {}\n.load {} AS copy\n.mode csv\nSELECT * FROM shop;",
        saved.display(),
        saved.display()
    ));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("Created table graph (9 entries)\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("copy\ngraph\nratings\nshop\n")
            || out.stdout.contains("graph\nratings\nshop\n")
    );
    assert!(
        out.stdout.contains("Created table copy (9 entries)\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("east,pears,9\n"), "{}", out.stdout);
    let unknown = command(".load data/README.md");
    assert_eq!(unknown.code, Some(1));
    assert!(
        unknown.stderr.contains("cannot tell the format"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn sample_script_loads_every_sample() {
    let out = run(&["-f", "sql/samples.sql", "-c", ".tables"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Created table graph (9 entries)\nCreated table sales (5 entries)\n\
         Created table ratings (6 entries)\ngraph\nratings\nsales\n"
    );
}

#[test]
fn persistent_databases_keep_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mydb");
    let db = db.to_str().unwrap();
    let first = run(&[db, "-c", POINTS]);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let second = run(&[db, "--mode", "csv", "-c", "SELECT * FROM points;"]);
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert_eq!(second.stdout, "i,j,v\n0,1,0.5\n1,1,3.0\n2,0,-1.25\n");
    let reopened = command(&format!(".open {db}\n.tables\n.open\n.tables"));
    assert_eq!(reopened.code, Some(0), "{}", reopened.stderr);
    assert_eq!(
        reopened.stdout,
        format!("Opened the database in {db} (1 table)\npoints\nOpened a new in-memory database\n")
    );
}

/// One exchange of the first session: the lines typed and what followed.
struct Exchange {
    input: Vec<String>,
    output: String,
}

/// Parses a transcript: `einsql> ` starts an input line, `   ...> ` goes
/// on with it, and everything else is output. The lines before the first
/// prompt (the command and the welcome lines) are returned separately.
fn parse_transcript(text: &str) -> (Vec<String>, Vec<Exchange>) {
    let mut preamble = Vec::new();
    let mut exchanges: Vec<Exchange> = Vec::new();
    for line in text.lines() {
        if let Some(input) = line.strip_prefix("einsql> ") {
            exchanges.push(Exchange {
                input: vec![input.to_string()],
                output: String::new(),
            });
        } else if let Some(more) = line.strip_prefix("   ...> ") {
            exchanges
                .last_mut()
                .expect("a prompt first")
                .input
                .push(more.to_string());
        } else if let Some(exchange) = exchanges.last_mut() {
            exchange.output.push_str(line);
            exchange.output.push('\n');
        } else {
            preamble.push(line.to_string());
        }
    }
    (preamble, exchanges)
}

#[test]
fn first_session_transcript_is_well_formed() {
    let (preamble, exchanges) = parse_transcript(&common::first_session());
    assert_eq!(preamble.first().map(String::as_str), Some("$ einsql"));
    assert!(exchanges.len() >= 5);
    assert_eq!(exchanges.last().unwrap().input, [".quit"]);
}

#[test]
fn first_session_transcript_replays() {
    let (_, exchanges) = parse_transcript(&common::first_session());
    let input: String = exchanges
        .iter()
        .flat_map(|e| &e.input)
        .map(|line| format!("{line}\n"))
        .collect();
    let expected: String = exchanges.iter().map(|e| e.output.as_str()).collect();
    // Standard output and standard error share one pipe, in order, as on
    // a terminal.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut child = einsql()
        .stdin(Stdio::piped())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let status = child.wait().unwrap();
    let actual = std::fs::read_to_string(&log).unwrap();
    assert_eq!(actual, expected);
    // The session shows an error on purpose.
    assert_eq!(status.code(), Some(1));
    assert!(Path::new(&root().join("sql/samples.sql")).exists());
}
