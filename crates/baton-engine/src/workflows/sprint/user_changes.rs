//! The user's own uncommitted changes in a run started with `--allow-dirty`: kept out of every
//! commit and left as they are.
//!
//! When the run starts, the paths git lists as changed that are not baton's own files are
//! recorded with their content ([`baton_agent::workspace::Workspace::keep_user_changes`]); no
//! commit takes them, no agent's changed files count them, and a stage that changes one fails
//! its commit (the story goes to a human: the stage's work and the user's are in one file).
//! The record is kept in `.baton/user-changes.json` too, so the run that resumes a killed one
//! keeps the same changes out, even without `--allow-dirty` (its tree then holds the killed
//! run's work beside them). A run that starts on a tree without the user's changes removes it.

use baton_agent::workspace::Workspace;
use std::path::{Path, PathBuf};

/// The record's file in the project at `root`.
fn record_path(root: &Path) -> PathBuf {
    root.join(".baton").join("user-changes.json")
}

/// One kept change as recorded: the path and the content hash it had.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    path: String,
    hash: Option<u64>,
}

/// Keeps the user's changes to `paths` out of `ws`'s commits and records them.
pub fn keep(root: &Path, ws: &Workspace, paths: &[String]) {
    let entries: Vec<Entry> = ws
        .keep_user_changes(paths)
        .into_iter()
        .map(|(path, hash)| Entry { path, hash })
        .collect();
    if let Ok(text) = serde_json::to_vec_pretty(&entries) {
        // Without the record a resumed run would take these changes for the killed run's work;
        // a run that is not killed never needs it.
        let _ = baton_store::atomic::replace_durable(&record_path(root), &text);
    }
}

/// Keeps the changes a killed run recorded out of `ws`'s commits too; whether there were any.
pub fn keep_recorded(root: &Path, ws: &Workspace) -> bool {
    let Ok(text) = baton_store::bounded::read(&record_path(root), 1 << 24) else {
        return false;
    };
    let Ok(entries) = serde_json::from_slice::<Vec<Entry>>(&text) else {
        return false;
    };
    let kept: Vec<(String, Option<u64>)> = entries.into_iter().map(|e| (e.path, e.hash)).collect();
    ws.keep_as(&kept);
    !kept.is_empty()
}

/// Forgets the record (the tree holds no change of the user's that a run keeps).
pub fn forget(root: &Path) {
    let _ = std::fs::remove_file(record_path(root));
}
