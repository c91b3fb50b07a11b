//! A unit of work: one story, one plan task, one planning step, one agent's task in a team. It
//! owns the workspace its agents work in, so that a run can give each unit a tree of its own (a
//! story's git worktree) while everything else of the run stays shared.

use crate::protocol::UnitKey;
use baton_agent::workspace::Workspace;
use std::sync::Arc;

/// A unit of work and the tree it works in.
#[derive(Debug, Clone)]
pub struct Unit {
    /// What it is, and the key the journal records it under.
    pub key: UnitKey,
    /// The tree its agents work in, its commits are made in, and its changed files come from.
    pub workspace: Arc<Workspace>,
}

impl Unit {
    /// The unit `key` working in `workspace`.
    pub fn new(key: UnitKey, workspace: Arc<Workspace>) -> Unit {
        Unit { key, workspace }
    }
}
