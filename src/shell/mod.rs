//! The einsql shell: an interactive prompt and a script runner over the
//! public [`Database`] API.
//!
//! Input arrives as lines (typed at the prompt, from a script, from `-c` or
//! standard input) and goes through one path ([`input`]): dot-commands run
//! from the command table ([`commands`]); statements are split at `;`
//! ([`splitter`]), executed by the engine, and their results rendered in
//! the current output mode ([`render`]); errors are reported with the
//! position they refer to ([`report`]). The prompt adds line editing,
//! history and completion ([`editor`]), Ctrl-C handling ([`interrupt`]) and
//! progress bars for long loads ([`progress`]).

mod commands;
mod editor;
mod input;
mod interrupt;
mod progress;
mod render;
mod report;
mod splitter;

use std::fs::File;
use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use einsql::{Database, Error, Result, RowStream};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{CompletionType, Config, Editor};

use editor::{Names, SharedNames, ShellHelper};
use input::Input;
use progress::TerminalProgress;
use render::Layout;
pub use render::Mode;
use report::{Origin, Spot};

/// The prompt of a new statement.
const PROMPT: &str = "einsql> ";
/// The prompt of a statement's further lines.
const CONTINUATION: &str = "   ...> ";
/// The name of standard input in error reports, typed or piped: a session
/// at the prompt reports errors exactly as the same lines piped in would.
const STDIN: &str = "<stdin>";
/// Scripts may read scripts this deep (a script reading itself stops).
const MAX_READ_DEPTH: usize = 16;

/// How the shell was started (from the command line).
#[derive(Clone, Debug)]
pub struct Options {
    /// The database directory; in memory when `None`.
    pub database: Option<PathBuf>,
    /// Scripts to run, in order, before `commands`.
    pub files: Vec<PathBuf>,
    /// Statement texts to run, in order.
    pub commands: Vec<String>,
    /// The output mode.
    pub mode: Mode,
    /// Stop at the first failing statement (scripts only).
    pub bail: bool,
    /// Worker threads (0: one per core).
    pub threads: usize,
}

/// What to do after a statement or command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the input.
    Continue,
    /// Stop this input: a statement failed under `--bail`, or Ctrl-C.
    Stop,
    /// Leave the shell.
    Quit,
}

/// The settings that dot-commands change.
#[derive(Clone, Copy, Debug)]
struct Settings {
    mode: Mode,
    max_rows: usize,
    timer: bool,
    explain: bool,
    threads: usize,
    bail: bool,
}

/// Where results go.
enum Output {
    Stdout,
    File {
        path: PathBuf,
        writer: BufWriter<File>,
    },
}

impl Output {
    /// Results to `path`, replacing the file.
    fn file(path: PathBuf) -> Result<Output> {
        let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        Ok(Output::File {
            path,
            writer: BufWriter::new(file),
        })
    }
}

/// A running shell: the database, the settings and where output goes.
pub struct Shell {
    db: Database,
    /// The database directory, if the database is persistent.
    location: Option<PathBuf>,
    progress: Arc<TerminalProgress>,
    settings: Settings,
    output: Output,
    /// The worker threads statements run on, when `.threads` chose a number.
    pool: Option<rayon::ThreadPool>,
    color: bool,
    /// Whether some statement or command failed.
    failed: bool,
    /// How many `.read` scripts are running inside each other.
    depth: usize,
    /// Names for completion, refreshed after every statement.
    names: SharedNames,
}

