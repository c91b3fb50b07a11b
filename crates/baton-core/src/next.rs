//! "What next?": the order in which work is picked (BMAD-FORMAT.md §2.6 and R7).
//!
//! First story sorted by (epic, story, suffix): any `in-progress` → develop; else `review` →
//! code review; else `ready-for-dev` → develop; else `backlog` → create the story; else an
//! `optional` retrospective; else everything is done. baton's extended states slot in where their
//! work belongs; `needs-intervention`, foreign and unknown values are never picked.

use crate::key::KeyKind;
use crate::sprint::{Entry, Sprint};
use crate::status::{Status, StatusValue};
use serde::Serialize;

/// The next piece of work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", content = "key", rename_all = "kebab-case")]
pub enum NextAction {
    /// Continue development of an in-progress story.
    ContinueDev(String),
    /// Review a story in `review`.
    CodeReview(String),
    /// Verify a story in `e2e-verify`.
    Verify(String),
    /// Review the story document.
    StoryReview(String),
    /// Revise the story document.
    ReviseStory(String),
    /// Start development of a ready story.
    StartDev(String),
    /// Create the story file of a backlog story.
    CreateStory(String),
    /// Hold an epic's retrospective.
    Retrospective(String),
    /// Nothing left to do.
    AllDone,
    /// Work remains but none of it can be picked (needs a human, or foreign statuses).
    Blocked,
}

/// Picks the next action.
pub fn next_action(sprint: &Sprint) -> NextAction {
    let mut stories: Vec<&Entry> = sprint
        .unique()
        .filter(|e| matches!(e.key.kind(), KeyKind::Story { .. }))
        .collect();
    stories.sort_by_key(|e| e.key.kind().story_order());
    type Pick = fn(String) -> NextAction;
    let order: [(Status, Pick); 7] = [
        (Status::InProgress, NextAction::ContinueDev),
        (Status::Review, NextAction::CodeReview),
        (Status::E2eVerify, NextAction::Verify),
        (Status::StoryDocImproved, NextAction::ReviseStory),
        (Status::StoryDocReview, NextAction::StoryReview),
        (Status::ReadyForDev, NextAction::StartDev),
        (Status::Backlog, NextAction::CreateStory),
    ];
    for (status, action) in order.iter() {
        if let Some(e) = stories
            .iter()
            .find(|e| e.effective() == StatusValue::Known(*status))
        {
            return action(e.key.as_str().to_owned());
        }
    }
    let mut retros: Vec<&Entry> = sprint
        .unique()
        .filter(|e| matches!(e.key.kind(), KeyKind::Retrospective { .. }))
        .collect();
    retros.sort_by_key(|e| e.key.kind().epic());
    if let Some(r) = retros
        .iter()
        .find(|e| e.effective() == StatusValue::Known(Status::Optional))
    {
        return NextAction::Retrospective(r.key.as_str().to_owned());
    }
    if stories.iter().all(|e| e.effective().is_done()) {
        NextAction::AllDone
    } else {
        NextAction::Blocked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;

    fn sprint(items: &[(&str, &str)]) -> Sprint {
        let entries = items
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                let key = Key::new(*k);
                let (value, legacy) = StatusValue::parse(v, key.kind());
                let extended = value.known().filter(|s| s.is_extended());
                Entry {
                    key,
                    raw: Some((*v).to_owned()),
                    value,
                    legacy,
                    extended,
                    line: i + 1,
                    structured: false,
                }
            })
            .collect();
        Sprint::new(Vec::new(), None, entries)
    }

    #[test]
    fn follows_the_documented_order() {
        let s = sprint(&[
            ("epic-1", "in-progress"),
            ("1-1-a", "backlog"),
            ("1-2-b", "ready-for-dev"),
            ("1-3-c", "review"),
            ("1-4-d", "in-progress"),
        ]);
        assert_eq!(next_action(&s), NextAction::ContinueDev("1-4-d".into()));
        let s = sprint(&[("1-1-a", "backlog"), ("1-2-b", "ready-for-dev")]);
        assert_eq!(next_action(&s), NextAction::StartDev("1-2-b".into()));
        let s = sprint(&[
            ("2-1-a", "backlog"),
            ("1-10-b", "backlog"),
            ("1-2-c", "backlog"),
        ]);
        assert_eq!(next_action(&s), NextAction::CreateStory("1-2-c".into()));
    }

    #[test]
    fn retro_then_done_then_blocked() {
        let s = sprint(&[("1-1-a", "done"), ("epic-1-retrospective", "optional")]);
        assert_eq!(
            next_action(&s),
            NextAction::Retrospective("epic-1-retrospective".into())
        );
        let s = sprint(&[("1-1-a", "done"), ("epic-1-retrospective", "done")]);
        assert_eq!(next_action(&s), NextAction::AllDone);
        let s = sprint(&[("1-1-a", "awaiting-operator")]);
        assert_eq!(next_action(&s), NextAction::Blocked);
    }
}
