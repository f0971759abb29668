//! The `einsql` shell driven through a pseudo-terminal, as a person would:
//! the welcome lines, multi-line statements with the continuation prompt,
//! tab completion, history across two sessions, Ctrl-C at the prompt
//! (the session survives), and Ctrl-C during a load and `CALL dbgen` (its
//! progress bar shows, and no table is made).
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use rexpect::reader::Options;
use rexpect::session::{PtySession, spawn_with_options};

/// How long to wait for expected output (the machine may be busy).
const TIMEOUT_MS: u64 = 30_000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Starts an interactive shell whose history file is `history`.
fn shell(history: &Path) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_einsql"));
    command
        .current_dir(root())
        .env("EINSQL_HISTORY", history)
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
    let options = Options::new()
        .timeout_ms(Some(TIMEOUT_MS))
        .strip_ansi_escape_codes(true);
    spawn_with_options(command, options).expect("einsql starts in a pseudo-terminal")
}

/// Types `keys` (without Enter).
fn type_keys(session: &mut PtySession, keys: &str) {
    session.send(keys).unwrap();
    session.flush().unwrap();
}

/// Types `line` and Enter.
fn enter(session: &mut PtySession, line: &str) {
    type_keys(session, &format!("{line}\r"));
}

/// Ends the session with Ctrl-D and waits for the process to exit. Call
/// it once the prompt has shown: the editor drops keys typed before it is
/// ready, and a lost Ctrl-D leaves the shell waiting.
fn quit(mut session: PtySession) {
    session.send_control('d').unwrap();
    session.exp_eof().unwrap();
}

/// A named pipe `endless.mtx` in `dir` that a writer thread keeps filling
/// with Matrix Market entries and never closes: a load from it is certainly
/// still running when Ctrl-C arrives, however fast the machine. The writer
/// ends when the reader closes the pipe.
fn endless_pipe(dir: &Path) -> (PathBuf, std::thread::JoinHandle<()>) {
    let pipe = dir.join("endless.mtx");
    let made = Command::new("mkfifo").arg(&pipe).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    let writer = {
        let pipe = pipe.clone();
        std::thread::spawn(move || {
            // Opening blocks until the shell opens the pipe to read.
            let mut file = std::fs::OpenOptions::new().write(true).open(&pipe).unwrap();
            let header = "%%MatrixMarket matrix coordinate pattern general\n\
                          1000000000 1000000000 1000000000000\n";
            if std::io::Write::write_all(&mut file, header.as_bytes()).is_err() {
                return;
            }
            let mut row = 0u64;
            loop {
                let mut chunk = String::with_capacity(1 << 16);
                for _ in 0..4096 {
                    row += 1;
                    chunk.push_str(&format!("{row} 1\n"));
                }
                if std::io::Write::write_all(&mut file, chunk.as_bytes()).is_err() {
                    return;
                }
            }
        })
    };
    (pipe, writer)
}

#[test]
fn welcome_lines_match_the_first_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = shell(&dir.path().join("history"));
    let transcript = common::first_session();
    let welcome: Vec<&str> = transcript
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("einsql> "))
        .collect();
    assert_eq!(welcome.len(), 2, "{transcript}");
    for line in welcome {
        session.exp_string(line).unwrap();
    }
    session.exp_string("einsql> ").unwrap();
    quit(session);
}

#[test]
fn multi_line_statements_use_a_continuation_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = shell(&dir.path().join("history"));
    session.exp_string("einsql> ").unwrap();
    enter(
        &mut session,
        "CREATE TABLE points (i INT, v DOUBLE, PRIMARY KEY (i));",
    );
    session
        .exp_string("Created table points (0 entries)")
        .unwrap();
    enter(&mut session, "INSERT INTO points");
    session.exp_string("   ...> ").unwrap();
    enter(&mut session, "VALUES (7, 0.25);");
    session.exp_string("Inserted 1 row into points").unwrap();
    enter(&mut session, "SELECT *");
    session.exp_string("   ...> ").unwrap();
    enter(&mut session, "  FROM points;");
    session.exp_string("0.25").unwrap();
    session.exp_string("1 row").unwrap();
    session.exp_string("einsql> ").unwrap();
    quit(session);
}

