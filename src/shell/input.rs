//! Line-by-line input: the same path for the prompt, scripts, `-c` text and
//! standard input.
//!
//! An [`Input`] receives lines one at a time. A line that starts with `.`
//! while no statement is pending is a dot-command; other lines are added to
//! the pending text, and every statement completed by a `;` runs at once.
//! The input tracks the line and column where the pending text starts, so
//! errors name positions in the input rather than in the statement.

use super::report::Origin;
use super::splitter;
use super::{Flow, Shell};

/// Lines of one input: a script, a `-c` text, or standard input (the
/// whole prompt session counts as one input, so lines are numbered the same
/// whether typed or piped).
#[derive(Debug)]
pub struct Input {
    /// The input's name in error reports.
    source: String,
    /// Text of the statement being completed.
    pending: String,
    /// Line and column (1-based) of the first character of `pending`.
    start: (usize, usize),
    /// Number of lines received.
    lines: usize,
}

impl Input {
    /// An input named `source` in error reports.
    pub fn new(source: &str) -> Input {
        Input {
            source: source.to_string(),
            pending: String::new(),
            start: (1, 1),
            lines: 0,
        }
    }

    /// Whether no statement is pending (only blanks and comments so far).
    pub fn is_idle(&self) -> bool {
        splitter::is_blank(&self.pending)
    }

    /// Takes one line (without its line break) and runs the dot-command or
    /// the statements it completes.
    pub fn feed(&mut self, shell: &mut Shell, line: &str) -> Flow {
        self.lines += 1;
        if self.is_idle() {
            self.pending.clear();
            let trimmed = line.trim_start();
            let indent = line[..line.len() - trimmed.len()].chars().count();
            if trimmed.starts_with('.') {
                let origin = self.origin((1, 1), (self.lines, indent + 1));
                return shell.run_command(trimmed, &origin);
            }
            self.start = (self.lines, 1);
        }
        self.pending.push_str(line);
        self.pending.push('\n');
        let split = splitter::split(&self.pending);
        for range in split.statements {
            let at = splitter::line_and_column(&self.pending, range.start);
            let origin = self.origin(at, self.start);
            let flow = shell.run_statement(&self.pending[range], &origin);
            if flow != Flow::Continue {
                self.reset();
                return flow;
            }
        }
        let rest = splitter::line_and_column(&self.pending, split.rest);
        self.start = self.origin(rest, self.start).position();
        self.pending.drain(..split.rest);
        Flow::Continue
    }

    /// Ends the input: a pending statement without its `;` runs now.
    pub fn finish(&mut self, shell: &mut Shell) -> Flow {
        if self.is_idle() {
            self.reset();
            return Flow::Continue;
        }
        let text = std::mem::take(&mut self.pending);
        let skipped = text.len() - text.trim_start().len();
        let at = splitter::line_and_column(&text, skipped);
        let origin = self.origin(at, self.start);
        self.reset();
        shell.run_statement(text[skipped..].trim_end(), &origin)
    }

    /// Drops the pending statement (Ctrl-C at the prompt).
    pub fn reset(&mut self) {
        self.pending.clear();
    }

    /// The origin of a position `at` (line, column) relative to text that
    /// starts at `start` in the input.
    fn origin(&self, at: (usize, usize), start: (usize, usize)) -> Origin {
        let (line, column) = if at.0 == 1 {
            (start.0, start.1 + at.1 - 1)
        } else {
            (start.0 + at.0 - 1, at.1)
        };
        Origin {
            source: self.source.clone(),
            line,
            column,
        }
    }
}

impl Origin {
    /// The line and column.
    fn position(&self) -> (usize, usize) {
        (self.line, self.column)
    }
}
