//! The engine's clock, injected so that every timestamp a workflow writes comes from one place.

use baton_store::ledger::Now;

/// Where "now" comes from.
pub trait Clock: Send + Sync {
    /// The current time, as the journal and the sprint file write it.
    fn now(&self) -> Now;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Now {
        Now::system()
    }
}
