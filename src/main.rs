//! The `einsql` command: an interactive shell over an einsql database, or a
//! script runner when given `-c`, `-f` or piped standard input.
//!
//! This file only parses the command line (`clap`); the shell itself is in
//! [`shell`].

/// Allocations go to mimalloc (the `mimalloc` feature, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod shell;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use shell::Mode;

/// einsql: an embedded database engine for sparse tensors, driven by SQL.
///
/// Without -c or -f, einsql reads statements from standard input: at a
/// terminal it starts an interactive shell (".help" lists the dot-commands),
/// otherwise it runs them as a script. Statements end with ';'.
#[derive(Debug, Parser)]
#[command(
    name = "einsql",
    version,
    after_help = "Examples:\n  \
        einsql                                  interactive shell, in-memory database\n  \
        einsql mydb/                            interactive shell on the database in mydb/\n  \
        einsql -c \"SHOW TABLES;\"                run statements and exit\n  \
        einsql -f sql/samples.sql --mode csv    run a script, print CSV\n  \
        einsql < script.sql                     run statements from standard input\n\n\
        The exit status is 1 when a statement or command failed.\n\
        History is kept in $EINSQL_HISTORY (default ~/.einsql_history; empty: no history)."
)]
struct Args {
    /// Directory of a persistent database, created if missing (default: a
    /// transient in-memory database).
    database: Option<PathBuf>,

    /// Run these statements and dot-commands, then exit (may be repeated;
    /// runs after the -f scripts).
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    commands: Vec<String>,

    /// Run this script, then exit (may be repeated).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    files: Vec<PathBuf>,

    /// How results are printed.
    #[arg(short, long, value_enum, default_value_t = Mode::Table)]
    mode: Mode,

    /// Stop at the first statement that fails.
    #[arg(long)]
    bail: bool,

    /// Worker threads for statements (0: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    shell::run(shell::Options {
        database: args.database,
        files: args.files,
        commands: args.commands,
        mode: args.mode,
        bail: args.bail,
        threads: args.threads,
    })
}
