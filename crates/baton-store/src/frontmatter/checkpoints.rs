//! Checkpoints: numbered snapshots of a document under one directory (baton uses
//! `.baton/checkpoints`), one subdirectory per document, pruned to the newest
//! [`DEFAULT_KEEP`] (ten), and restored atomically, only from the document's own snapshots.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::io_err;
use super::{DEFAULT_KEEP, FrontmatterError};
use crate::atomic::replace_durable;

/// One snapshot of a document, as stored by [`Checkpoints::save`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Sequence number, monotonic per document.
    pub seq: u64,
    /// The sanitized label given when it was saved.
    pub label: String,
    /// The snapshot file.
    pub path: PathBuf,
}

impl Checkpoint {
    /// Reads the snapshot's bytes.
    pub fn read(&self) -> Result<Vec<u8>, FrontmatterError> {
        fs::read(&self.path).map_err(io_err(&self.path))
    }

    fn parse_name(name: &str) -> Option<(u64, String)> {
        let stem = name.strip_suffix(".md")?;
        let (digits, label) = stem.split_once('-')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if label.is_empty() || label != sanitize_label(label) {
            return None;
        }
        Some((digits.parse().ok()?, label.to_owned()))
    }
}

fn sanitize_label(label: &str) -> String {
    let mut out: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(48)
        .collect();
    if out.trim_matches('-').is_empty() {
        out = "checkpoint".to_owned();
    }
    out
}

/// Numbered snapshots of documents, kept under one directory (baton uses
/// `.baton/checkpoints`), the newest [`DEFAULT_KEEP`] per document.
///
/// Each document gets its own subdirectory named after its path (sanitized, plus a hash of the
/// path so distinct paths never share one); pass the same spelling of a document's path every
/// time. Snapshots are `NNNNNN-<label>.md`. One writer at a time is assumed.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    dir: PathBuf,
    keep: usize,
}

