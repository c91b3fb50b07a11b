//! baton's private directory (`.baton/`) ignores itself.
//!
//! The journal, transcripts, locks and worktrees under `.baton/` are the machine's, never the
//! project's history. Whoever creates the directory writes `.baton/.gitignore` holding `*` (which
//! ignores the file itself too), so git never lists or commits anything in it, whatever the
//! project's own ignore rules say. A project cloned from one where baton ran has no such file
//! (it was never committed): the first command that makes state there writes it.

use std::io;
use std::path::Path;

/// What `.baton/.gitignore` holds.
pub const GITIGNORE: &str = "# baton's private state (journal, locks, transcripts)\n*\n";

/// Creates the state directory `dir` (with its parents) if needed, and its `.gitignore` if
/// missing. Returns whether the `.gitignore` was written.
pub fn ensure(dir: &Path) -> io::Result<bool> {
    std::fs::create_dir_all(dir)?;
    write_ignore(dir)
}

/// Writes `dir/.gitignore` when `dir` exists and has none; a missing directory is left
/// missing. Returns whether the file was written.
pub fn ignore_if_present(dir: &Path) -> io::Result<bool> {
    if !dir.is_dir() {
        return Ok(false);
    }
    write_ignore(dir)
}

fn write_ignore(dir: &Path) -> io::Result<bool> {
    let path = dir.join(".gitignore");
    if path.exists() {
        return Ok(false);
    }
    crate::atomic::replace_durable(&path, GITIGNORE.as_bytes()).map_err(io::Error::other)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_ignores_itself_and_an_existing_file_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("p/.baton");
        assert!(!ignore_if_present(&dir).unwrap());
        assert!(!dir.exists());
        assert!(ensure(&dir).unwrap());
        assert_eq!(
            std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
            GITIGNORE
        );
        std::fs::write(dir.join(".gitignore"), "mine\n").unwrap();
        assert!(!ensure(&dir).unwrap());
        assert!(!ignore_if_present(&dir).unwrap());
        assert_eq!(
            std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
            "mine\n"
        );
    }
}
