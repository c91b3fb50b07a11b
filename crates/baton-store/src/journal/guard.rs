//! The guards' state: settings (the test-first guard's mode), a log of what the guards saw and
//! decided (test runs with their exit status, test-file writes, refusals, warnings, and the
//! context rules' firings, kind `rule`) and one-time allowances granted by the user.
//!
//! Log entries are scoped (`native` for baton's own agents, `claude:<session>` for a Claude Code
//! session) so that one agent's test run never counts for another; allowances are project-wide
//! and consumed atomically, so one grant lets exactly one call through.

use serde::Serialize;

use super::JournalError;

/// A new guard log entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewGuardRecord {
    /// Whose state it is (`native`, `claude:<session>`).
    pub scope: String,
    /// The guard that wrote it (`tdd`, `rules`).
    pub guard: String,
    /// `test-run`, `test-write`, `deny`, `warn`, `allowance-used` or `rule`.
    pub kind: String,
    /// The tool of the call, if any.
    pub tool: String,
    /// The file concerned, if any (relative to the project root).
    pub path: String,
    /// A reason, command or rule name.
    pub detail: String,
    /// A test run's exit status (`None`: unknown, or not a test run).
    pub exit_code: Option<i64>,
}

/// A guard log entry as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GuardRecord {
    /// Row id (increasing: later entries have larger ids).
    pub id: i64,
    /// Scope.
    pub scope: String,
    /// When (RFC 3339).
    pub at: String,
    /// Guard.
    pub guard: String,
    /// Kind.
    pub kind: String,
    /// Tool.
    pub tool: String,
    /// Path.
    pub path: String,
    /// Detail.
    pub detail: String,
    /// Exit status of a test run.
    pub exit_code: Option<i64>,
}

/// A one-time allowance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Allowance {
    /// Row id.
    pub id: i64,
    /// What it allows (`bash-write`).
    pub kind: String,
    /// Why the user granted it.
    pub reason: String,
    /// When it was granted.
    pub granted_at: String,
    /// When it was used (`None`: still available).
    pub consumed_at: Option<String>,
    /// The call that used it.
    pub consumed_by: Option<String>,
}

/// The guards' state in the journal. Settings and allowances are written durably; log entries
/// may skip the flush.
pub trait GuardState {
    /// A guard setting (`None` if never set).
    fn guard_setting(&self, name: &str) -> Result<Option<String>, JournalError>;
    /// Sets a guard setting.
    fn set_guard_setting(&mut self, name: &str, value: &str) -> Result<(), JournalError>;
    /// Appends a guard log entry (a context rule's firing is one, kind `rule`); returns its id.
    fn record_guard(&mut self, record: &NewGuardRecord) -> Result<i64, JournalError>;
    /// The id of the newest entry of `kind` in `scope` (for `path` if given).
    fn last_guard_record(
        &self,
        scope: &str,
        kind: &str,
        path: Option<&str>,
    ) -> Result<Option<i64>, JournalError>;
    /// Guard log entries, oldest first: all scopes, or one; the newest `limit` if given.
    fn guard_records(
        &self,
        scope: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<GuardRecord>, JournalError>;
    /// Grants a one-time allowance of `kind`; returns its id.
    fn grant_allowance(&mut self, kind: &str, reason: &str) -> Result<i64, JournalError>;
    /// Uses the oldest unused allowance of `kind` granted within the last `max_age` (and not in
    /// the future), recording `by` (the call) as its user; `None` if there is none. Two callers
    /// never use the same grant.
    fn consume_allowance(
        &mut self,
        kind: &str,
        by: &str,
        max_age: std::time::Duration,
    ) -> Result<Option<Allowance>, JournalError>;
    /// Every allowance, oldest first.
    fn allowances(&self) -> Result<Vec<Allowance>, JournalError>;
}
