//! The dot-commands, from one table.
//!
//! Each [`Command`] has its name, its arguments, a line of help, how many
//! arguments it takes, what tab completion offers for them, and its handler.
//! The table drives `.help`, the argument-count check with its usage
//! message, completion, and the "did you mean" for unknown commands.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use einsql::io::FileFormat;
use einsql::storage::{ColumnRef, Tensor};
use einsql::{Database, Error, Result};

use super::render::{Mode, count};
use super::{Flow, Output, Settings, Shell};

/// What tab completion offers for a command's arguments.
#[derive(Clone, Copy, Debug)]
pub enum Arguments {
    /// No arguments.
    Nothing,
    /// File paths.
    Files,
    /// Table names.
    Tables,
    /// A table name, then file paths.
    TableThenFile,
    /// One of these words.
    Choices(&'static [&'static str]),
    /// The output modes.
    Modes,
    /// Dot-command names.
    Commands,
}

/// A dot-command.
pub struct Command {
    /// The name, with its dot.
    pub name: &'static str,
    /// The arguments, as `.help` shows them.
    pub usage: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// The fewest and the most arguments.
    pub arity: (usize, usize),
    /// What completion offers for the arguments.
    pub arguments: Arguments,
    /// Runs the command with its arguments.
    pub run: fn(&mut Shell, &[String]) -> Result<Flow>,
}

const ON_OFF: &[&str] = &["on", "off"];

/// Every dot-command, in alphabetical order.
pub static COMMANDS: &[Command] = &[
    Command {
        name: ".describe",
        usage: "TABLE",
        help: "Show a table's dimensions (sizes), value columns, stored entries, statistics and indexes",
        arity: (1, 1),
        arguments: Arguments::Tables,
        run: describe,
    },
    Command {
        name: ".exit",
        usage: "",
        help: "Leave the shell (also .quit or Ctrl-D)",
        arity: (0, 0),
        arguments: Arguments::Nothing,
        run: quit,
    },
    Command {
        name: ".explain",
        usage: "[on|off]",
        help: "on: prefix every statement with EXPLAIN, showing its plan instead of running it",
        arity: (0, 1),
        arguments: Arguments::Choices(ON_OFF),
        run: explain,
    },
    Command {
        name: ".help",
        usage: "[PATTERN]",
        help: "Show this help, or only the commands whose name contains PATTERN",
        arity: (0, 1),
        arguments: Arguments::Commands,
        run: help,
    },
    Command {
        name: ".load",
        usage: "FILE [AS NAME]",
        help: "Load a .mtx, .tns, .parquet or .csv file into table NAME (default: the file name \
               without extension)",
        arity: (1, 3),
        arguments: Arguments::Files,
        run: load,
    },
    Command {
        name: ".maxrows",
        usage: "[N]",
        help: "Show at most N rows of a result in table mode, eliding the middle (0: all)",
        arity: (0, 1),
        arguments: Arguments::Nothing,
        run: maxrows,
    },
    Command {
        name: ".mode",
        usage: "[table|csv|tsv|json|markdown|line]",
        help: "Set (or show) how results are printed",
        arity: (0, 1),
        arguments: Arguments::Modes,
        run: mode,
    },
    Command {
        name: ".open",
        usage: "[DIR]",
        help: "Open (or create) the database in directory DIR; without DIR, a new in-memory one",
        arity: (0, 1),
        arguments: Arguments::Files,
        run: open,
    },
    Command {
        name: ".output",
        usage: "[FILE]",
        help: "Write results to FILE (replacing it); without FILE, to standard output again",
        arity: (0, 1),
        arguments: Arguments::Files,
        run: output,
    },
    Command {
        name: ".quit",
        usage: "",
        help: "Leave the shell (also .exit or Ctrl-D)",
        arity: (0, 0),
        arguments: Arguments::Nothing,
        run: quit,
    },
    Command {
        name: ".read",
        usage: "FILE",
        help: "Run the statements and dot-commands in FILE",
        arity: (1, 1),
        arguments: Arguments::Files,
        run: read,
    },
    Command {
        name: ".save",
        usage: "TABLE FILE",
        help: "Write a table to FILE, in the format its extension names (.mtx, .tns, .parquet, .csv)",
        arity: (2, 2),
        arguments: Arguments::TableThenFile,
        run: save,
    },
    Command {
        name: ".schema",
        usage: "[TABLE]",
        help: "Show the CREATE TABLE statement of every table, or of TABLE",
        arity: (0, 1),
        arguments: Arguments::Tables,
        run: schema,
    },
    Command {
        name: ".tables",
        usage: "",
        help: "List the tables",
        arity: (0, 0),
        arguments: Arguments::Nothing,
        run: tables,
    },
    Command {
        name: ".threads",
        usage: "[N]",
        help: "Run statements on N worker threads (0: one per core); without N, show the setting",
        arity: (0, 1),
        arguments: Arguments::Nothing,
        run: threads,
    },
    Command {
        name: ".timer",
        usage: "[on|off]",
        help: "Print how long each statement takes (on standard error)",
        arity: (0, 1),
        arguments: Arguments::Choices(ON_OFF),
        run: timer,
    },
];

