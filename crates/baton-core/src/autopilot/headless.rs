//! The JSON status a BMad skill ends a headless run with, read and checked before it is trusted.
//!
//! Skills with a headless mode (`bmad-prd`, `bmad-ux`, `bmad-spec`, `bmad-brainstorming`, …) end
//! with one JSON object: `status` (`complete`, `partial` or `blocked`), `intent`, `reason`
//! (required when blocked), `assumptions[]`, `open_questions[]`, and the paths of the artifacts
//! written (`prd`, `addendum`, `memlog`, `validation_report`, …). The status is the last JSON
//! object in the answer that has a `status` field, fenced or not; a chatty answer without one,
//! a status that is not one of the three, a blocked run without its reason, or lists that are not
//! lists are errors naming what is wrong.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// The artifact stands on its own.
    Complete,
    /// An artifact was produced, but questions remain or inputs were inferred.
    Partial,
    /// No artifact was produced.
    Blocked,
}

/// A checked headless status.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// How the run ended.
    pub status: RunStatus,
    /// The intent it detected (`create`, `update`, `validate`, …).
    pub intent: Option<String>,
    /// Why it is blocked.
    pub reason: Option<String>,
    /// Values it inferred without confirmation.
    pub assumptions: Vec<String>,
    /// What needs a human decision.
    pub open_questions: Vec<String>,
    /// The artifacts it names by path (`prd` → `…/prd.md`).
    pub artifacts: BTreeMap<String, String>,
    /// The whole object, for fields a caller knows more about.
    pub raw: Map<String, Value>,
}

/// What comes next for a status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Done.
    Done,
    /// Questions for a human (or a party).
    Questions(Vec<String>),
    /// Blocked: escalate with the reason.
    Escalate(String),
}

impl Status {
    /// What the autopilot does with it: a partial run's open questions go to a human (or a
    /// party), a blocked run escalates, a complete one is done. A partial run without questions
    /// is done, with its assumptions on record.
    pub fn next(&self) -> Next {
        match self.status {
            RunStatus::Complete => Next::Done,
            RunStatus::Partial if self.open_questions.is_empty() => Next::Done,
            RunStatus::Partial => Next::Questions(self.open_questions.clone()),
            RunStatus::Blocked => Next::Escalate(self.reason.clone().unwrap_or_default()),
        }
    }
}

/// Why an answer's status cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusError {
    /// No JSON object with a `status` field.
    #[error("the answer ends with no JSON status (an object with `status`)")]
    Missing,
    /// A field is missing or of the wrong shape.
    #[error("the JSON status's `{field}` {why}")]
    Field {
        /// The field.
        field: &'static str,
        /// What is wrong.
        why: String,
    },
}

/// The status an answer ends with.
pub fn parse(answer: &str) -> Result<Status, StatusError> {
    let object = last_status_object(answer).ok_or(StatusError::Missing)?;
    let field = |field: &'static str, why: &str| StatusError::Field {
        field,
        why: why.to_owned(),
    };
    let status = match object.get("status").and_then(Value::as_str) {
        Some("complete") => RunStatus::Complete,
        Some("partial") => RunStatus::Partial,
        Some("blocked") => RunStatus::Blocked,
        Some(other) => {
            return Err(field(
                "status",
                &format!("is `{other}`, not complete, partial or blocked"),
            ));
        }
        None => return Err(field("status", "is not a string")),
    };
    let text = |name: &'static str| -> Result<Option<String>, StatusError> {
        match object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
            Some(_) => Err(field(name, "is not a string")),
        }
    };
    let list = |name: &'static str| -> Result<Vec<String>, StatusError> {
        match object.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .filter(|s| !s.trim().is_empty())
                .collect()),
            Some(_) => Err(field(name, "is not a list")),
        }
    };
    let reason = text("reason")?;
    if status == RunStatus::Blocked && reason.is_none() {
        return Err(field("reason", "is required when the status is blocked"));
    }
    let artifacts = object
        .iter()
        .filter(|(k, _)| !COMMON.contains(&k.as_str()))
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .filter(|(_, v)| v.ends_with(".md") || v.ends_with(".html") || v.contains('/'))
        .collect();
    Ok(Status {
        status,
        intent: text("intent")?,
        reason,
        assumptions: list("assumptions")?,
        open_questions: list("open_questions")?,
        artifacts,
        raw: object,
    })
}