#[test]
fn tab_completes_tables_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = shell(&dir.path().join("history"));
    session.exp_string("einsql> ").unwrap();
    enter(
        &mut session,
        "CREATE TABLE inventory (item VARCHAR, n BIGINT, PRIMARY KEY (item));",
    );
    session.exp_string("Created table inventory").unwrap();
    enter(&mut session, "INSERT INTO inventory VALUES ('lamp', 3);");
    session.exp_string("Inserted 1 row").unwrap();
    // "inv" completes to the table name, "se" to the keyword in lower case.
    type_keys(&mut session, "se");
    type_keys(&mut session, "\t");
    type_keys(&mut session, " * FROM inv");
    type_keys(&mut session, "\t");
    enter(&mut session, ";");
    session.exp_string("lamp").unwrap();
    session.exp_string("1 row").unwrap();
    // Dot-commands complete too.
    type_keys(&mut session, ".tab");
    type_keys(&mut session, "\t");
    enter(&mut session, "");
    session.exp_regex("\\.tables\\s+inventory").unwrap();
    session.exp_string("einsql> ").unwrap();
    quit(session);
}

#[test]
fn history_survives_across_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history");
    let mut first = shell(&history);
    first.exp_string("einsql> ").unwrap();
    enter(&mut first, "CREATE TABLE remembered (i INT,");
    first.exp_string("   ...> ").unwrap();
    enter(&mut first, "  v DOUBLE, PRIMARY KEY (i));");
    first
        .exp_string("Created table remembered (0 entries)")
        .unwrap();
    quit(first);
    assert!(history.exists(), "the history file was written");

    // A new session (a new in-memory database) recalls the statement with
    // the Up arrow, both lines at once, and runs it again.
    let mut second = shell(&history);
    second.exp_string("einsql> ").unwrap();
    type_keys(&mut second, "\x1b[A");
    enter(&mut second, "");
    second
        .exp_string("Created table remembered (0 entries)")
        .unwrap();
    enter(&mut second, ".tables");
    second.exp_string("remembered").unwrap();
    quit(second);
}

#[test]
fn ctrl_c_at_the_prompt_clears_the_input_and_keeps_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = shell(&dir.path().join("history"));
    session.exp_string("einsql> ").unwrap();
    enter(&mut session, "CREATE TABLE kept (i INT);");
    session.exp_string("Created table kept").unwrap();
    session.exp_string("einsql> ").unwrap();
    // Half a line, then Ctrl-C: the line is dropped. (Wait for each echo
    // and prompt: the editor discards keys typed before it is ready.)
    type_keys(&mut session, "DROP TABLE kept");
    session.exp_string("DROP TABLE kept").unwrap();
    session.send_control('c').unwrap();
    session.exp_string("einsql> ").unwrap();
    // A statement under way on a continuation line is dropped too.
    enter(&mut session, "DROP TABLE");
    session.exp_string("   ...> ").unwrap();
    session.send_control('c').unwrap();
    session.exp_string("einsql> ").unwrap();
    enter(&mut session, ".tables");
    session.exp_string("kept").unwrap();
    enter(&mut session, "SELECT * FROM kept;");
    let (before, _) = session.exp_regex("\\d+ rows?").unwrap();
    assert!(!before.contains("Dropped"), "{before}");
    session.exp_string("einsql> ").unwrap();
    quit(session);
}

