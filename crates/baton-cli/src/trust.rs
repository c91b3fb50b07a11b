//! Which projects the user trusts to supply their own agents.
//!
//! The list lives in the user's configuration directory (`trusted-projects`, one canonical path
//! per line), never inside a project, so a repository cannot trust itself.

use anyhow::{Context, Result};
use std::fs;
use std::path::{Path, PathBuf};

fn list_path() -> Option<PathBuf> {
    crate::env::config_dir().map(|d| d.join("trusted-projects"))
}

fn canonical(root: &Path) -> PathBuf {
    fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

fn read() -> Vec<PathBuf> {
    list_path()
        .and_then(|p| {
            baton_store::bounded::read_to_string(&p, baton_store::bounded::CONFIG_LIMIT).ok()
        })
        .map(|t| {
            t.lines()
                .filter(|l| !l.trim().is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `root` is trusted.
pub fn is_trusted(root: &Path) -> bool {
    let root = canonical(root);
    read().contains(&root)
}

/// Trusts (or, with `revoke`, distrusts) `root`; returns whether anything changed.
pub fn set(root: &Path, trusted: bool) -> Result<bool> {
    let path = list_path()
        .context("cannot find a configuration directory: set BATON_CONFIG_DIR or HOME")?;
    let root = canonical(root);
    let mut list = read();
    let had = list.contains(&root);
    if had == trusted {
        return Ok(false);
    }
    if trusted {
        list.push(root);
    } else {
        list.retain(|p| *p != root);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    }
    let text: String = list.iter().map(|p| format!("{}\n", p.display())).collect();
    baton_store::atomic::replace_durable(&path, text.as_bytes())?;
    Ok(true)
}
