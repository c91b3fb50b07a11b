//! Before a run: is the project fit for one, and what did a killed run leave behind?
//!
//! Preflight ends the coding-agent CLIs a killed run left running, then refuses a project that
//! is not a git repository and a dirty tree (unless asked, or unless the dirt is what an
//! interrupted run left, which is kept). Recovery then sweeps temp
//! files of killed writers and decides who owns a killed run's uncommitted work: the stage whose
//! result was journaled but not yet carried out (it is committed with that stage when the story
//! resumes), the step that was cut off (it runs again and commits its work), or the stage whose
//! status change was made but whose commit the kill prevented (committed now, under that stage's
//! name: a story's stage, or an epic's retrospective).

use super::user_changes;
use crate::ctx::{RunCtx, StoryCtx};
use crate::error::EngineError;
use crate::run::preflight;
use baton_core::key::KeyKind;
use baton_core::story::{Decision, decide};
use baton_store::journal::{EventFilter, Journal};
use std::path::Path;

/// baton's own files, which never make a tree "dirty" for a sprint: `baton.toml`, `.baton/`,
/// temp files of baton's writers, the sprint file and the story files (statuses `baton set`
/// and `baton init` wrote). Paths are relative to the project root, `/`-separated.
#[derive(Debug, Clone)]
pub struct OwnedFiles {
    sprint_file: Option<String>,
    stories_dir: Option<String>,
}

impl OwnedFiles {
    /// The owned files of a project at `root` with this sprint file and story directory.
    pub fn new(root: &Path, sprint_file: &Path, stories_dir: &Path) -> OwnedFiles {
        let rel = |p: &Path| {
            p.strip_prefix(root)
                .ok()
                .map(|r| r.to_string_lossy().replace('\\', "/"))
        };
        OwnedFiles {
            sprint_file: rel(sprint_file),
            stories_dir: rel(stories_dir),
        }
    }

    /// Whether `path` is one of them.
    pub fn contains(&self, path: &str) -> bool {
        if path == "baton.toml" || path.starts_with(".baton/") || path.contains(".baton-tmp-") {
            return true;
        }
        if self.sprint_file.as_deref() == Some(path) {
            return true;
        }
        let Some(dir) = self.stories_dir.as_deref() else {
            return false;
        };
        let name = if dir.is_empty() {
            Some(path)
        } else {
            path.strip_prefix(dir).and_then(|r| r.strip_prefix('/'))
        };
        // A story file: `1-2-login.md` directly in the story directory.
        name.is_some_and(|n| {
            !n.contains('/') && n.ends_with(".md") && n.starts_with(|c: char| c.is_ascii_digit())
        })
    }
}

/// Checks the project can run a sprint; returns notices for the user. First ends the
/// coding-agent CLIs a killed run left working on the project (nothing may edit the tree
/// alongside this run). Uncommitted changes to baton's own files ([`OwnedFiles`]) do not block a
/// run: when they are the only ones, they are committed first as `baton: …`.
pub async fn preflight(run: &RunCtx) -> Result<Vec<String>, EngineError> {
    let mut notices = run.end_orphaned_workers().await;
    notices.extend(check_tree(run).await?);
    Ok(notices)
}

/// The repository, the sprint file and the dirty tree.
async fn check_tree(run: &RunCtx) -> Result<Vec<String>, EngineError> {
    let ws = run.workspace();
    let root = &run.settings.root;
    run.require_repo("baton commits every stage of a story. Run `git init` first.")
        .await?;
    let sprint_file = run.with_ledger(|l| Ok(l.doc().path().to_path_buf()))?;
    if std::fs::symlink_metadata(&sprint_file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(EngineError::Preflight(format!(
            "the sprint file `{}` is a symlink; baton does not edit a file through a link, which \
             could point outside the project. Replace the link with the file, or set \
             `[paths] sprint_status` in `baton.toml` to the real file",
            sprint_file.display()
        )));
    }
    let interrupted = run.interrupted()?;
    let snapshot = ws.snapshot().await;
    let sprint_file = run.with_ledger(|l| Ok(l.doc().path().to_path_buf()))?;
    let owned = OwnedFiles::new(root, &sprint_file, &run.settings.stories_dir);
    let (own, dirty): (Vec<&str>, Vec<&str>) = snapshot
        .dirty()
        .filter(|p| !p.starts_with(".baton/") && !p.contains(".baton-tmp-"))
        .partition(|p| owned.contains(p));
    if let Some(prev) = interrupted {
        // The user's changes the killed run kept out of its commits stay out; the rest of the
        // dirt is its work.
        user_changes::keep_recorded(root, ws);
        if dirty.is_empty() && own.is_empty() {
            return Ok(Vec::new());
        }
        return Ok(vec![format!(
            "run {} was interrupted; its uncommitted work is kept and the sprint resumes",
            prev.id
        )]);
    }
    let mut notices = Vec::new();
    if dirty.is_empty() {
        user_changes::forget(root);
    } else if run.settings.allow_dirty {
        let dirty: Vec<String> = dirty.iter().map(|p| (*p).to_owned()).collect();
        user_changes::keep(root, ws, &dirty);
        notices.push(format!(
            "your uncommitted changes ({}) stay as they are and out of every commit (--allow-dirty); a stage that changes one of them stops its story",
            preflight::list(&dirty)
        ));
    } else {
        return Err(EngineError::Preflight(format!(
            "the working tree has uncommitted changes ({}); commit or stash them, or pass --allow-dirty",
            preflight::list(&dirty)
        )));
    }
    notices.extend(super::carry::ignored_notice(run).await);
    if !own.is_empty() {
        // A failure is the run's to report: it does not end `completed`.
        let _ = run
            .commit(
                "-",
                format!("baton: commit its own files ({})", preflight::list(&own)),
            )
            .await;
    }
    Ok(notices)
}

