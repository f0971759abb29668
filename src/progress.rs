//! Progress reports and cancellation for long-running work.
//!
//! Loaders, the TPC-H generator, the executor and the reference evaluator
//! report to a [`ProgressSink`] (the shell draws progress bars; the library default,
//! [`NoProgress`], ignores every report) and poll it between pieces of work
//! for a stop request, which an [`Interrupt`] flag raises from any thread or
//! a signal handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// Receives progress reports from long-running loads. The shell draws a
/// progress bar; the library default ignores them.
pub trait ProgressSink: Send + Sync {
    /// A load of `total_bytes` bytes (0 when unknown) called `label` begins.
    fn start(&self, label: &str, total_bytes: u64);
    /// Work that is not measured in bytes (a query) called `label` begins;
    /// it calls `advance(0)` now and then while it runs.
    fn start_query(&self, label: &str) {
        self.start(label, 0);
    }
    /// Work that makes about `total_rows` rows (0 when unknown) called
    /// `label` begins (the TPC-H generator); `advance` then counts rows.
    /// By default it is reported as a load of `total_rows` bytes.
    fn start_rows(&self, label: &str, total_rows: u64) {
        self.start(label, total_rows);
    }
    /// `bytes` more bytes were consumed (rows after
    /// [`start_rows`](ProgressSink::start_rows)).
    fn advance(&self, bytes: u64);
    /// The load ended (successfully or not).
    fn finish(&self);
    /// Whether the load should stop: readers check it between pieces of
    /// their input and then fail with [`Error::Cancelled`].
    fn cancelled(&self) -> bool {
        false
    }
}

/// [`Error::Cancelled`] if `progress` asks the load to stop.
pub fn check_cancelled(progress: &dyn ProgressSink) -> Result<()> {
    if progress.cancelled() {
        Err(Error::Cancelled)
    } else {
        Ok(())
    }
}

/// A [`ProgressSink`] that ignores every report.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn start(&self, _label: &str, _total_bytes: u64) {}
    fn advance(&self, _bytes: u64) {}
    fn finish(&self) {}
}

/// A flag that stops running statements, settable from any thread (or a
/// signal handler: requesting is one atomic store). The statement under way
/// stops at its next check with [`Error::Cancelled`](crate::Error::Cancelled),
/// changing nothing, and the statements after it in the same text do not
/// run. A request stays pending until [`Interrupt::clear`]: while it is
/// pending, every statement stops at its first check, so a request made
/// between two statements of a script still stops the script.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A new flag, not requested.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Asks the running statement to stop.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was requested since the flag was last cleared.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Withdraws a request.
    pub fn clear(&self) {
        self.0.store(false, Ordering::SeqCst);
    }
}