/// The command called `name` (with its dot).
pub fn find(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// The usage line of a command: `.load FILE [AS NAME]`.
pub fn usage(command: &Command) -> String {
    if command.usage.is_empty() {
        command.name.to_string()
    } else {
        format!("{} {}", command.name, command.usage)
    }
}

/// Splits a dot-command line into words; `'...'` and `"..."` quote words
/// that hold spaces.
pub fn words(line: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut chars = line.trim().chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        if c == '\'' || c == '"' {
            chars.next();
            loop {
                match chars.next() {
                    Some(q) if q == c => break,
                    Some(other) => word.push(other),
                    None => {
                        return Err(Error::Invalid(format!(
                            "the quote {c} in '{}' is not closed",
                            line.trim()
                        )));
                    }
                }
            }
        } else {
            while let Some(&n) = chars.peek() {
                if n.is_whitespace() {
                    break;
                }
                word.push(n);
                chars.next();
            }
        }
        words.push(word);
    }
    Ok(words)
}

/// A SQL identifier for `name`, quoted unless it is a plain lower-case word.
pub fn identifier(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !sqlparser::keywords::RESERVED_FOR_IDENTIFIER
            .iter()
            .chain(sqlparser::keywords::RESERVED_FOR_TABLE_ALIAS)
            .any(|k| k.to_string().eq_ignore_ascii_case(name));
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// A SQL string literal holding `text`.
fn string_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn on_off(value: bool) -> &'static str {
    if value { "on" } else { "off" }
}

/// Parses `on`/`off` (also `true`/`false`, `1`/`0`).
fn parse_on_off(command: &str, word: &str) -> Result<bool> {
    match word.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        _ => Err(Error::Invalid(format!(
            "{command} takes on or off, not '{word}'"
        ))),
    }
}

fn parse_count(command: &str, word: &str) -> Result<usize> {
    word.parse().map_err(|_| {
        Error::Invalid(format!(
            "{command} takes a whole number (0 or more), not '{word}'"
        ))
    })
}

fn help(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    let pattern = args
        .first()
        .map(|p| p.trim_start_matches('.').to_lowercase());
    let matching: Vec<&Command> = COMMANDS
        .iter()
        .filter(|c| pattern.as_ref().is_none_or(|p| c.name.contains(p.as_str())))
        .collect();
    if let (true, Some(pattern)) = (matching.is_empty(), &pattern) {
        return Err(Error::Invalid(format!(
            "no command matches '{pattern}'; .help lists them all"
        )));
    }
    let width = matching.iter().map(|c| usage(c).len()).max().unwrap_or(0);
    let mut text = String::new();
    if pattern.is_none() {
        text.push_str(
            "Statements (SQL, or tensor index notation such as C[i,k] = SUM(j) A[i,j] * B[j,k])\n\
             end with ';' and may span several lines. Dot-commands take one line:\n",
        );
    }
    for command in matching {
        let _ = writeln!(text, "  {:<width$}  {}", usage(command), command.help);
    }
    if pattern.is_none() {
        text.push_str(
            "Tab completes keywords, tables, columns, commands and file paths (inside quotes).\n\
             Ctrl-C clears the input line; Ctrl-D leaves the shell.\n",
        );
    }
    shell.write(&text)
}

fn tables(shell: &mut Shell, _args: &[String]) -> Result<Flow> {
    let mut text = String::new();
    for name in shell.db.table_names() {
        let _ = writeln!(text, "{name}");
    }
    shell.write(&text)
}

/// The `CREATE TABLE` statement that declares a table like `tensor`.
fn create_statement(name: &str, tensor: &Tensor) -> String {
    let columns: Vec<String> = tensor
        .column_order()
        .iter()
        .map(|&column| {
            format!(
                "{} {}",
                identifier(tensor.column_name(column)),
                tensor.column_sql_type(column)
            )
        })
        .collect();
    let keys: Vec<String> = tensor.dims().iter().map(|d| identifier(&d.name)).collect();
    format!(
        "CREATE TABLE {} ({}, PRIMARY KEY ({}));",
        identifier(name),
        columns.join(", "),
        keys.join(", ")
    )
}

