//! Ctrl-C while a statement runs.
//!
//! At the prompt, the line editor reads Ctrl-C as a key and the shell clears
//! the input. While a statement runs, the terminal turns Ctrl-C into SIGINT;
//! in an interactive session [`install`] replaces the default action
//! (ending the process) with requesting the engine's [`Interrupt`], which
//! every database the shell opens shares ([`handle`]). The statement under
//! way stops at its next check (file loads check between pieces of their
//! input; a script checks between statements) and changes nothing; the shell
//! then skips the rest of the input and the session stays.

use std::sync::OnceLock;

use einsql::Interrupt;

/// The flag shared by the Ctrl-C handler and the shell's databases.
static FLAG: OnceLock<Interrupt> = OnceLock::new();

/// The interrupt flag to give every database the shell opens.
pub fn handle() -> Interrupt {
    FLAG.get_or_init(Interrupt::new).clone()
}

/// Catches SIGINT from now on (interactive sessions only: a script should
/// still stop on Ctrl-C). Returns whether the handler was installed.
#[cfg(unix)]
pub fn install() -> bool {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

    extern "C" fn on_sigint(_: std::ffi::c_int) {
        // Reading an initialised OnceLock and storing to an atomic are
        // async-signal-safe: no allocation, no lock.
        if let Some(flag) = FLAG.get() {
            flag.request();
        }
    }

    // Initialise the flag before the handler can run.
    handle();
    let action = SigAction::new(
        SigHandler::Handler(on_sigint),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only reads an initialised OnceLock and stores to
    // an atomic, both async-signal-safe, and it replaces the default
    // disposition of a signal this process does not otherwise handle (the
    // line editor saves and restores it around each prompt).
    unsafe { sigaction(Signal::SIGINT, &action) }.is_ok()
}

/// Catching Ctrl-C needs Unix signals; elsewhere it keeps its default
/// action.
#[cfg(not(unix))]
pub fn install() -> bool {
    false
}

/// Whether Ctrl-C was pressed since the last [`clear`]; clears it.
pub fn take() -> bool {
    let flag = handle();
    let requested = flag.is_requested();
    flag.clear();
    requested
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_reads_and_clears() {
        take();
        assert!(!take());
        handle().request();
        assert!(take());
        assert!(!take());
    }
}