/// Sweeps temp files of killed writers among the stories and settles a killed run's leftovers.
pub async fn tidy(run: &RunCtx) -> Result<(), EngineError> {
    if let Ok(entries) = std::fs::read_dir(&run.settings.stories_dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.contains(".baton-tmp-") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let Some(prev) = run.interrupted()? else {
        return Ok(());
    };
    // An agent's file write killed between its temp file and the rename leaves the temp file
    // beside its target, anywhere in the tree (commits leave such files out).
    let ws = run.workspace();
    let snapshot = ws.snapshot().await;
    for path in snapshot.dirty().filter(|p| is_temp_file(p)) {
        let _ = std::fs::remove_file(ws.root().join(path));
    }
    if !owned_by_a_step(run, &prev.id)? {
        let message = recovered_stage(run, &prev.id)
            .await?
            .unwrap_or_else(|| format!("sprint: work of interrupted run {}", prev.id));
        // A failure is the run's to report: it does not end `completed`.
        let _ = run.commit("-", message).await;
    }
    Ok(())
}

/// Makes the stage commit run `run_id` owes, if it owes one: its last status move was made and
/// the stage's commit was not (an interrupt landed between the two). The commit is made under
/// the stage's own message (`story(1-1): create`), so the history never folds a stage into a
/// run's closing commit. Work a step will redo, or whose commit the story's next move makes, is
/// left alone. Whether a commit was made.
pub async fn commit_owed_stage(run: &RunCtx, run_id: &str) -> Result<bool, EngineError> {
    if owned_by_a_step(run, run_id)? {
        return Ok(false);
    }
    let Some(message) = recovered_stage(run, run_id).await? else {
        return Ok(false);
    };
    run.commit("-", message).await?;
    Ok(true)
}

/// Whether the root-relative `path` names a temporary file of an interrupted write
/// (`.<name>.baton-tmp-…`).
fn is_temp_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with('.') && name.contains(".baton-tmp-")
}

/// Whether the killed run's leftovers belong to its newest step: one cut off before it settled
/// (it runs again), or one whose result is still to be carried out (its stage commit follows).
fn owned_by_a_step(run: &RunCtx, run_id: &str) -> Result<bool, EngineError> {
    let steps = run.with_ledger(|l| Ok(l.journal().steps(run_id)?))?;
    let Some(last) = steps.last() else {
        return Ok(false);
    };
    let Some(key) = last.key.as_deref() else {
        return Ok(false);
    };
    if !matches!(baton_core::key::classify(key), KeyKind::Story { .. }) {
        return Ok(false);
    }
    if last.outcome.is_none() {
        return Ok(true);
    }
    let facts = run.facts(key)?;
    Ok(matches!(decide(&facts), Decision::Move(m) if m.commit.is_some()))
}

/// The stage commit a killed run owed: named after its last transition (a story's stage, or a
/// retrospective moved to `done`), unless HEAD already is that commit.
async fn recovered_stage(run: &RunCtx, run_id: &str) -> Result<Option<String>, EngineError> {
    let events = run.with_ledger(|l| Ok(l.journal().events(&EventFilter::default())?))?;
    let Some(last) = events.iter().rev().find(|e| {
        e.run_id.as_deref() == Some(run_id)
            && matches!(
                baton_core::key::classify(&e.key),
                KeyKind::Story { .. } | KeyKind::Retrospective { .. }
            )
    }) else {
        return Ok(None);
    };
    if let KeyKind::Retrospective { epic } = baton_core::key::classify(&last.key) {
        if last.to != "done" {
            return Ok(None);
        }
        let message = crate::stages::retro::commit_message(epic);
        let head = run.workspace().git().head_subject().await;
        return Ok((head.as_deref() != Some(message.as_str())).then_some(message));
    }
    // A story worked in its own worktree owes its stage commit there (`settle_tree`), never in
    // the main tree, whose leftovers are then only baton's own files.
    if run
        .workspace()
        .branch_exists(&super::lane::branch_of(&last.key))
        .await
    {
        return Ok(None);
    }
    let facts = run.facts(&last.key)?;
    let Some(what) = owed_stage(&facts, last.from.as_deref().unwrap_or_default(), &last.to) else {
        return Ok(None);
    };
    let short = last.key.split('-').take(2).collect::<Vec<_>>().join("-");
    let message = format!("story({short}): {what}");
    // Made already: at HEAD, or (a story merged from its worktree while others went on) among
    // the newest commits.
    let recent = run
        .workspace()
        .git()
        .run(&["log", "-n", "100", "--format=%s"])
        .await
        .unwrap_or_default();
    Ok((!recent.lines().any(|l| l == message)).then_some(message))
}

