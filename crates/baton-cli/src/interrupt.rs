//! Interrupts of a run: Ctrl-C (SIGINT) and SIGTERM, each listened for once for the whole run.
//!
//! A listener created afresh on every pass of an event loop (`tokio::signal::ctrl_c()` inside a
//! `select!`) misses a signal that arrives between two passes, while an event is being
//! rendered: once tokio has installed its handler the signal is neither fatal nor seen, and the
//! run goes on to its end. So every workflow (sprint, sdd, team, plan) installs both listeners
//! here, once, before its run starts, and the first signal cancels the run's token: agents stop
//! at their next await and their process groups are killed, a stage commit in flight finishes
//! (baton's git runs apart from the terminal's signals), and the run is recorded `cancelled`.
//! SIGTERM (a service manager, `kill`) stops a run exactly as Ctrl-C does. Later signals change
//! nothing: the run is already winding down, and its workers die with baton if it is killed.

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

/// Installs the SIGINT and SIGTERM listeners on `rt` and cancels `cancel` on the first signal.
/// The listeners live until the process ends, so no signal is missed between two waits.
pub fn cancel_on_signal(rt: &tokio::runtime::Runtime, cancel: CancellationToken) -> Result<()> {
    let _entered = rt.enter();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt =
            signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C (SIGINT)")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        rt.spawn(async move {
            // Later signals are taken too (and change nothing), so a second one is never fatal
            // half way through the winding down.
            loop {
                tokio::select! {
                    Some(()) = interrupt.recv() => {}
                    Some(()) = terminate.recv() => {}
                    else => break,
                }
                cancel.cancel();
            }
        });
    }
    #[cfg(not(unix))]
    {
        let ctrl_c = tokio::signal::ctrl_c();
        rt.spawn(async move {
            if ctrl_c.await.is_ok() {
                cancel.cancel();
            }
        });
    }
    Ok(())
}
