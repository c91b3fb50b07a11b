//! The typed end of every agent run.
//!
//! An agent ends `completed` (a final answer), `halted` (it wrote a `HALT:` line, the developer's
//! stop after repeated failures), `escalated` (it called `escalate`), `failed` (a model error,
//! turn limit, garbage), `timed_out`, or `cancelled` (cancellation or budget, partial work kept).
//! Files changed are computed from git before and after, never taken from the agent's words.

use crate::compaction::CompactionStats;
use crate::tools::Escalation;
use baton_llm::Usage;
use serde::Serialize;
use std::path::PathBuf;

/// How an agent run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A final answer.
    Completed,
    /// The agent stopped itself with `HALT:`.
    Halted,
    /// The agent asked a human.
    Escalated,
    /// Error, turn limit, or unusable output.
    Failed,
    /// The agent's timeout passed.
    TimedOut,
    /// Cancelled or stopped by the budget.
    Cancelled,
}

impl Status {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::Halted => "halted",
            Status::Escalated => "escalated",
            Status::Failed => "failed",
            Status::TimedOut => "timed_out",
            Status::Cancelled => "cancelled",
        }
    }
}

/// Why a cancelled run stopped: typed, so that nothing downstream reads it off the reason's
/// words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The run was cancelled (Ctrl-C, the run ending).
    Cancelled,
    /// The budget refused the dispatch, or a stream crossed the hard limit.
    Budget,
}

/// The outcome of one agent run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The agent.
    pub agent: String,
    /// `provider/model` used.
    pub model: String,
    /// How it ended.
    pub status: Status,
    /// Why, for anything but `completed`.
    pub reason: Option<String>,
    /// The final answer (or the last text seen).
    pub summary: String,
    /// Files changed during the run, from git (root-relative).
    pub files_changed: Vec<String>,
    /// Tokens used.
    pub usage: Usage,
    /// Cost in US dollars.
    pub cost_usd: f64,
    /// Model turns taken.
    pub turns: u32,
    /// The transcript file.
    pub transcript: Option<PathBuf>,
    /// The escalation, if the agent raised one.
    pub escalation: Option<Escalation>,
    /// Some of `usage` was estimated from the text (the provider streamed no usage for a call,
    /// or a call was cut off before it did).
    #[serde(default)]
    pub usage_estimated: bool,
    /// For a `cancelled` run: what stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Old tool results replaced by stubs in what the model was sent (the transcript keeps them
    /// whole); left out when nothing was compacted.
    #[serde(default, skip_serializing_if = "CompactionStats::is_empty")]
    pub compaction: CompactionStats,
}

impl Outcome {
    /// The outcome of agent `agent` that could not be started, failed for `reason`: no model,
    /// no usage, nothing changed.
    pub fn not_started(agent: &str, reason: String) -> Outcome {
        Outcome {
            agent: agent.to_owned(),
            model: String::new(),
            status: Status::Failed,
            reason: Some(reason),
            summary: String::new(),
            files_changed: Vec::new(),
            usage: Default::default(),
            cost_usd: 0.0,
            turns: 0,
            transcript: None,
            escalation: None,
            usage_estimated: false,
            stop: None,
            compaction: CompactionStats::default(),
        }
    }
}

/// The reason of a `HALT:` line in an answer, if there is one.
pub fn halt_reason(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let t = l.trim_start_matches(|c: char| c == '*' || c == '#' || c.is_whitespace());
        t.strip_prefix("HALT:").map(|r| r.trim().to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_halt_lines() {
        assert_eq!(
            halt_reason("tried\n**HALT: tests fail 3 times**\n").as_deref(),
            Some("tests fail 3 times**")
        );
        assert_eq!(halt_reason("all good, no halting here"), None);
    }
}