/// Runs the shell as `options` say and returns the exit status: failure
/// when a script's statement failed (the prompt always exits with success).
pub fn run(options: Options) -> ExitCode {
    let color = report::use_color();
    let mut shell = match Shell::new(&options, color) {
        Ok(shell) => shell,
        Err(error) => {
            report::print(&error.to_string(), None, None, color);
            return ExitCode::FAILURE;
        }
    };
    let interactive =
        options.files.is_empty() && options.commands.is_empty() && io::stdin().is_terminal();
    if interactive {
        shell.settings.bail = false;
        shell.interact();
        return ExitCode::SUCCESS;
    }
    shell.run_batch(&options);
    if let Err(error) = shell.flush_output() {
        shell.report(&error, None, None);
    }
    if shell.failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

impl Shell {
    fn new(options: &Options, color: bool) -> Result<Shell> {
        let db = match &options.database {
            Some(dir) => Database::open(dir)?,
            None => Database::open_in_memory(),
        };
        let mut shell = Shell {
            db: Database::open_in_memory(),
            location: None,
            progress: Arc::new(TerminalProgress::new()),
            settings: Settings {
                mode: options.mode,
                max_rows: 40,
                timer: false,
                explain: false,
                threads: 0,
                bail: options.bail,
            },
            output: Output::Stdout,
            pool: None,
            color,
            failed: false,
            depth: 0,
            names: Arc::new(Mutex::new(Names::default())),
        };
        shell.replace_database(db, options.database.clone());
        shell.set_threads(options.threads)?;
        Ok(shell)
    }

    /// Makes `db` (kept in `location`, if persistent) the current database.
    fn replace_database(&mut self, mut db: Database, location: Option<PathBuf>) {
        db.set_progress(Arc::clone(&self.progress) as Arc<dyn einsql::progress::ProgressSink>);
        db.set_interrupt(interrupt::handle());
        db.set_threads(self.settings.threads);
        self.db = db;
        self.location = location;
        self.refresh_names();
    }

    /// Runs statements on `threads` worker threads (0: the default pool,
    /// one per core).
    fn set_threads(&mut self, threads: usize) -> Result<()> {
        self.pool = match threads {
            0 => None,
            n => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| Error::Invalid(format!("cannot start {n} threads: {e}")))?,
            ),
        };
        self.settings.threads = threads;
        self.db.set_threads(threads);
        Ok(())
    }

    /// Scripts, then `-c` texts, or else standard input.
    fn run_batch(&mut self, options: &Options) {
        for file in &options.files {
            match self.run_file(file) {
                Ok(Flow::Continue) => {}
                Ok(_) => return,
                Err(error) => {
                    self.report(&error, None, None);
                    if self.fail() != Flow::Continue {
                        return;
                    }
                }
            }
        }
        for command in &options.commands {
            if self.run_text("<command>", command) != Flow::Continue {
                return;
            }
        }
        if options.files.is_empty() && options.commands.is_empty() {
            let mut input = Input::new(STDIN);
            for line in io::stdin().lock().lines() {
                let line = match line {
                    Ok(line) => line,
                    Err(error) => {
                        self.report(&Error::io("<stdin>", error), None, None);
                        self.failed = true;
                        return;
                    }
                };
                if input.feed(self, &line) != Flow::Continue {
                    return;
                }
            }
            input.finish(self);
        }
    }

    /// Runs every line of `text`, named `source` in error reports.
    fn run_text(&mut self, source: &str, text: &str) -> Flow {
        let mut input = Input::new(source);
        for line in text.lines() {
            let flow = input.feed(self, line);
            if flow != Flow::Continue {
                return flow;
            }
        }
        input.finish(self)
    }

    /// Runs the script at `path` (`.read`, `-f`).
    fn run_file(&mut self, path: &Path) -> Result<Flow> {
        if self.depth >= MAX_READ_DEPTH {
            return Err(Error::Invalid(format!(
                "scripts read each other more than {MAX_READ_DEPTH} deep (does '{}' read itself?)",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        self.depth += 1;
        let flow = self.run_text(&path.display().to_string(), &text);
        self.depth -= 1;
        Ok(flow)
    }

    /// The prompt loop.
    fn interact(&mut self) {
        let config = Config::builder()
            .history_ignore_space(true)
            .completion_type(CompletionType::List)
            .auto_add_history(false)
            .max_history_size(1000)
            .map(|builder| builder.build());
        let editor = config.and_then(Editor::<ShellHelper, DefaultHistory>::with_config);
        let mut editor = match editor {
            Ok(editor) => editor,
            Err(error) => {
                report::print(
                    &format!("cannot start the line editor: {error}"),
                    None,
                    None,
                    self.color,
                );
                return;
            }
        };
        editor.set_helper(Some(ShellHelper::new(Arc::clone(&self.names))));
        let history = editor::history_path();
        if let Some(path) = &history
            && path.exists()
            && let Err(error) = editor.load_history(path)
        {
            self.warn(&format!(
                "cannot read the history file {}: {error}",
                path.display()
            ));
        }
        interrupt::install();
        self.banner();
        let mut input = Input::new(STDIN);
        let mut entry = String::new();
        loop {
            let prompt = if input.is_idle() {
                PROMPT
            } else {
                CONTINUATION
            };
            match editor.readline(prompt) {
                Ok(text) => {
                    let mut flow = Flow::Continue;
                    for line in text.lines() {
                        flow = input.feed(self, line);
                        if flow != Flow::Continue {
                            break;
                        }
                    }
                    if !entry.is_empty() {
                        entry.push('\n');
                    }
                    entry.push_str(&text);
                    if input.is_idle() || flow != Flow::Continue {
                        self.remember(&mut editor, history.as_deref(), &entry);
                        entry.clear();
                        input.reset();
                    }
                    if flow == Flow::Quit {
                        break;
                    }
                }
                Err(ReadlineError::Interrupted) => {
                    input.reset();
                    entry.clear();
                }
                Err(ReadlineError::Eof) => break,
                Err(error) => {
                    self.warn(&format!("cannot read the input: {error}"));
                    break;
                }
            }
        }
        if let Err(error) = self.flush_output() {
            self.report(&error, None, None);
        }
    }

    /// The welcome lines.
    fn banner(&mut self) {
        let samples = if Path::new("sql/samples.sql").exists() {
            ", \".read sql/samples.sql\" to load the sample tables in data/"
        } else {
            ""
        };
        let database = match &self.location {
            Some(dir) => format!("Connected to the database in {}.", dir.display()),
            None => "Connected to a transient in-memory database; \".open DIR\" keeps tables in a directory.".to_string(),
        };
        let text = format!(
            "einsql {}: sparse tensors in SQL. Enter \".help\" for help{samples}.\n{database}\n",
            env!("CARGO_PKG_VERSION")
        );
        if let Err(error) = self.write(&text) {
            self.report(&error, None, None);
        }
    }

    /// Adds a finished entry to the history and appends it to the file.
    fn remember(
        &self,
        editor: &mut Editor<ShellHelper, DefaultHistory>,
        path: Option<&Path>,
        entry: &str,
    ) {
        if splitter::is_blank(entry) {
            return;
        }
        if !editor.add_history_entry(entry).unwrap_or(false) {
            return;
        }
        if let Some(path) = path
            && let Err(error) = editor.append_history(path)
        {
            self.warn(&format!(
                "cannot write the history file {}: {error}",
                path.display()
            ));
        }
    }

    /// Runs one dot-command line.
    fn run_command(&mut self, line: &str, origin: &Origin) -> Flow {
        let result = commands::words(line).and_then(|words| {
            let Some((name, args)) = words.split_first() else {
                return Ok(Flow::Continue);
            };
            let command = commands::find(name).ok_or_else(|| {
                Error::unknown("Command", name, commands::COMMANDS.iter().map(|c| c.name))
            })?;
            let (least, most) = command.arity;
            if args.len() < least || args.len() > most {
                return Err(Error::Invalid(format!(
                    "usage: {}",
                    commands::usage(command)
                )));
            }
            (command.run)(self, args)
        });
        match result {
            Ok(flow) => flow,
            Err(error) => {
                self.report(&error, Some(origin), None);
                self.fail()
            }
        }
    }

    /// Executes one statement's text and prints its result or error; the
    /// rows of a query are printed as their batches arrive.
    fn run_statement(&mut self, text: &str, origin: &Origin) -> Flow {
        let prefix = if self.settings.explain {
            "EXPLAIN "
        } else {
            ""
        };
        let sql = format!("{prefix}{text}");
        let started = Instant::now();
        let result = self.stream(&sql);
        self.refresh_names();
        if interrupt::take() {
            let what = if matches!(result, Err(einsql::Error::Cancelled)) {
                "the statement under way was cancelled and changed nothing"
            } else {
                "the statement under way had finished (its changes, if any, took effect; \
                 its result is not shown)"
            };
            self.warn(&format!(
                "Interrupted: {what}; the statements after it were skipped."
            ));
            return Flow::Stop;
        }
        let flow = match result {
            Ok(stream) => match self.print_stream(stream) {
                Ok(()) => Flow::Continue,
                Err(einsql::Error::Cancelled) if interrupt::take() => {
                    self.warn(
                        "Interrupted: the rest of the result was not shown; the statements \
                         after it were skipped.",
                    );
                    return Flow::Stop;
                }
                Err(error) => self.output_failed(&error),
            },
            Err(error) => {
                let (message, offset) = report::locate(&error, &sql);
                let spot = Spot {
                    text,
                    offset: offset.and_then(|o| o.checked_sub(prefix.len())),
                };
                report::print(&message, Some(origin), Some(spot), self.color);
                self.fail()
            }
        };
        if self.settings.timer {
            let elapsed = started.elapsed();
            self.warn(&format!("Run Time: {:.4} s", elapsed.as_secs_f64()));
        }
        flow
    }

    /// Executes `sql` on the configured threads and hands out the rows of
    /// its last statement as a stream.
    fn stream(&self, sql: &str) -> Result<RowStream> {
        match &self.pool {
            Some(pool) => pool.install(|| self.db.stream(sql)),
            None => self.db.stream(sql),
        }
    }

    /// Executes a statement that a dot-command built and prints its message.
    fn execute_quietly(&mut self, sql: &str) -> Result<Flow> {
        let result = self.stream(sql);
        self.refresh_names();
        self.print_stream(result?)?;
        Ok(Flow::Continue)
    }

    /// Prints a result: its rows (if it has columns or nothing else to
    /// say) as their batches arrive, then its message in the modes meant
    /// for people.
    fn print_stream(&mut self, stream: RowStream) -> Result<()> {
        let layout = Layout {
            mode: self.settings.mode,
            max_rows: self.settings.max_rows,
            width: None,
            to_terminal: matches!(self.output, Output::Stdout) && io::stdout().is_terminal(),
        };
        let schema = stream.schema();
        let message = stream.message().map(str::to_string);
        let show_rows = !schema.fields().is_empty() || message.is_none();
        let mut writer = render::RowWriter::new(&schema, &layout);
        for batch in stream {
            let batch = batch?;
            if show_rows {
                let mut text = Vec::new();
                writer
                    .write(&mut text, &batch)
                    .map_err(|e| Error::io("<output>", e))?;
                self.write_bytes(&text)?;
            }
        }
        let mut text = Vec::new();
        if show_rows {
            writer
                .finish(&mut text)
                .map_err(|e| Error::io("<output>", e))?;
        }
        if let Some(message) = &message
            && self.settings.mode.is_for_people()
        {
            text.extend_from_slice(message.as_bytes());
            text.push(b'\n');
        }
        self.write_bytes(&text)
    }

    /// Writes `text` to the output.
    fn write(&mut self, text: &str) -> Result<Flow> {
        self.write_bytes(text.as_bytes())?;
        Ok(Flow::Continue)
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        match &mut self.output {
            Output::Stdout => {
                let mut stdout = io::stdout().lock();
                stdout
                    .write_all(bytes)
                    .and_then(|()| stdout.flush())
                    .map_err(|e| Error::io("<stdout>", e))
            }
            Output::File { path, writer } => writer
                .write_all(bytes)
                .and_then(|()| writer.flush())
                .map_err(|e| Error::io(path.as_path(), e)),
        }
    }

    fn flush_output(&mut self) -> Result<()> {
        match &mut self.output {
            Output::Stdout => io::stdout().flush().map_err(|e| Error::io("<stdout>", e)),
            Output::File { path, writer } => {
                writer.flush().map_err(|e| Error::io(path.as_path(), e))
            }
        }
    }

    /// After a failed write: a closed pipe (`einsql ... | head`) ends the
    /// shell quietly; other errors are reported.
    fn output_failed(&mut self, error: &Error) -> Flow {
        if let Error::Io { source, .. } = error
            && source.kind() == io::ErrorKind::BrokenPipe
        {
            return Flow::Quit;
        }
        self.report(error, None, None);
        self.fail()
    }

    /// Records a failure; under `--bail` the input stops.
    fn fail(&mut self) -> Flow {
        self.failed = true;
        if self.settings.bail {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }

    fn report(&self, error: &Error, origin: Option<&Origin>, spot: Option<Spot<'_>>) {
        report::print(&error.to_string(), origin, spot, self.color);
    }

    /// A note on standard error.
    fn warn(&self, message: &str) {
        eprintln!("{message}");
    }

    /// Refreshes the table and column names that completion offers.
    fn refresh_names(&self) {
        let tables = self.db.table_names();
        let mut columns: Vec<String> = tables
            .iter()
            .flat_map(|name| self.db.column_names(name))
            .collect();
        columns.sort();
        columns.dedup();
        *self.names.lock().unwrap_or_else(PoisonError::into_inner) = Names { tables, columns };
    }
}
