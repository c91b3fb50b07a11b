//! The PM's status comment on an issue, the pipeline's memory between passes: written once,
//! edited in place, and read back on the next pass (by the hidden marker [`MARKER`]).
//!
//! A person reads a table (phase, who works on it, round trips, what it waits on) and the
//! history. The PM reads the state behind them, kept in a hidden `<!-- baton:pm-state {…} -->`
//! line as JSON, so a rerun never depends on how the table is worded. A comment whose state
//! is missing or unreadable (hand-edited, cut off) is an error naming what is wrong; the
//! workflow then rebuilds the state from the labels and comments and says so in the
//! history. Of several status comments (two passes that raced), [`pick`] keeps the oldest one
//! written by the PM, and the others are to be removed.

use super::Phase;
use super::decide::Secs;
use serde::{Deserialize, Serialize};

/// The first line of every status comment.
pub const MARKER: &str = "<!-- baton:pm-status v1 -->";
const STATE_OPEN: &str = "<!-- baton:pm-state ";
const STATE_CLOSE: &str = " -->";
/// History entries kept in the comment (GitHub caps a comment at 65,536 characters).
pub const MAX_HISTORY: usize = 200;

/// One line of an issue's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// When (Unix seconds).
    pub at: Secs,
    /// What happened.
    pub text: String,
}

/// What the PM keeps about an issue between passes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The phase, as its `status/*` label.
    pub phase: String,
    /// The role working on it, and since when.
    #[serde(default)]
    pub assigned: Option<(String, Secs)>,
    /// When the assignee was last pinged.
    #[serde(default)]
    pub last_ping: Option<Secs>,
    /// The role that asked another one a question, waiting for its answer.
    #[serde(default)]
    pub asked_by: Option<String>,
    /// Round trips without progress.
    #[serde(default)]
    pub round_trips: u32,
    /// Since when it waits for the owner, and the phase it came from.
    #[serde(default)]
    pub awaiting: Option<(Secs, String)>,
    /// When the owner was last reminded.
    #[serde(default)]
    pub last_reminder: Option<Secs>,
    /// The newest comment already acted on (later ones are new to the next pass).
    #[serde(default)]
    pub seen: u64,
    /// The pull request head the reviewer approved, if it did.
    #[serde(default)]
    pub approved_head: Option<String>,
    /// What happened, oldest first.
    #[serde(default)]
    pub history: Vec<Step>,
}

impl State {
    /// A fresh state in `phase`.
    pub fn new(phase: Phase) -> State {
        State {
            phase: phase.label(),
            assigned: None,
            last_ping: None,
            asked_by: None,
            round_trips: 0,
            awaiting: None,
            last_reminder: None,
            seen: 0,
            approved_head: None,
            history: Vec::new(),
        }
    }

    /// Its phase.
    pub fn phase(&self) -> Option<Phase> {
        Phase::parse(&self.phase)
    }

    /// Records `text` at `at`, keeping the newest [`MAX_HISTORY`] entries.
    pub fn record(&mut self, at: Secs, text: impl Into<String>) {
        self.history.push(Step {
            at,
            text: text.into(),
        });
        let extra = self.history.len().saturating_sub(MAX_HISTORY);
        self.history.drain(..extra);
    }
}

/// Why a status comment cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusError {
    /// The comment is not a status comment.
    #[error("the comment does not start with `{MARKER}`")]
    NotStatus,
    /// The hidden state line is missing.
    #[error("the hidden state line is missing (the comment was edited by hand?)")]
    NoState,
    /// The state does not read.
    #[error("the hidden state does not read: {0}")]
    BadState(String),
    /// The state names no known phase.
    #[error("the state names an unknown phase `{0}`")]
    UnknownPhase(String),
}

/// Whether `body` is a status comment.
pub fn is_status(body: &str) -> bool {
    body.trim_start().starts_with(MARKER)
}

/// `at` (Unix seconds) as `YYYY-MM-DD HH:MM UTC`.
fn when(at: Secs) -> String {
    match crate::stamp::Stamp::from_unix(at) {
        Some(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02} UTC",
            t.year, t.month, t.day, t.hour, t.minute
        ),
        None => format!("{at} s after 1970 UTC"),
    }
}

/// The comment for `state`, ending with `footer` (the pipeline's metadata line).
pub fn render(state: &State, footer: &str) -> String {
    let phase = state
        .phase()
        .map_or_else(|| state.phase.clone(), |p| p.title().to_owned());
    let mut s = format!("{MARKER}\n## PM status\n\n| | |\n|---|---|\n| Phase | {phase} |\n");
    if let Some((role, since)) = &state.assigned {
        s.push_str(&format!(
            "| Assigned | `agent/{role}` since {} |\n",
            when(*since)
        ));
    }
    s.push_str(&format!("| Round trips | {} |\n", state.round_trips));
    if let Some(asker) = &state.asked_by {
        // A question and its answer are one round trip, counted when the answer comes.
        s.push_str(&format!(
            "| Open question | from `agent/{asker}`; its answer makes round trip {} |\n",
            state.round_trips + 1
        ));
    }
    if let Some((since, _)) = &state.awaiting {
        s.push_str(&format!(
            "| Waiting on | the owner since {} |\n",
            when(*since)
        ));
    }
    if !state.history.is_empty() {
        s.push_str("\n### History\n");
        for h in &state.history {
            // One line each: a newline in a step would break the list (and the parse).
            s.push_str(&format!(
                "- {}: {}\n",
                when(h.at),
                h.text.replace('\n', " ")
            ));
        }
    }
    let json = serde_json::to_string(state).unwrap_or_else(|_| "{}".to_owned());
    // `-->` inside the JSON would end the hidden line early.
    let json = json.replace("-->", "--\\u003e");
    s.push_str(&format!("\n{STATE_OPEN}{json}{STATE_CLOSE}\n\n{footer}\n"));
    s
}

