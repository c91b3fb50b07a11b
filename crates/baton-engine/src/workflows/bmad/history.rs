//! A BMad skill session as the journal holds it, so a killed run resumes exactly where it
//! stood: every ended step of the session's unit (`bmad:<session>`), oldest first, read back as
//! the conversation (the skill's turns and the answers it got), the menu history, the parties
//! held and how the session ended.
//!
//! The step records are the only copy: nothing about a session is kept anywhere else. A step
//! that was begun and never ended (the process was killed in it), or a turn that did not
//! complete, is not part of the history: the session runs that turn again.

use baton_store::journal::StepRecord;
use serde::{Deserialize, Serialize};

/// Step stage that starts the session; its detail is [`StartDetail`].
pub const START: &str = "bmad-start";
/// Step stage of one turn of the skill's agent; its detail is [`TurnDetail`].
pub const TURN: &str = "bmad-turn";
/// Step stage of an answer given to the skill; its detail is [`Reply`].
pub const REPLY: &str = "bmad-reply";
/// Step stage of a party; its detail is [`PartyDetail`].
pub const PARTY: &str = "bmad-party";
/// Step stage that ends the session; its detail is [`EndDetail`].
pub const END: &str = "bmad-end";

/// What a turn's step records when it ends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TurnDetail {
    /// The skill's answer.
    pub output: String,
}

/// Who answered the skill.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum By {
    /// baton, by its rules.
    Baton,
    /// A person, through an escalation.
    Person,
}

/// A menu selection, for the menu history.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Selection {
    /// The menu's option keys.
    pub options: Vec<String>,
    /// The key chosen.
    pub selection: String,
    /// The decision's confidence (0–100).
    pub confidence: f64,
    /// Why.
    pub reason: String,
    /// Whether it was a `Continue`.
    pub continues: bool,
    /// When (RFC 3339).
    pub at: String,
}

/// An answer given to the skill.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Reply {
    /// What the skill is told.
    pub text: String,
    /// Who decided it.
    pub by: By,
    /// The menu selection it is, if it answers a menu.
    #[serde(default)]
    pub menu: Option<Selection>,
    /// The escalation it answers, if a person answered.
    #[serde(default)]
    pub escalation: Option<i64>,
}

/// A party, as its step records it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PartyDetail {
    /// The issue set it was called on (a hash), or what it was called for.
    pub on: String,
    /// Who took part.
    pub members: Vec<String>,
    /// Rounds held.
    pub rounds: u32,
    /// Whether an exit keyword ended it (rather than the round limit).
    pub exited: bool,
    /// What it concluded, as given to the skill.
    pub summary: String,
}

/// What a session started with, kept for the whole session (a resumed run uses it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StartDetail {
    /// The tier.
    pub tier: u8,
    /// Where the tier came from (`--tier`, a profile, a setting, a hint, a suggestion).
    pub tier_from: String,
    /// The caller's input.
    #[serde(default)]
    pub input: Option<String>,
}

/// How the session ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EndDetail {
    /// `completed`, `stopped` or `failed`.
    pub end: String,
    /// Why, or what the skill reported.
    pub reason: String,
}

/// A journal step of a session whose detail cannot be read: the session is not guessed at.
#[derive(Debug, thiserror::Error)]
#[error("journal step {step} ({stage}): {source}")]
pub struct HistoryError {
    /// The step's id.
    pub step: i64,
    /// Its stage.
    pub stage: String,
    /// Why its detail does not read.
    pub source: serde_json::Error,
}

/// One entry of the session, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// The start.
    Start(StartDetail),
    /// A turn of the skill (its number, from 1).
    Turn(u32, TurnDetail),
    /// An answer given to it.
    Reply(Reply),
    /// A party held.
    Party(PartyDetail),
    /// The end.
    End(EndDetail),
}

/// A session's history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// Its entries, oldest first.
    pub entries: Vec<Entry>,
}

impl History {
    /// Reads the ended steps of a session (`steps` of its key, in any order). A step whose
    /// detail cannot be read is an error naming it: the session is not guessed at.
    pub fn read(steps: &[StepRecord]) -> Result<History, HistoryError> {
        let mut steps: Vec<&StepRecord> = steps.iter().filter(|s| s.ended_at.is_some()).collect();
        steps.sort_by_key(|s| s.id);
        let mut entries = Vec::with_capacity(steps.len());
        for s in steps {
            let detail = s.detail.as_deref().unwrap_or("{}");
            let bad = |source: serde_json::Error| HistoryError {
                step: s.id,
                stage: s.stage.clone(),
                source,
            };
            let entry = match s.stage.as_str() {
                // A turn that did not complete said nothing the session goes on from.
                START => Entry::Start(serde_json::from_str(detail).map_err(bad)?),
                TURN if s.outcome.as_deref() != Some("completed") => continue,
                TURN => Entry::Turn(s.attempt, serde_json::from_str(detail).map_err(bad)?),
                REPLY => Entry::Reply(serde_json::from_str(detail).map_err(bad)?),
                PARTY => Entry::Party(serde_json::from_str(detail).map_err(bad)?),
                END => Entry::End(serde_json::from_str(detail).map_err(bad)?),
                _ => continue,
            };
            entries.push(entry);
        }
        Ok(History { entries })
    }