/// Fields every status has, never artifacts.
const COMMON: [&str; 5] = [
    "status",
    "intent",
    "reason",
    "assumptions",
    "open_questions",
];

/// The last JSON object of `answer` with a `status` field: each `{` is tried as the start of a
/// value, and the last one that parses as such an object wins.
fn last_status_object(answer: &str) -> Option<Map<String, Value>> {
    let mut found = None;
    let mut from = 0;
    while let Some(at) = answer[from..].find('{').map(|i| from + i) {
        let mut stream = serde_json::Deserializer::from_str(&answer[at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(Value::Object(o))) if o.contains_key("status") => {
                from = at + stream.byte_offset();
                found = Some(o);
            }
            _ => from = at + 1,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fenced_status_at_the_end_of_a_chatty_answer_is_read() {
        let answer = "I wrote the PRD.\n\n```json\n{\n  \"status\": \"partial\",\n  \"intent\": \"create\",\n  \
            \"prd\": \"_bmad-output/prd/prd.md\",\n  \"memlog\": \"_bmad-output/prd/.memlog.md\",\n  \
            \"open_questions\": [\"Which markets first?\"],\n  \"assumptions\": [\"web only\"],\n  \
            \"external_handoffs\": []\n}\n```\n";
        let s = parse(answer).unwrap();
        assert_eq!(s.status, RunStatus::Partial);
        assert_eq!(s.intent.as_deref(), Some("create"));
        assert_eq!(s.assumptions, vec!["web only"]);
        assert_eq!(s.artifacts["prd"], "_bmad-output/prd/prd.md");
        assert_eq!(s.artifacts.len(), 2);
        assert_eq!(
            s.next(),
            Next::Questions(vec!["Which markets first?".into()])
        );
    }

    #[test]
    fn the_last_status_wins_and_other_objects_are_ignored() {
        let answer = "Draft: {\"status\": \"blocked\", \"reason\": \"x\"} then {\"note\": 1}\n\
            final: {\"status\": \"complete\", \"intent\": \"validate\", \"validation_report\": \"r/validation-report.md\", \"findings_summary\": {\"critical\": 0}}";
        let s = parse(answer).unwrap();
        assert_eq!(s.status, RunStatus::Complete);
        assert_eq!(s.next(), Next::Done);
        assert_eq!(
            s.artifacts.keys().collect::<Vec<_>>(),
            ["validation_report"]
        );
    }

    #[test]
    fn what_cannot_be_trusted_is_refused_with_its_field() {
        let table: [(&str, StatusError); 5] = [
            ("All done, the PRD is great!", StatusError::Missing),
            (
                "{\"status\": \"done\"}",
                StatusError::Field {
                    field: "status",
                    why: "is `done`, not complete, partial or blocked".into(),
                },
            ),
            (
                "{\"status\": \"blocked\", \"intent\": \"update\"}",
                StatusError::Field {
                    field: "reason",
                    why: "is required when the status is blocked".into(),
                },
            ),
            (
                "{\"status\": \"partial\", \"open_questions\": \"which?\"}",
                StatusError::Field {
                    field: "open_questions",
                    why: "is not a list".into(),
                },
            ),
            (
                "{\"status\": 3}",
                StatusError::Field {
                    field: "status",
                    why: "is not a string".into(),
                },
            ),
        ];
        for (answer, err) in table {
            assert_eq!(parse(answer), Err(err), "{answer}");
        }
    }

    #[test]
    fn blocked_escalates_with_its_reason_and_partial_without_questions_is_done() {
        let s = parse("{\"status\": \"blocked\", \"reason\": \"ambiguous intent\"}").unwrap();
        assert_eq!(s.next(), Next::Escalate("ambiguous intent".into()));
        let s =
            parse("{\"status\": \"partial\", \"assumptions\": [\"a\"], \"open_questions\": []}")
                .unwrap();
        assert_eq!(s.next(), Next::Done);
    }
}