fn schema(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    let names = match args.first() {
        Some(name) => {
            shell.db.table(name)?;
            vec![name.clone()]
        }
        None => shell.db.table_names(),
    };
    let mut text = String::new();
    for name in names {
        let tensor = shell.db.table(&name)?;
        let _ = writeln!(text, "{}", create_statement(&name, &tensor));
    }
    shell.write(&text)
}

/// The number of rows a bag's `multiplicities` stand for, or an error when
/// it does not fit in 64 bits (a hostile data file can make it that large).
fn bag_rows(multiplicities: &[i64]) -> Result<u64> {
    multiplicities.iter().try_fold(0u64, |total, &m| {
        let m = u64::try_from(m)
            .map_err(|_| Error::Internal(format!("a bag entry has multiplicity {m}")))?;
        total.checked_add(m).ok_or_else(|| {
            Error::Overflow(
                "the bag's row count (the sum of its multiplicities) does not fit in 64 bits"
                    .to_string(),
            )
        })
    })
}

/// What `.describe` prints about `tensor`.
fn description(name: &str, tensor: &Tensor) -> Result<String> {
    let mut text = format!(
        "Table {name}: {}",
        count(tensor.nnz(), "stored entry", "stored entries")
    );
    if let Some(multiplicities) = tensor.multiplicities() {
        let _ = write!(
            text,
            ", {} (a bag: each entry counts its duplicate rows)",
            count(bag_rows(multiplicities)?, "row", "rows")
        );
    }
    text.push('\n');
    let rows: Vec<[String; 4]> = tensor
        .column_order()
        .iter()
        .map(|&column| {
            let name = tensor.column_name(column).to_string();
            let ty = tensor.column_sql_type(column).to_string();
            match column {
                ColumnRef::Key(d) => {
                    let dim = &tensor.dims()[d];
                    let detail = match &dim.dictionary {
                        Some(dictionary) => format!(
                            "size {} (dictionary of {})",
                            dim.size,
                            count(dictionary.len(), "string", "strings")
                        ),
                        None => format!("size {}", dim.size),
                    };
                    [format!("dimension {}", d + 1), name, ty, detail]
                }
                ColumnRef::Value(_) => ["value".to_string(), name, ty, String::new()],
            }
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for [role, name, ty, detail] in &rows {
        let line = format!("  {role:<w0$}  {name:<w1$}  {ty:<w2$}  {detail}");
        let _ = writeln!(text, "{}", line.trim_end());
    }
    let _ = writeln!(
        text,
        "Degree statistics (the most entries over X for one value of Y):"
    );
    let dims = tensor.dims();
    let names = |set: einsql::storage::statistics::DimSet| {
        set.iter()
            .filter_map(|d| dims.get(d).map(|dim| dim.name.as_str()))
            .collect::<Vec<_>>()
            .join(",")
    };
    for stat in tensor.statistics().degrees() {
        let given = names(stat.y);
        let condition = if given.is_empty() {
            String::new()
        } else {
            format!(" | {given}")
        };
        let _ = writeln!(text, "  D({}{condition}) = {}", names(stat.x), stat.degree);
    }
    let declared: Vec<String> = tensor
        .declared_indexes()
        .iter()
        .map(|index| index.named(tensor.dims()))
        .collect();
    if !declared.is_empty() {
        let _ = writeln!(text, "Declared indexes: {}", declared.join(", "));
    }
    let indexes: Vec<String> = tensor
        .built_indexes()
        .iter()
        .map(|spec| spec.named(tensor.dims()))
        .collect();
    let _ = writeln!(
        text,
        "Fibertree indexes built: {}",
        if indexes.is_empty() {
            "none".to_string()
        } else {
            indexes.join(", ")
        }
    );
    Ok(text)
}

fn describe(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    let name = &args[0];
    let tensor = shell.db.table(name)?;
    shell.write(&description(name, &tensor)?)
}

/// The table function that reads files in `format`.
fn reader(format: FileFormat) -> &'static str {
    match format {
        FileFormat::MatrixMarket => "read_mtx",
        FileFormat::Tns => "read_tns",
        FileFormat::Parquet => "read_parquet",
        FileFormat::Csv => "read_csv",
    }
}

/// The statement that `.load` runs.
fn load_statement(args: &[String]) -> Result<String> {
    let (file, name) = match args {
        [file] => {
            let stem = Path::new(file)
                .file_stem()
                .and_then(|s| s.to_str())
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "cannot name a table after '{file}'; use .load FILE AS NAME"
                    ))
                })?;
            (file, stem)
        }
        [file, as_word, name] if as_word.eq_ignore_ascii_case("as") => (file, name.as_str()),
        _ => {
            return Err(Error::Invalid("usage: .load FILE [AS NAME]".to_string()));
        }
    };
    let format = FileFormat::from_path(Path::new(file))?;
    Ok(format!(
        "CREATE TABLE {} AS SELECT * FROM {}({});",
        identifier(name),
        reader(format),
        string_literal(file)
    ))
}