    /// The number of turns taken.
    pub fn turns(&self) -> u32 {
        self.entries
            .iter()
            .filter(|e| matches!(e, Entry::Turn(..)))
            .count()
            .try_into()
            .unwrap_or(u32::MAX)
    }

    /// The last turn's output, when nothing answered it yet.
    pub fn unanswered(&self) -> Option<&str> {
        match self
            .entries
            .iter()
            .rev()
            .find(|e| !matches!(e, Entry::Party(_)))
        {
            Some(Entry::Turn(_, t)) => Some(&t.output),
            _ => None,
        }
    }

    /// What the session started with.
    pub fn start(&self) -> Option<&StartDetail> {
        self.entries.iter().find_map(|e| match e {
            Entry::Start(d) => Some(d),
            _ => None,
        })
    }

    /// How the session ended, if it did.
    pub fn ended(&self) -> Option<&EndDetail> {
        self.entries.iter().rev().find_map(|e| match e {
            Entry::End(d) => Some(d),
            _ => None,
        })
    }

    /// The menu history, oldest first.
    pub fn menus(&self) -> Vec<&Selection> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                Entry::Reply(r) => r.menu.as_ref(),
                _ => None,
            })
            .collect()
    }

    /// Since a person last answered: continues baton took, and menus it answered.
    pub fn streak(&self) -> (u32, u32) {
        let (mut continues, mut menus) = (0, 0);
        for e in self.entries.iter().rev() {
            if let Entry::Reply(r) = e {
                if r.by == By::Person {
                    break;
                }
                if let Some(m) = &r.menu {
                    menus += 1;
                    if m.continues {
                        continues += 1;
                    }
                }
            }
        }
        (continues, menus)
    }

    /// Whether a party was held in this session.
    pub fn party_held(&self) -> bool {
        self.entries.iter().any(|e| matches!(e, Entry::Party(_)))
    }

    /// The turn outputs before the last one, with the parties held between them, in order:
    /// what the validation loop replays.
    pub fn earlier(&self) -> Vec<&Entry> {
        let last = self
            .entries
            .iter()
            .rposition(|e| matches!(e, Entry::Turn(..)));
        self.entries[..last.unwrap_or(0)]
            .iter()
            .filter(|e| matches!(e, Entry::Turn(..) | Entry::Party(_)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: i64, stage: &str, attempt: u32, detail: &str, ended: bool) -> StepRecord {
        StepRecord {
            id,
            run_id: "r".into(),
            key: Some("bmad:s".into()),
            stage: stage.into(),
            attempt,
            input_hash: String::new(),
            outcome: ended.then(|| "completed".into()),
            started_at: "t".into(),
            ended_at: ended.then(|| "t".into()),
            detail: Some(detail.into()),
        }
    }

    fn reply(by: &str, cont: bool) -> String {
        format!(
            r#"{{"text":"C","by":"{by}","menu":{{"options":["C"],"selection":"C","confidence":100.0,"reason":"r","continues":{cont},"at":"t"}}}}"#
        )
    }

    #[test]
    fn the_conversation_and_the_streak_come_back_in_order() {
        let steps = vec![
            step(5, TURN, 3, r#"{"output":"menu 3"}"#, true),
            step(1, TURN, 1, r#"{"output":"menu 1"}"#, true),
            step(2, REPLY, 0, &reply("baton", true), true),
            step(3, TURN, 2, r#"{"output":"menu 2"}"#, true),
            step(4, REPLY, 0, &reply("person", true), true),
            step(6, REPLY, 0, &reply("baton", true), true),
            step(7, TURN, 4, r#"{"output":"killed"}"#, false),
        ];
        let h = History::read(&steps).unwrap();
        assert_eq!(h.turns(), 3);
        assert_eq!(h.unanswered(), None);
        assert_eq!(h.streak(), (1, 1));
        assert_eq!(h.menus().len(), 3);
        let h = History::read(&steps[..1]).unwrap();
        assert_eq!(h.unanswered(), Some("menu 3"));
        assert!(History::read(&[step(1, TURN, 1, "{not json", true)]).is_err());
    }
}
