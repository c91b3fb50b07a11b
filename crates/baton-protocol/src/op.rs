//! Operations: what a front end asks of a running workflow.

use serde::{Deserialize, Serialize};

/// What a front end asks of a running workflow, tagged `op` in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Answer an escalation with a choice (its stable id, or the option's text for an agent's).
    Answer {
        /// The escalation.
        id: i64,
        /// The choice.
        choice: String,
    },
    /// Leave an escalation for later (`baton answer`); the run pauses.
    Defer {
        /// The escalation.
        id: i64,
    },
    /// Stop the run; the interrupted step runs again next time.
    Cancel,
}
