//! "What next?": the order in which work is picked (BMAD-FORMAT.md §2.6 and R7).
//!
//! First story sorted by (epic, story, suffix): any `in-progress` → develop; else `review` →
//! code review; else `ready-for-dev` → develop; else `backlog` → create the story; else an
//! `optional` retrospective of an epic whose stories are all done; else everything is done.
//! baton's extended states slot in where their work belongs; `needs-intervention`, foreign and
//! unknown values are never picked: [`blocked_stories`] names them and how to put them back.

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
    /// The sprint file holds no story yet (a greenfield project before planning).
    NothingPlanned,
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
    // A retrospective is owed once its epic's stories are all done, not before; an epic without
    // stories has nothing left undone, and BMad's `status` recommends its retrospective too.
    let epic_done = |r: &Entry| {
        r.key.kind().epic().is_some_and(|epic| {
            stories
                .iter()
                .filter(|s| s.key.kind().epic() == Some(epic))
                .all(|s| s.effective().is_done())
        })
    };
    if let Some(r) = retros.iter().find(|e| {
        !stories.is_empty() && e.effective() == StatusValue::Known(Status::Optional) && epic_done(e)
    }) {
        return NextAction::Retrospective(r.key.as_str().to_owned());
    }
    if stories.is_empty() {
        NextAction::NothingPlanned
    } else if stories.iter().all(|e| e.effective().is_done()) {
        NextAction::AllDone
    } else {
        NextAction::Blocked
    }
}

/// A story no work can be picked for until a human acts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockedStory {
    /// The story.
    pub key: String,
    /// Its status (`needs-intervention`, or a value baton does not manage).
    pub status: String,
    /// What to set it to so baton picks it up again: the status it was parked from, else
    /// `backlog`.
    pub resume: String,
    /// Whether that move needs `--force` (the file no longer says where the story was).
    pub force: bool,
}

impl BlockedStory {
    /// The command that unblocks it.
    pub fn command(&self) -> String {
        format!(
            "baton set {} {}{}",
            self.key,
            self.resume,
            if self.force { " --force" } else { "" }
        )
    }
}

/// The stories that need a human: `needs-intervention`, foreign and unknown values, in story
/// order.
pub fn blocked_stories(sprint: &Sprint) -> Vec<BlockedStory> {
    let mut stories: Vec<&Entry> = sprint
        .unique()
        .filter(|e| matches!(e.key.kind(), KeyKind::Story { .. }))
        .collect();
    stories.sort_by_key(|e| e.key.kind().story_order());
    stories
        .into_iter()
        .filter_map(|e| {
            let effective = e.effective();
            let (resume, force) = match &effective {
                StatusValue::Known(Status::NeedsIntervention) => match e.value.known() {
                    Some(under) if under != Status::NeedsIntervention => (under, false),
                    _ => (Status::Backlog, true),
                },
                StatusValue::Foreign(_) | StatusValue::Unknown(_) => (Status::Backlog, false),
                StatusValue::Known(_) => return None,
            };
            Some(BlockedStory {
                key: e.key.as_str().to_owned(),
                status: effective.as_str().to_owned(),
                resume: resume.as_str().to_owned(),
                force,
            })
        })
        .collect()
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

    #[test]
    fn a_retrospective_waits_for_its_epic_and_parked_stories_are_named() {
        let mut s = sprint(&[
            ("epic-1", "backlog"),
            ("1-1-a", "backlog"),
            ("1-2-b", "needs-intervention"),
            ("1-3-c", "bogus"),
            ("epic-1-retrospective", "optional"),
        ]);
        // The marker form: the canonical status stays in the file, baton's state in a comment.
        s.entries[1].extended = Some(Status::NeedsIntervention);
        let s = Sprint::new(Vec::new(), None, s.entries.clone());
        assert_eq!(next_action(&s), NextAction::Blocked);
        let blocked = blocked_stories(&s);
        let commands: Vec<String> = blocked.iter().map(BlockedStory::command).collect();
        assert_eq!(
            commands,
            vec![
                "baton set 1-1-a backlog",
                "baton set 1-2-b backlog --force",
                "baton set 1-3-c backlog",
            ]
        );
        assert_eq!(blocked[0].status, "needs-intervention");
        assert_eq!(blocked[2].status, "bogus");
    }

    #[test]
    fn an_empty_epics_open_retrospective_is_next_once_the_stories_are_done() {
        let s = sprint(&[
            ("epic-1", "done"),
            ("1-1-a", "done"),
            ("epic-1-retrospective", "done"),
            ("epic-2", "backlog"),
            ("epic-2-retrospective", "optional"),
        ]);
        assert_eq!(
            next_action(&s),
            NextAction::Retrospective("epic-2-retrospective".into())
        );
    }

    #[test]
    fn a_sprint_without_stories_has_nothing_planned() {
        let s = sprint(&[("epic-1", "backlog"), ("epic-1-retrospective", "optional")]);
        assert_eq!(next_action(&s), NextAction::NothingPlanned);
    }
}
