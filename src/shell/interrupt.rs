//! Ctrl-C while a statement runs.
//!
//! At the prompt, the line editor reads Ctrl-C as a key and the shell clears
//! the input. While a statement runs, the terminal turns Ctrl-C into SIGINT;
//! in an interactive session [`install`] replaces the default action
//! (ending the process) with setting the flag [`REQUESTED`], so the session
//! survives. The engine has no cancellation hook yet, so the statement runs
//! to completion; the shell then discards its rows and skips the rest of the
//! input line. When the engine gains a hook, it should poll [`REQUESTED`]
//! (or a flag the shell hands it) and stop early.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by SIGINT while the shell's handler is installed.
pub static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Catches SIGINT from now on (interactive sessions only: a script should
/// still stop on Ctrl-C). Returns whether the handler was installed.
#[cfg(unix)]
pub fn install() -> bool {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

    extern "C" fn on_sigint(_: std::ffi::c_int) {
        // Storing to an atomic is async-signal-safe.
        REQUESTED.store(true, Ordering::SeqCst);
    }

    let action = SigAction::new(
        SigHandler::Handler(on_sigint),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe, and it replaces the default disposition of a
    // signal this process does not otherwise handle (the line editor saves
    // and restores it around each prompt).
    unsafe { sigaction(Signal::SIGINT, &action) }.is_ok()
}

/// Catching Ctrl-C needs Unix signals; elsewhere it keeps its default
/// action.
#[cfg(not(unix))]
pub fn install() -> bool {
    false
}

/// Clears a pending request (before a statement starts).
pub fn clear() {
    REQUESTED.store(false, Ordering::SeqCst);
}

/// Whether Ctrl-C was pressed since the last [`clear`]; clears it.
pub fn take() -> bool {
    REQUESTED.swap(false, Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_reads_and_clears() {
        clear();
        assert!(!take());
        REQUESTED.store(true, Ordering::SeqCst);
        assert!(take());
        assert!(!take());
    }
}