impl Checkpoints {
    /// Checkpoints stored under `dir`, keeping [`DEFAULT_KEEP`] per document.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            keep: DEFAULT_KEEP,
        }
    }

    /// Keeps the newest `keep` snapshots per document (at least one).
    pub fn with_keep(mut self, keep: usize) -> Self {
        self.keep = keep.max(1);
        self
    }

    /// The directory holding every document's checkpoints.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory holding `doc_path`'s checkpoints (always a direct child of [`Self::dir`]).
    pub fn doc_dir(&self, doc_path: &Path) -> PathBuf {
        let mut normal = String::new();
        for c in doc_path.components() {
            match c {
                Component::CurDir => {}
                Component::RootDir => normal.push('/'),
                Component::ParentDir => normal.push_str("../"),
                Component::Prefix(p) => normal.push_str(&p.as_os_str().to_string_lossy()),
                Component::Normal(s) => {
                    normal.push_str(&s.to_string_lossy());
                    normal.push('/');
                }
            }
        }
        let normal = normal.trim_end_matches('/');
        let readable: String = normal
            .trim_start_matches(['/', '.'])
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
                _ => '_',
            })
            .take(80)
            .collect();
        let digest = Sha256::digest(normal.as_bytes());
        let hash: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{readable}-{hash}"))
    }

    /// Copies the current bytes of `doc_path` into a new snapshot labelled `label`, then prunes
    /// the document's snapshots to the newest ones.
    pub fn save(&self, doc_path: &Path, label: &str) -> Result<Checkpoint, FrontmatterError> {
        let bytes = fs::read(doc_path).map_err(io_err(doc_path))?;
        let dir = self.doc_dir(doc_path);
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let existing = self.scan(&dir)?;
        let seq = existing.last().map_or(1, |c| c.seq.saturating_add(1));
        let label = sanitize_label(label);
        let path = dir.join(format!("{seq:06}-{label}.md"));
        replace_durable(&path, &bytes)?;
        let checkpoint = Checkpoint { seq, label, path };
        let all = self.scan(&dir)?;
        let excess = all.len().saturating_sub(self.keep);
        for old in all.iter().take(excess) {
            match fs::remove_file(&old.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&old.path)(e)),
            }
        }
        Ok(checkpoint)
    }

    /// The snapshots of `doc_path`, oldest first (newest last); none if it never had any.
    pub fn list(&self, doc_path: &Path) -> Result<Vec<Checkpoint>, FrontmatterError> {
        self.scan(&self.doc_dir(doc_path))
    }

    /// The newest snapshot of `doc_path`, if any.
    pub fn latest(&self, doc_path: &Path) -> Result<Option<Checkpoint>, FrontmatterError> {
        Ok(self.list(doc_path)?.pop())
    }

    /// Writes `checkpoint`'s bytes back over `doc_path` atomically.
    ///
    /// The checkpoint must be one of `doc_path`'s own snapshots; any other file is refused.
    pub fn restore(
        &self,
        doc_path: &Path,
        checkpoint: &Checkpoint,
    ) -> Result<(), FrontmatterError> {
        let foreign = || FrontmatterError::ForeignCheckpoint {
            path: doc_path.to_path_buf(),
            checkpoint: checkpoint.path.clone(),
        };
        let name = checkpoint
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(foreign)?;
        if Checkpoint::parse_name(name).is_none() {
            return Err(foreign());
        }
        let dir = self.doc_dir(doc_path);
        if checkpoint.path.parent() != Some(dir.as_path()) {
            return Err(foreign());
        }
        let snapshot = dir.join(name);
        let bytes = fs::read(&snapshot).map_err(io_err(&snapshot))?;
        replace_durable(doc_path, &bytes)?;
        Ok(())
    }

    fn scan(&self, dir: &Path) -> Result<Vec<Checkpoint>, FrontmatterError> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(dir)(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err(dir))?;
            let name = entry.file_name();
            let Some((seq, label)) = name.to_str().and_then(Checkpoint::parse_name) else {
                continue;
            };
            out.push(Checkpoint {
                seq,
                label,
                path: entry.path(),
            });
        }
        out.sort_by_key(|c| c.seq);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_prune_to_ten_and_restore() {
        let dir = tempfile::tempdir().unwrap();
        let doc_path = dir.path().join("prd.md");
        let cps = Checkpoints::new(dir.path().join(".baton/checkpoints"));
        assert!(cps.list(&doc_path).unwrap().is_empty());
        for i in 1..=13 {
            fs::write(&doc_path, format!("version {i}\n")).unwrap();
            let cp = cps.save(&doc_path, &format!("step {i}")).unwrap();
            assert_eq!(cp.seq, i);
            assert_eq!(cp.label, format!("step-{i}"));
        }
        let list = cps.list(&doc_path).unwrap();
        assert_eq!(list.len(), DEFAULT_KEEP);
        assert_eq!(list.first().unwrap().seq, 4);
        assert_eq!(list.last().unwrap().seq, 13);
        assert_eq!(
            list.last().unwrap().path.file_name().unwrap().to_str(),
            Some("000013-step-13.md")
        );
        assert_eq!(cps.latest(&doc_path).unwrap().unwrap().seq, 13);
        let five = list.iter().find(|c| c.seq == 5).unwrap();
        cps.restore(&doc_path, five).unwrap();
        assert_eq!(fs::read_to_string(&doc_path).unwrap(), "version 5\n");
        let next = cps.save(&doc_path, "after restore").unwrap();
        assert_eq!(next.seq, 14, "sequence keeps growing");
        assert_eq!(next.read().unwrap(), b"version 5\n");
    }

    #[test]
    fn checkpoint_paths_never_escape_and_foreign_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cp");
        let cps = Checkpoints::new(&root);
        let doc_path = dir.path().join("d.md");
        fs::write(&doc_path, "x").unwrap();
        let cp = cps.save(&doc_path, "../../etc/passwd").unwrap();
        assert!(cp.path.starts_with(&root));
        assert_eq!(cp.path.parent().unwrap().parent().unwrap(), root);
        assert!(!cp.label.contains('/') && !cp.label.contains('.'));
        for weird in ["../../x.md", "/", "..", ".", ""] {
            let d = cps.doc_dir(Path::new(weird));
            assert_eq!(d.parent().unwrap(), root, "{weird}");
            let name = d.file_name().unwrap().to_str().unwrap();
            assert!(name != ".." && name != "." && !name.is_empty());
        }
        assert_ne!(
            cps.doc_dir(Path::new("a/b.md")),
            cps.doc_dir(Path::new("a_b.md"))
        );
        assert_eq!(
            cps.doc_dir(Path::new("./a/b.md")),
            cps.doc_dir(Path::new("a/b.md"))
        );
        let other = dir.path().join("other.md");
        fs::write(&other, "y").unwrap();
        let theirs = cps.save(&other, "x").unwrap();
        assert!(matches!(
            cps.restore(&doc_path, &theirs),
            Err(FrontmatterError::ForeignCheckpoint { .. })
        ));
        let forged = Checkpoint {
            seq: 1,
            label: "x".into(),
            path: doc_path.clone(),
        };
        assert!(cps.restore(&doc_path, &forged).is_err());
        assert_eq!(fs::read_to_string(&doc_path).unwrap(), "x");
    }
}
