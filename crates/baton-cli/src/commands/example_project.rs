//! The bundled example project (`examples/tally`) that `baton demo` and `baton demo --plan`
//! start from: its files, compiled into the binary by path, and how a chosen set of them is
//! written into a fresh directory and committed.

use anyhow::{Context, Result};
use std::fs;
use std::path::Path;

/// One file of the bundled example project: its path and its text.
macro_rules! example {
    ($path:literal) => {
        (
            $path,
            include_str!(concat!("../../../../examples/tally/", $path)),
        )
    };
}
pub(super) use example;

/// Writes `files` (the example project's, by path) into `dir`, keeps `.baton/` out of git, and
/// commits them with `message` through `git`.
pub fn write_example(
    dir: &Path,
    files: &[(&str, &str)],
    message: &str,
    git: fn(&Path, &[&str]) -> Result<()>,
) -> Result<()> {
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        fs::write(&path, text).with_context(|| format!("cannot write `{}`", path.display()))?;
    }
    fs::write(dir.join(".baton/.gitignore"), "*\n").context("cannot write .baton/.gitignore")?;
    git(dir, &["init", "-q"])?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", message])?;
    Ok(())
}
