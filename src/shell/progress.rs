//! Progress bars for long loads and queries.
//!
//! The engine reports the bytes its file readers consume, the rows the
//! TPC-H generator makes, and the progress of queries, through [`einsql::progress::ProgressSink`]; [`TerminalProgress`]
//! turns those reports into an `indicatif` bar (a spinner with the elapsed
//! time for queries) on standard error. It appears only when standard error
//! is a terminal and the work has been running for about a second, so quick
//! statements and piped output never show one.

use std::io::IsTerminal;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use einsql::progress::ProgressSink;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a load runs before its bar appears.
pub const DELAY: Duration = Duration::from_secs(1);

/// A [`ProgressSink`] that draws a bar on standard error.
#[derive(Debug)]
pub struct TerminalProgress {
    /// Whether bars may be drawn at all (standard error is a terminal).
    enabled: bool,
    load: Mutex<Option<Load>>,
}

/// The load in progress.
#[derive(Debug)]
struct Load {
    bar: ProgressBar,
    started: Instant,
    shown: bool,
}

impl TerminalProgress {
    /// A sink that draws when standard error is a terminal.
    pub fn new() -> TerminalProgress {
        TerminalProgress::with_terminal(std::io::stderr().is_terminal())
    }

    /// A sink that draws only if `enabled`.
    fn with_terminal(enabled: bool) -> TerminalProgress {
        TerminalProgress {
            enabled,
            load: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Load>> {
        // A load's bar is plain display state; a panic elsewhere leaves
        // nothing to repair.
        self.load.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether a bar should appear now: drawing is enabled and the load has
/// run for at least [`DELAY`].
fn due(enabled: bool, elapsed: Duration) -> bool {
    enabled && elapsed >= DELAY
}

/// A spinner with the time a query has run.
fn query_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// A bar of rows made (a generator's).
fn rows_style(total_rows: u64) -> ProgressStyle {
    let template = if total_rows > 0 {
        "{msg} [{bar:30}] {human_pos}/{human_len} rows ({per_sec}, {eta} left)"
    } else {
        "{spinner} {msg} {human_pos} rows ({per_sec})"
    };
    ProgressStyle::with_template(template)
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

fn style(total_bytes: u64) -> ProgressStyle {
    let template = if total_bytes > 0 {
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)"
    } else {
        "{spinner} {msg} {bytes} ({bytes_per_sec})"
    };
    ProgressStyle::with_template(template)
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

impl TerminalProgress {
    /// Tracks a new bar (hidden until it is due).
    fn begin(&self, label: &str, length: Option<u64>, style: ProgressStyle) {
        if !self.enabled {
            return;
        }
        let bar = ProgressBar::with_draw_target(length, ProgressDrawTarget::hidden())
            .with_style(style)
            .with_message(label.to_string());
        *self.lock() = Some(Load {
            bar,
            started: Instant::now(),
            shown: false,
        });
    }
}

impl ProgressSink for TerminalProgress {
    fn start(&self, label: &str, total_bytes: u64) {
        let length = (total_bytes > 0).then_some(total_bytes);
        self.begin(label, length, style(total_bytes));
    }

    fn start_query(&self, label: &str) {
        self.begin(label, None, query_style());
    }

    fn start_rows(&self, label: &str, total_rows: u64) {
        let length = (total_rows > 0).then_some(total_rows);
        self.begin(label, length, rows_style(total_rows));
    }

    fn advance(&self, bytes: u64) {
        let mut guard = self.lock();
        let Some(load) = guard.as_mut() else {
            return;
        };
        load.bar.inc(bytes);
        if !load.shown && due(self.enabled, load.started.elapsed()) {
            load.bar.set_draw_target(ProgressDrawTarget::stderr());
            load.shown = true;
        }
    }

    fn finish(&self) {
        if let Some(load) = self.lock().take() {
            load.bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_wait_a_second_and_need_a_terminal() {
        assert!(!due(true, Duration::from_millis(200)));
        assert!(due(true, Duration::from_millis(1500)));
        assert!(!due(false, Duration::from_secs(60)));
    }

    #[test]
    fn quick_loads_never_show_a_bar() {
        let progress = TerminalProgress::with_terminal(true);
        progress.start("graph.mtx", 1000);
        progress.advance(500);
        assert!(progress.lock().as_ref().is_some_and(|load| !load.shown));
        progress.finish();
        assert!(progress.lock().is_none());
    }

    #[test]
    fn queries_are_tracked_like_loads() {
        let progress = TerminalProgress::with_terminal(true);
        progress.start_query("computing t");
        progress.advance(0);
        assert!(
            progress
                .lock()
                .as_ref()
                .is_some_and(|load| !load.shown && load.bar.length().is_none())
        );
        progress.finish();
        assert!(progress.lock().is_none());
    }

    #[test]
    fn rows_are_tracked_against_their_total() {
        let progress = TerminalProgress::with_terminal(true);
        progress.start_rows("dbgen(sf = 1)", 8_661_245);
        progress.advance(8_000);
        assert!(progress.lock().as_ref().is_some_and(
            |load| load.bar.length() == Some(8_661_245) && load.bar.position() == 8_000
        ));
        progress.finish();
        assert!(progress.lock().is_none());
    }

    #[test]
    fn without_a_terminal_nothing_is_tracked() {
        let progress = TerminalProgress::with_terminal(false);
        progress.start("graph.mtx", 0);
        progress.advance(10);
        assert!(progress.lock().is_none());
        progress.finish();
    }
}
