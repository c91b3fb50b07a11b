//! How an epic follows its stories.
//!
//! When the first story of an epic leaves `backlog` for real work, the epic goes `in-progress`
//! (BMad's create-story does the same); a story parked in `needs-intervention` has not started
//! anything, so it does not lift its epic. When every story is `done`, the epic goes `done` if the project
//! allows it (`auto_epic_done`): BMad leaves that step to a human, so teams that want the same
//! turn it off. An epic is only lowered when a forced story change made its status untrue.

use crate::status::{Status, StatusValue};

/// The status the epic should move to, or `None` if it should stay.
///
/// `stories` are the effective values of the epic's stories; `allow_lower` is true when the
/// change that triggered this was forced.
pub fn follow<'a>(
    epic: &StatusValue,
    stories: impl IntoIterator<Item = &'a StatusValue>,
    auto_done: bool,
    allow_lower: bool,
) -> Option<Status> {
    let current = epic.known()?;
    let (mut any, mut started, mut all_done) = (false, false, true);
    for s in stories {
        any = true;
        let canonical = s.known().and_then(Status::projection);
        started |= !matches!(
            s,
            StatusValue::Known(Status::Backlog | Status::NeedsIntervention)
        );
        all_done &= canonical == Some(Status::Done) && s.known() == Some(Status::Done);
    }
    let target = if any && all_done && auto_done {
        Status::Done
    } else if started {
        Status::InProgress
    } else {
        Status::Backlog
    };
    let rank = |s: Status| match s {
        Status::Backlog => 0,
        Status::InProgress => 1,
        _ => 2,
    };
    if rank(target) > rank(current) {
        return Some(target);
    }
    if allow_lower
        && rank(target) < rank(current)
        && !(current == Status::Done && !auto_done && all_done)
    {
        // Never lower below in-progress once a story has started.
        return Some(if started { Status::InProgress } else { target });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use Status::*;

    fn v(s: Status) -> StatusValue {
        StatusValue::Known(s)
    }

    #[test]
    fn first_story_out_of_backlog_starts_the_epic() {
        let stories = [v(ReadyForDev), v(Backlog)];
        assert_eq!(follow(&v(Backlog), &stories, true, false), Some(InProgress));
    }

    #[test]
    fn all_done_finishes_the_epic_only_when_allowed() {
        let stories = [v(Done), v(Done)];
        assert_eq!(follow(&v(InProgress), &stories, true, false), Some(Done));
        assert_eq!(follow(&v(InProgress), &stories, false, false), None);
        assert_eq!(
            follow(&v(Backlog), &stories, false, false),
            Some(InProgress)
        );
    }

    #[test]
    fn never_lowers_unless_forced() {
        let stories = [v(Done), v(InProgress)];
        assert_eq!(follow(&v(Done), &stories, true, false), None);
        assert_eq!(follow(&v(Done), &stories, true, true), Some(InProgress));
        let back = [v(Backlog)];
        assert_eq!(follow(&v(InProgress), &back, true, true), Some(Backlog));
    }

    #[test]
    fn extended_states_are_not_done() {
        let stories = [v(Done), v(E2eVerify)];
        assert_eq!(follow(&v(InProgress), &stories, true, false), None);
        let foreign = [StatusValue::Foreign("awaiting-operator".into())];
        assert_eq!(follow(&v(Backlog), &foreign, true, false), Some(InProgress));
    }

    #[test]
    fn a_story_needing_intervention_does_not_start_its_epic() {
        let stories = [v(NeedsIntervention), v(Backlog)];
        assert_eq!(follow(&v(Backlog), &stories, true, false), None);
        // Nor does it lower one that a real start lifted.
        assert_eq!(follow(&v(InProgress), &stories, true, false), None);
        let started = [v(NeedsIntervention), v(ReadyForDev)];
        assert_eq!(follow(&v(Backlog), &started, true, false), Some(InProgress));
    }

    #[test]
    fn epic_without_stories_stays() {
        let none: [StatusValue; 0] = [];
        assert_eq!(follow(&v(Backlog), &none, true, false), None);
    }
}