fn load(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    let statement = load_statement(args)?;
    shell.execute_quietly(&statement)
}

fn save(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    let statement = format!(
        "COPY {} TO {};",
        identifier(&args[0]),
        string_literal(&args[1])
    );
    shell.execute_quietly(&statement)
}

fn read(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    shell.run_file(Path::new(&args[0]))
}

fn timer(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    toggle(shell, "timer", args, |settings| &mut settings.timer)
}

fn explain(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    toggle(shell, "explain", args, |settings| &mut settings.explain)
}

/// Sets the on/off setting `name` from `on` or `off`, or shows it.
fn toggle(
    shell: &mut Shell,
    name: &str,
    args: &[String],
    setting: fn(&mut Settings) -> &mut bool,
) -> Result<Flow> {
    match args.first() {
        Some(word) => {
            *setting(&mut shell.settings) = parse_on_off(&format!(".{name}"), word)?;
            Ok(Flow::Continue)
        }
        None => {
            let value = *setting(&mut shell.settings);
            shell.write(&format!("{name} {}\n", on_off(value)))
        }
    }
}

fn mode(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    match args.first() {
        Some(name) => {
            shell.settings.mode = Mode::from_name(name)
                .ok_or_else(|| Error::unknown("Mode", name, Mode::ALL.iter().map(|m| m.name())))?;
            Ok(Flow::Continue)
        }
        None => shell.write(&format!("mode {}\n", shell.settings.mode.name())),
    }
}

fn maxrows(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    match args.first() {
        Some(word) => {
            shell.settings.max_rows = parse_count(".maxrows", word)?;
            Ok(Flow::Continue)
        }
        None => shell.write(&format!("maxrows {}\n", shell.settings.max_rows)),
    }
}

fn output(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    shell.flush_output()?;
    shell.output = match args.first() {
        Some(file) => Output::file(PathBuf::from(file))?,
        None => Output::Stdout,
    };
    Ok(Flow::Continue)
}

fn threads(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    match args.first() {
        Some(word) => {
            let threads = parse_count(".threads", word)?;
            shell.set_threads(threads)?;
            Ok(Flow::Continue)
        }
        None => {
            let text = match shell.settings.threads {
                0 => format!(
                    "threads 0 (one per core: {})\n",
                    rayon::current_num_threads()
                ),
                n => format!("threads {n}\n"),
            };
            shell.write(&text)
        }
    }
}

fn open(shell: &mut Shell, args: &[String]) -> Result<Flow> {
    let (database, location) = match args.first() {
        Some(dir) => (Database::open(dir)?, Some(PathBuf::from(dir))),
        None => (Database::open_in_memory(), None),
    };
    shell.replace_database(database, location);
    let message = match &shell.location {
        Some(dir) => format!(
            "Opened the database in {} ({})\n",
            dir.display(),
            count(shell.db.table_names().len(), "table", "tables")
        ),
        None => "Opened a new in-memory database\n".to_string(),
    };
    shell.write(&message)
}

fn quit(_shell: &mut Shell, _args: &[String]) -> Result<Flow> {
    Ok(Flow::Quit)
}

#[cfg(test)]
mod tests {
    use einsql::Database;
    use einsql::storage::{Coo, DimensionSpec, MULTIPLICITY, ValueData};

    use super::*;

    #[test]
    fn command_table_is_sorted_and_documented() {
        let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        for command in COMMANDS {
            assert!(command.name.starts_with('.'));
            assert!(!command.help.is_empty(), "{}", command.name);
            assert!(command.arity.0 <= command.arity.1, "{}", command.name);
        }
        assert!(find(".tables").is_some());
        assert!(find("tables").is_none());
    }

