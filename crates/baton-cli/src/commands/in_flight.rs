//! The stories in flight in their own worktrees, for `baton status`: each story's worktree and
//! branch (from git), and where it stands on its way into the base branch (the newest merge
//! event the journal holds for it: working, waiting in the merge lane and its place there,
//! rebasing, in a merge fix round, testing, or kept). Read from another process than the run's.

use baton_agent::workspace::git::Git;
use baton_store::journal::{RunEvents, SqliteJournal};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
#[cfg(test)]
use std::process::Command;

/// How many of the newest journal events are read for the stories' merge phases.
const RECENT_EVENTS: usize = 5_000;

/// One story in flight.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct InFlight {
    /// The story.
    pub key: String,
    /// Its branch.
    pub branch: String,
    /// Its worktree (project-relative).
    pub worktree: String,
    /// Where it stands: `worktree` (working), `queued`, `rebasing`, `conflict`, `testing`,
    /// `merged`, `kept`; `None` when the journal holds no merge event for it.
    pub phase: Option<String>,
    /// Its place in the merge lane (1: next), while it waits there.
    pub lane_place: Option<usize>,
}

/// The stories of the project at `root` in worktrees of their own, by key; the journal is only
/// opened (`journal`) when there are some.
pub fn list(root: &Path, journal: impl FnOnce() -> Option<SqliteJournal>) -> Vec<InFlight> {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let Ok(listed) = rt.block_on(Git::new(root, Vec::new()).worktrees()) else {
        return Vec::new();
    };
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let trees: Vec<(String, String)> = listed
        .into_iter()
        .filter_map(|w| {
            let key = w.branch.as_deref()?.strip_prefix("baton/")?.to_owned();
            let rel = w
                .path
                .strip_prefix(&canonical)
                .or_else(|_| w.path.strip_prefix(root))
                .map_or_else(
                    |_| w.path.display().to_string(),
                    |r| r.display().to_string(),
                );
            Some((key, rel))
        })
        .collect();
    if trees.is_empty() {
        return Vec::new();
    }
    let phases = journal().as_ref().map(phases).unwrap_or_default();
    let mut queued: Vec<(i64, String)> = phases
        .iter()
        .filter(|(_, (_, phase))| phase == "queued")
        .map(|(k, (seq, _))| (*seq, k.clone()))
        .collect();
    queued.sort();
    trees
        .into_iter()
        .map(|(key, worktree)| InFlight {
            branch: format!("baton/{key}"),
            phase: phases.get(&key).map(|(_, p)| p.clone()),
            lane_place: queued.iter().position(|(_, k)| *k == key).map(|i| i + 1),
            worktree,
            key,
        })
        .collect()
}

/// The newest merge phase of each story, with the event's number.
fn phases(journal: &SqliteJournal) -> BTreeMap<String, (i64, String)> {
    let mut out = BTreeMap::new();
    let last = journal.last_event_seq().unwrap_or(0);
    let from = last.saturating_sub(i64::try_from(RECENT_EVENTS).unwrap_or(i64::MAX));
    let Ok(events) = journal.events_after(from, RECENT_EVENTS) else {
        return out;
    };
    for e in events {
        let Ok(body) = serde_json::from_str::<serde_json::Value>(&e.body) else {
            continue;
        };
        if body["event"] != "merge" {
            continue;
        }
        if let (Some(key), Some(phase)) = (body["key"].as_str(), body["phase"].as_str()) {
            out.insert(key.to_owned(), (e.seq, phase.to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_store::journal::SqliteJournal;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn worktrees_of_baton_branches_are_listed_with_their_phase_and_lane_place() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("a"), "a").unwrap();
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", "init"]);
        for key in ["1-1-a", "2-1-b", "3-1-c"] {
            let wt = format!(".baton/worktrees/{key}");
            git(
                &root,
                &["worktree", "add", "-q", "-b", &format!("baton/{key}"), &wt],
            );
        }
        // A worktree of someone else's branch is not a story in flight.
        let elsewhere = tempfile::tempdir().unwrap();
        let other = elsewhere.path().join("wt").display().to_string();
        git(&root, &["worktree", "add", "-q", "-b", "feature", &other]);
        let db = root.join(".baton/baton.db");
        let mut j = SqliteJournal::open(&db).unwrap();
        for (key, phase) in [
            ("1-1-a", "worktree"),
            ("2-1-b", "worktree"),
            ("3-1-c", "worktree"),
            ("2-1-b", "queued"),
            ("1-1-a", "queued"),
            ("2-1-b", "rebasing"),
        ] {
            let body =
                serde_json::json!({ "event": "merge", "key": key, "phase": phase, "detail": "" });
            j.append_event("r", "2026-01-01T00:00:00Z", "\"run\"", &body.to_string())
                .unwrap();
        }
        drop(j);
        let list = list(&root, || SqliteJournal::open(&db).ok());
        let view: Vec<(&str, Option<&str>, Option<usize>)> = list
            .iter()
            .map(|f| (f.key.as_str(), f.phase.as_deref(), f.lane_place))
            .collect();
        assert_eq!(
            view,
            [
                ("1-1-a", Some("queued"), Some(1)),
                ("2-1-b", Some("rebasing"), None),
                ("3-1-c", Some("worktree"), None),
            ]
        );
        assert_eq!(list[0].worktree, ".baton/worktrees/1-1-a");
        assert_eq!(list[0].branch, "baton/1-1-a");
    }
}