/// The state a status comment holds.
pub fn parse(body: &str) -> Result<State, StatusError> {
    if !is_status(body) {
        return Err(StatusError::NotStatus);
    }
    let line = body
        .lines()
        .find_map(|l| l.trim().strip_prefix(STATE_OPEN))
        .and_then(|l| l.strip_suffix(STATE_CLOSE.trim_start()).or(Some(l)))
        .ok_or(StatusError::NoState)?;
    let json = line.trim().trim_end_matches("-->").trim();
    let state: State =
        serde_json::from_str(json).map_err(|e| StatusError::BadState(e.to_string()))?;
    if state.phase().is_none() {
        return Err(StatusError::UnknownPhase(state.phase));
    }
    Ok(state)
}

/// Which of an issue's comments is its status comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// None yet: the PM writes one.
    None,
    /// This one (its id); `extra` are other status comments by the PM, to be removed.
    One {
        /// The comment kept.
        keep: u64,
        /// Duplicates.
        extra: Vec<u64>,
    },
}

/// The status comment among `comments` (`(id, author, body)`, oldest first): only the PM's
/// own (`pm_login`) count, so nobody else can plant one.
pub fn pick(comments: &[(u64, &str, &str)], pm_login: &str) -> Pick {
    let mut ours = comments
        .iter()
        .filter(|(_, author, body)| *author == pm_login && is_status(body))
        .map(|(id, _, _)| *id);
    match ours.next() {
        None => Pick::None,
        Some(keep) => Pick::One {
            keep,
            extra: ours.collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> State {
        let mut s = State::new(Phase::Implementing);
        s.assigned = Some(("backend".into(), 1_767_600_000));
        s.round_trips = 2;
        s.awaiting = Some((1_767_700_000, Phase::InReview.label()));
        s.record(
            1_767_600_000,
            "Ready → Implementing: `agent/backend` takes a seat",
        );
        s.record(1_767_650_000, "a line\nthat tries --> to break out");
        s
    }

    #[test]
    fn a_rendered_comment_reads_back_as_its_state() {
        let s = sample();
        let text = render(&s, "_Agent: pm · Run: [#7](https://example.test/7)_");
        assert!(text.starts_with(MARKER));
        assert!(text.contains("| Phase | Implementing |"));
        assert!(text.contains("| Assigned | `agent/backend` since 2026-01-05"));
        assert!(text.contains("- 2026-01-05 "), "{text}");
        assert!(
            text.trim_end()
                .ends_with("_Agent: pm · Run: [#7](https://example.test/7)_")
        );
        assert_eq!(parse(&text), Ok(s));
    }

    #[test]
    fn a_hand_edited_comment_is_an_error_naming_why() {
        let text = render(&sample(), "f");
        let no_state: String = text
            .lines()
            .filter(|l| !l.starts_with(STATE_OPEN))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(parse(&no_state), Err(StatusError::NoState));
        let cut = text.replace("\"round_trips\":2", "\"round_trips\":");
        assert!(matches!(parse(&cut), Err(StatusError::BadState(_))));
        let phase = text.replace("status/implementing", "status/shipping");
        assert_eq!(
            parse(&phase),
            Err(StatusError::UnknownPhase("status/shipping".into()))
        );
        assert_eq!(parse("a comment"), Err(StatusError::NotStatus));
    }

    #[test]
    fn only_the_pm_s_oldest_status_comment_counts() {
        let fake = format!("{MARKER}\nplanted");
        let ours = render(&State::new(Phase::Triage), "f");
        let comments = [
            (1, "stranger", fake.as_str()),
            (2, "baton-pm", "hello"),
            (3, "baton-pm", ours.as_str()),
            (4, "baton-pm", ours.as_str()),
        ];
        assert_eq!(
            pick(&comments, "baton-pm"),
            Pick::One {
                keep: 3,
                extra: vec![4]
            }
        );
        assert_eq!(pick(&comments[..2], "baton-pm"), Pick::None);
    }

    #[test]
    fn times_are_shown_as_utc_dates() {
        assert_eq!(when(0), "1970-01-01 00:00 UTC");
        assert_eq!(when(1_767_600_000), "2026-01-05 08:00 UTC");
        assert_eq!(when(951_825_600), "2000-02-29 12:00 UTC");
        assert_eq!(when(-86_400), "1969-12-31 00:00 UTC");
    }

    #[test]
    fn history_keeps_the_newest_entries() {
        let mut s = State::new(Phase::Triage);
        for i in 0..(MAX_HISTORY as i64 + 5) {
            s.record(i, format!("step {i}"));
        }
        assert_eq!(s.history.len(), MAX_HISTORY);
        assert_eq!(s.history[0].text, "step 5");
    }
}
