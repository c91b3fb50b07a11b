//! Which projects the user trusts with their own `baton.toml` settings and agents.
//!
//! The list lives in the user's configuration directory (`trusted-projects`, one canonical path
//! per line), never inside a project, so a repository cannot trust itself. The directory comes
//! from the caller (the binary reads it from the environment).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The list's file name, in the user's configuration directory.
pub const LIST_FILE: &str = "trusted-projects";

/// Errors recording trust.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The configuration directory cannot be created.
    #[error("cannot create `{}`", dir.display())]
    Create {
        /// The directory.
        dir: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The list cannot be written.
    #[error(transparent)]
    Write(#[from] baton_store::atomic::WriteError),
}

fn canonical(root: &Path) -> PathBuf {
    fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

fn read(list: &Path) -> Vec<PathBuf> {
    baton_store::bounded::read_to_string(list, baton_store::bounded::CONFIG_LIMIT)
        .map(|t| {
            t.lines()
                .filter(|l| !l.trim().is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `root` is trusted according to the list in `config_dir` (never, without one).
pub fn is_trusted(config_dir: Option<&Path>, root: &Path) -> bool {
    config_dir.is_some_and(|d| read(&d.join(LIST_FILE)).contains(&canonical(root)))
}

/// Trusts (or distrusts) `root` in the list in `config_dir`; returns whether anything changed.
pub fn set(config_dir: &Path, root: &Path, trusted: bool) -> Result<bool, TrustError> {
    let path = config_dir.join(LIST_FILE);
    let root = canonical(root);
    let mut list = read(&path);
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
        fs::create_dir_all(dir).map_err(|source| TrustError::Create {
            dir: dir.to_path_buf(),
            source,
        })?;
    }
    let text: String = list.iter().map(|p| format!("{}\n", p.display())).collect();
    baton_store::atomic::replace_durable(&path, text.as_bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_recorded_outside_the_project_and_can_be_revoked() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let dir = home.path().join("baton");
        assert!(!is_trusted(Some(&dir), project.path()));
        assert!(set(&dir, project.path(), true).unwrap());
        assert!(!set(&dir, project.path(), true).unwrap(), "already trusted");
        assert!(is_trusted(Some(&dir), project.path()));
        assert!(!is_trusted(None, project.path()));
        assert!(set(&dir, project.path(), false).unwrap());
        assert!(!is_trusted(Some(&dir), project.path()));
        assert!(!project.path().join(LIST_FILE).exists());
    }
}