    #[test]
    fn words_respect_quotes() {
        assert_eq!(
            words(".load 'my data/a b.mtx' as t").unwrap(),
            [".load", "my data/a b.mtx", "as", "t"]
        );
        assert_eq!(words("  .tables  ").unwrap(), [".tables"]);
        assert!(words(".load 'open").is_err());
    }

    #[test]
    fn identifiers_are_quoted_when_needed() {
        assert_eq!(identifier("graph_2"), "graph_2");
        assert_eq!(identifier("my-graph"), "\"my-graph\"");
        assert_eq!(identifier("Sales"), "\"Sales\"");
        assert_eq!(identifier("select"), "\"select\"");
        assert_eq!(identifier("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn load_builds_the_reader_statement() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            load_statement(&args(&["data/graph.mtx"])).unwrap(),
            "CREATE TABLE graph AS SELECT * FROM read_mtx('data/graph.mtx');"
        );
        assert_eq!(
            load_statement(&args(&["it's.parquet", "AS", "t"])).unwrap(),
            "CREATE TABLE t AS SELECT * FROM read_parquet('it''s.parquet');"
        );
        assert_eq!(
            load_statement(&args(&["x/my-sales.csv"])).unwrap(),
            "CREATE TABLE \"my-sales\" AS SELECT * FROM read_csv('x/my-sales.csv');"
        );
        assert!(load_statement(&args(&["data/graph.txt"])).is_err());
        assert!(load_statement(&args(&["a.mtx", "to", "t"])).is_err());
    }

    #[test]
    fn schema_and_description_follow_the_table() {
        let db = Database::open_in_memory();
        db.execute(
            "CREATE TABLE sales (store VARCHAR, day INT, amount BIGINT, PRIMARY KEY (day, store));\
             INSERT INTO sales VALUES ('north', 1, 5), ('south', 1, 7), ('north', 2, 9223372036854775807);",
        )
        .unwrap();
        let tensor = db.table("sales").unwrap();
        let statement = create_statement("sales", &tensor);
        assert_eq!(
            statement,
            "CREATE TABLE sales (store VARCHAR, day BIGINT, amount BIGINT, PRIMARY KEY (day, store));"
        );
        // The statement recreates a table of the same shape.
        let copy = Database::open_in_memory();
        copy.execute(&statement).unwrap();
        assert_eq!(
            create_statement("sales", &copy.table("sales").unwrap()),
            statement
        );
        let text = description("sales", &tensor).unwrap();
        assert!(
            text.starts_with("Table sales: 3 stored entries\n"),
            "{text}"
        );
        assert!(
            text.contains("  dimension 2  store   VARCHAR  size 2 (dictionary of 2 strings)\n"),
            "{text}"
        );
        assert!(
            text.contains("  dimension 1  day     BIGINT   size 3\n"),
            "{text}"
        );
        assert!(text.contains("  value        amount  BIGINT\n"), "{text}");
        assert!(text.contains("Degree statistics"), "{text}");
        assert!(text.contains("  D(day,store) = 3\n"), "{text}");
        assert!(text.contains("  D(store | day) = 2\n"), "{text}");
        assert!(text.ends_with("Fibertree indexes built: none\n"), "{text}");
        // Built indexes are shown by dimension name, as DESCRIBE shows them.
        let spec = einsql::storage::fibertree::IndexSpec::compressed(vec![1, 0]);
        tensor.index(&spec).unwrap();
        let text = description("sales", &tensor).unwrap();
        let named = format!("Fibertree indexes built: {}\n", spec.named(tensor.dims()));
        assert!(named.contains("(store,day)"), "{named}");
        assert!(text.ends_with(&named), "{text}");
    }

    #[test]
    fn bag_row_counts_do_not_overflow() {
        let bag = |multiplicities: Vec<i64>| {
            Tensor::from_coo(Coo {
                dims: vec![DimensionSpec::new("i", None)],
                coords: vec![(0..multiplicities.len() as i64).collect()],
                values: vec![(MULTIPLICITY.to_string(), ValueData::Int64(multiplicities))],
                column_order: None,
            })
            .unwrap()
        };
        let text = description("b", &bag(vec![i64::MAX, i64::MAX])).unwrap();
        assert!(
            text.starts_with("Table b: 2 stored entries, 18446744073709551614 rows (a bag"),
            "{text}"
        );
        let text = description("b", &bag(vec![1])).unwrap();
        assert!(
            text.starts_with("Table b: 1 stored entry, 1 row (a bag"),
            "{text}"
        );
        let error = description("b", &bag(vec![i64::MAX; 3])).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("Integer overflow: the bag's row count"),
            "{error}"
        );
    }
}
