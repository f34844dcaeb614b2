//! Ctrl-C: the first stops a run at the next launch boundary (what finished is reported, the
//! program exits with 130); a second ends the program at once.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// The error a run stops with after Ctrl-C.
#[derive(Debug, thiserror::Error)]
#[error("interrupted (Ctrl-C)")]
pub struct Interrupted;

/// The exit status after Ctrl-C (128 + SIGINT), as shells report it.
pub const EXIT_STATUS: u8 = 130;

/// Installs the Ctrl-C handler (once per process; later calls do nothing).
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::SeqCst) {
            std::process::exit(EXIT_STATUS as i32);
        }
        eprintln!("\ninterrupted: stopping after the launch in flight (Ctrl-C again to quit now)");
    });
}

/// Whether Ctrl-C was pressed.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// `Err(Interrupted)` once Ctrl-C was pressed: called at every launch boundary.
pub fn check() -> Result<(), Interrupted> {
    if requested() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

/// Whether `error` is (or wraps) the interruption.
pub fn is_interruption(error: &anyhow::Error) -> bool {
    error.chain().any(|e| e.is::<Interrupted>())
}