#[test]
fn ctrl_c_while_statements_run_stops_the_rest_and_keeps_the_session() {
    // A script still running when Ctrl-C arrives, however fast the
    // machine: inserts, a load from a pipe that never ends, more inserts.
    let dir = tempfile::tempdir().unwrap();
    let (pipe, writer) = endless_pipe(dir.path());
    let script = dir.path().join("long.sql");
    let mut text = String::from("CREATE TABLE counter (i INT, PRIMARY KEY (i));\n");
    for i in 0..5000 {
        if i == 100 {
            text.push_str(&format!(
                "CREATE TABLE big AS SELECT * FROM read_mtx('{}');\n",
                pipe.display()
            ));
        }
        text.push_str(&format!("INSERT INTO counter VALUES ({i});\n"));
    }
    std::fs::write(&script, text).unwrap();
    let mut session = shell(&dir.path().join("history"));
    session.exp_string("einsql> ").unwrap();
    enter(&mut session, &format!(".read {}", script.display()));
    session.exp_string("Inserted 1 row into counter").unwrap();
    // The load's progress spinner shows the script has reached it.
    session.exp_string("MiB/s)").unwrap();
    session.send_control('c').unwrap();
    // The rest of the script is skipped and the session stays.
    session
        .exp_string("Interrupted: the statement under way")
        .unwrap();
    session.exp_string("einsql> ").unwrap();
    enter(&mut session, ".mode csv");
    session.exp_string("einsql> ").unwrap();
    enter(&mut session, "SELECT * FROM counter;");
    let listing = session.exp_string("einsql> ").unwrap();
    let rows = listing
        .lines()
        .filter(|line| line.trim().parse::<u32>().is_ok())
        .count();
    assert!((1..5000).contains(&rows), "{rows} rows in {listing}");
    quit(session);
    writer.join().unwrap();
}

#[test]
fn ctrl_c_cancels_a_long_load_and_keeps_the_session() {
    // The load reads a pipe that never ends (see `endless_pipe`).
    let dir = tempfile::tempdir().unwrap();
    let (pipe, writer) = endless_pipe(dir.path());
    let mut session = shell(&dir.path().join("history"));
    session.exp_string("einsql> ").unwrap();
    enter(&mut session, "CREATE TABLE kept (x INT);");
    session.exp_string("einsql> ").unwrap();
    let load = format!(
        "CREATE TABLE big AS SELECT * FROM read_mtx('{}');",
        pipe.display()
    );
    enter(&mut session, &load);
    // The progress spinner (drawn after about a second) shows the load is
    // under way: "endless.mtx 88.00 MiB (67.10 MiB/s)".
    session.exp_string("MiB/s)").unwrap();
    interrupt_and_list_tables(&mut session, "kept", "big");
    quit(session);
    writer.join().unwrap();
}

#[test]
fn ctrl_c_cancels_dbgen_and_creates_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = shell(&dir.path().join("history"));
    session.exp_string("einsql> ").unwrap();
    enter(&mut session, "CREATE TABLE kept (x INT);");
    session.exp_string("einsql> ").unwrap();
    enter(&mut session, "CALL dbgen(sf = 1);");
    // The progress bar (drawn after about a second) counts rows:
    // "dbgen(sf = 1) [=====>   ] 1.20M/8.66M rows (...)".
    session.exp_string(" rows (").unwrap();
    interrupt_and_list_tables(&mut session, "kept", "lineitem");
    quit(session);
}

/// Presses Ctrl-C during a statement, expects it cancelled, and checks
/// that `.tables` still lists `kept` and not `absent`.
fn interrupt_and_list_tables(session: &mut PtySession, kept: &str, absent: &str) {
    session.send_control('c').unwrap();
    session
        .exp_string("Interrupted: the statement under way was cancelled and changed nothing")
        .unwrap();
    session.exp_string("einsql> ").unwrap();
    enter(session, ".tables");
    let listing = session.exp_string("einsql> ").unwrap();
    assert!(listing.contains(kept), "{listing}");
    assert!(!listing.contains(absent), "{listing}");
}