/// The stage (`dev`, `review round 2`, …) whose commit goes with a story's move `from` → `to`,
/// given its facts; `None` when the move has no commit of its own.
pub fn owed_stage(facts: &baton_core::story::StoryFacts, from: &str, to: &str) -> Option<String> {
    let used = facts.rounds_used();
    Some(match (from, to) {
        ("backlog", _) => "create".to_owned(),
        ("in-progress", "review") if used > 0 => format!("fix round {used}"),
        ("in-progress", "review") => "dev".to_owned(),
        ("review", "done") => "review passed".to_owned(),
        ("e2e-verify", "done") => "verified".to_owned(),
        ("review" | "e2e-verify", "in-progress") => {
            // If a fix step settled after the review, the tree holds its work, not the
            // review's: that is not the review's commit.
            if facts.last_settled().is_some_and(|s| {
                matches!(
                    s.stage,
                    baton_core::dispatch::Stage::Fix | baton_core::dispatch::Stage::Dev
                )
            }) {
                return None;
            }
            let n = facts
                .steps
                .iter()
                .filter(|s| s.outcome.is_some_and(|o| o.is_rejection()))
                .count();
            format!("review round {n}")
        }
        _ => return None,
    })
}

/// Settles what a killed run left uncommitted in a story's worktree: temp files of interrupted
/// writes are swept, and work whose stage commit the kill prevented is committed under that
/// stage's subject. Work a step will redo, or whose commit the story's next move makes, stays.
pub async fn settle_tree(ctx: &StoryCtx) -> Result<(), EngineError> {
    let ws = ctx.workspace();
    ws.forget();
    let snapshot = ws.snapshot().await;
    let dirty: Vec<String> = snapshot.dirty().map(str::to_owned).collect();
    if dirty.is_empty() {
        return Ok(());
    }
    for path in dirty.iter().filter(|p| is_temp_file(p)) {
        let _ = std::fs::remove_file(ws.root().join(path));
    }
    let facts = ctx.load_facts()?;
    if facts.steps.last().is_some_and(|s| s.outcome.is_none()) {
        return Ok(());
    }
    if matches!(decide(&facts), Decision::Move(m) if m.commit.is_some()) {
        return Ok(());
    }
    let last = ctx.run.with_ledger(|l| {
        Ok(l.journal()
            .events(&EventFilter {
                key: Some(ctx.key.clone()),
                ..EventFilter::default()
            })?
            .pop())
    })?;
    let Some(last) = last else {
        return Ok(());
    };
    let Some(what) = owed_stage(&facts, last.from.as_deref().unwrap_or_default(), &last.to) else {
        return Ok(());
    };
    let message = ctx.subject(&what);
    if ws.git().head_subject().await.as_deref() != Some(message.as_str()) {
        ctx.commit(&what).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{OwnedFiles, is_temp_file};
    use std::path::Path;

    #[test]
    fn temp_files_of_interrupted_writes_are_recognized_by_their_name() {
        assert!(is_temp_file("src/.lib.rs.baton-tmp-abx0mF"));
        assert!(is_temp_file(".notes.md.baton-tmp-1"));
        assert!(!is_temp_file("src/lib.rs"));
        assert!(!is_temp_file("src/lib.rs.baton-tmp-1"));
        assert!(!is_temp_file(".baton-tmp-dir/lib.rs"));
    }

    #[test]
    fn baton_owns_its_config_state_sprint_file_and_story_files_only() {
        let root = Path::new("/p");
        let owned = OwnedFiles::new(
            root,
            &root.join("_bmad-output/implementation-artifacts/sprint-status.yaml"),
            &root.join("_bmad-output/implementation-artifacts"),
        );
        for path in [
            "baton.toml",
            ".baton/baton.db",
            "_bmad-output/implementation-artifacts/sprint-status.yaml",
            "_bmad-output/implementation-artifacts/1-2-login.md",
            "src/.lib.rs.baton-tmp-1",
        ] {
            assert!(owned.contains(path), "{path}");
        }
        for path in [
            "src/lib.rs",
            "sub/baton.toml",
            "_bmad-output/implementation-artifacts/notes.md",
            "_bmad-output/implementation-artifacts/x/1-2-login.md",
            "_bmad-output/planning-artifacts/prd.md",
        ] {
            assert!(!owned.contains(path), "{path}");
        }
    }
}
