//! Failpoints: the instants tests must interrupt a run at exactly, which no timing can hit
//! reliably. Compiled in only with the `failpoints` feature (which the end-to-end suite turns on
//! for the binary it tests); without it every failpoint is a no-op the compiler removes.
//!
//! `BATON_FAILPOINT=after-move:cancel` cancels the run right after a story's status move is
//! durable, before the stage commit that goes with it, as a Ctrl-C landing there would: the
//! stage's commit is not made and the run winds down. `after-move:abort` ends the process there
//! instead, as `kill -9` would. Each fires once per process.

use crate::run::Run;

/// The variable naming the failpoint to fire.
pub const ENV: &str = "BATON_FAILPOINT";

/// Whether a status move's stage commit must be skipped because the run was interrupted right
/// after the move (the failpoint fired); with `after-move:abort` the process ends here.
#[cfg(feature = "failpoints")]
pub fn after_move(run: &Run) -> bool {
    use std::sync::atomic::{AtomicBool, Ordering};
    static FIRED: AtomicBool = AtomicBool::new(false);
    let which = std::env::var(ENV).unwrap_or_default();
    if !which.starts_with("after-move:") || FIRED.swap(true, Ordering::SeqCst) {
        return false;
    }
    match which.as_str() {
        "after-move:abort" => std::process::abort(),
        "after-move:cancel" => {
            run.setup.cancel.cancel();
            true
        }
        _ => false,
    }
}

/// Without the `failpoints` feature: never fires.
#[cfg(not(feature = "failpoints"))]
pub fn after_move(_run: &Run) -> bool {
    false
}
