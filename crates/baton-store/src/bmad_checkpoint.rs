//! Checkpoints of a BMad session's artifacts, and rollback to one.
//!
//! A checkpoint copies every regular file under the watched folders (BMad's output folder;
//! never its `.archive/` or `.memory-queue/`, never through a symlink) into
//! `<dir>/<step>/files/`, and writes `<dir>/<step>/manifest.json` (path, SHA-256, size) last
//! and atomically: a checkpoint without its manifest was never finished and does not count.
//!
//! Restoring one makes the watched folders equal to it. Every file it would replace or that did
//! not exist then is first moved into `<archive>/<stamp>/`, never deleted. The checkpoint is
//! verified whole before anything moves, and every path in a manifest (a file anyone can edit)
//! must stay inside the project.

use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Why a checkpoint cannot be taken or restored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Reading or writing a file failed.
    #[error("`{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No such checkpoint.
    #[error("there is no checkpoint {step}; the checkpoints are: {known}")]
    Unknown {
        /// The step asked for.
        step: u32,
        /// Those that exist.
        known: String,
    },
    /// A manifest that cannot be trusted.
    #[error("checkpoint {step}: {why}")]
    Corrupt {
        /// The step.
        step: u32,
        /// What is wrong.
        why: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One file of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// Relative to the project.
    pub path: String,
    /// SHA-256, hex.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
}

/// What a checkpoint holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// Its step.
    pub step: u32,
    /// Its files.
    pub files: Vec<Entry>,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Files written back, relative to the project.
    pub restored: Vec<String>,
    /// Files moved into the archive, relative to the project.
    pub archived: Vec<String>,
}

/// The checkpoints of one session.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    root: PathBuf,
    dir: PathBuf,
    watched: Vec<PathBuf>,
}

fn sha(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn skipped(name: &str) -> bool {
    name == ".archive" || name == ".memory-queue"
}

/// Whether `rel` is a plain relative path inside the project.
fn inside(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty() && !p.is_absolute() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

impl Checkpoints {
    /// The checkpoints kept in `dir` of the files under `watched` (relative to `root`).
    pub fn new(root: PathBuf, dir: PathBuf, watched: Vec<PathBuf>) -> Checkpoints {
        Checkpoints { root, dir, watched }
    }

    fn files(&self) -> Result<Vec<String>, CheckpointError> {
        let mut out = Vec::new();
        let mut stack: Vec<PathBuf> = self.watched.iter().map(|w| self.root.join(w)).collect();
        while let Some(d) = stack.pop() {
            let Ok(read) = fs::read_dir(&d) else { continue };
            for e in read.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                let name = e.file_name().to_string_lossy().into_owned();
                if ft.is_dir() && !skipped(&name) {
                    stack.push(e.path());
                } else if ft.is_file()
                    && let Ok(rel) = e.path().strip_prefix(&self.root)
                {
                    out.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Takes checkpoint `step` (replacing one of the same step).
    pub fn take(&self, step: u32) -> Result<Manifest, CheckpointError> {
        let at = self.dir.join(step.to_string());
        let manifest_path = at.join("manifest.json");
        if manifest_path.exists() {
            fs::remove_file(&manifest_path).map_err(io(&manifest_path))?;
        }
        let files_dir = at.join("files");
        if files_dir.exists() {
            fs::remove_dir_all(&files_dir).map_err(io(&files_dir))?;
        }
        let mut files = Vec::new();
        for rel in self.files()? {
            let src = self.root.join(&rel);
            let bytes = fs::read(&src).map_err(io(&src))?;
            let dst = files_dir.join(&rel);
            if let Some(parent) = dst.parent() {
                fs::create_dir_all(parent).map_err(io(parent))?;
            }
            fs::write(&dst, &bytes).map_err(io(&dst))?;
            files.push(Entry {
                path: rel,
                sha256: sha(&bytes),
                size: bytes.len() as u64,
            });
        }
        let m = Manifest { step, files };
        fs::create_dir_all(&at).map_err(io(&at))?;
        let text = serde_json::to_vec_pretty(&m).unwrap_or_default();
        crate::atomic::replace(&manifest_path, &text).map_err(|e| CheckpointError::Io {
            path: manifest_path.clone(),
            source: e.source,
        })?;
        Ok(m)
    }

    /// The complete checkpoints, in order.
    pub fn steps(&self) -> Vec<u32> {
        let mut out: Vec<u32> = fs::read_dir(&self.dir)
            .map(|r| {
                r.flatten()
                    .filter(|e| e.path().join("manifest.json").is_file())
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        out.sort_unstable();
        out
    }

    fn manifest(&self, step: u32) -> Result<Manifest, CheckpointError> {
        let steps = self.steps();
        if !steps.contains(&step) {
            let known = if steps.is_empty() {
                "none".to_owned()
            } else {
                steps
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(CheckpointError::Unknown { step, known });
        }
        let path = self.dir.join(step.to_string()).join("manifest.json");
        let text = fs::read(&path).map_err(io(&path))?;
        let m: Manifest = serde_json::from_slice(&text).map_err(|e| CheckpointError::Corrupt {
            step,
            why: format!("`{}` does not read: {e}", path.display()),
        })?;
        Ok(m)
    }

    /// Restores checkpoint `step`, archiving what it replaces under `archive/<stamp>/`.
    pub fn restore(
        &self,
        step: u32,
        archive: &Path,
        stamp: &str,
    ) -> Result<Restored, CheckpointError> {
        let m = self.manifest(step)?;
        let files_dir = self.dir.join(step.to_string()).join("files");
        // Verify everything before touching anything.
        let mut wanted = Vec::with_capacity(m.files.len());
        for e in &m.files {
            if !inside(&e.path)
                || !self
                    .watched
                    .iter()
                    .any(|w| Path::new(&e.path).starts_with(w))
            {
                return Err(CheckpointError::Corrupt {
                    step,
                    why: format!("the path `{}` leaves the watched folders", e.path),
                });
            }
            let copy = files_dir.join(&e.path);
            let bytes = fs::read(&copy).map_err(io(&copy))?;
            if sha(&bytes) != e.sha256 {
                return Err(CheckpointError::Corrupt {
                    step,
                    why: format!("the copy of `{}` does not match its SHA-256", e.path),
                });
            }
            wanted.push((e.path.clone(), bytes));
        }
        let mut r = Restored::default();
        for rel in self.files()? {
            let now = self.root.join(&rel);
            let same = wanted
                .iter()
                .any(|(p, b)| *p == rel && fs::read(&now).is_ok_and(|cur| cur == *b));
            if same {
                continue;
            }
            let dst = archive.join(stamp).join(&rel);
            if let Some(parent) = dst.parent() {
                fs::create_dir_all(parent).map_err(io(parent))?;
            }
            fs::rename(&now, &dst).map_err(io(&now))?;
            r.archived.push(rel);
        }
        for (rel, bytes) in wanted {
            let dst = self.root.join(&rel);
            if dst.is_file() {
                continue;
            }
            if let Some(parent) = dst.parent() {
                fs::create_dir_all(parent).map_err(io(parent))?;
            }
            fs::write(&dst, &bytes).map_err(io(&dst))?;
            r.restored.push(rel);
        }
        r.archived.sort();
        r.restored.sort();
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Checkpoints) {
        let d = tempfile::tempdir().unwrap();
        let c = Checkpoints::new(
            d.path().to_path_buf(),
            d.path().join(".baton/bmad/s/checkpoints"),
            vec![PathBuf::from("out")],
        );
        (d, c)
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn a_restore_brings_the_files_back_and_archives_the_later_ones() {
        let (d, c) = setup();
        let root = d.path();
        write(root, "out/prd.md", "v1");
        write(root, "out/.archive/old.md", "kept out");
        write(root, "elsewhere.md", "not watched");
        c.take(1).unwrap();
        write(root, "out/prd.md", "v2");
        write(root, "out/x/new.md", "new");
        c.take(2).unwrap();
        write(root, "out/prd.md", "v3");
        assert_eq!(c.steps(), [1, 2]);
        let r = c.restore(1, &root.join("out/.archive"), "T").unwrap();
        assert_eq!(fs::read_to_string(root.join("out/prd.md")).unwrap(), "v1");
        assert!(!root.join("out/x/new.md").exists());
        assert_eq!(r.archived, ["out/prd.md", "out/x/new.md"]);
        assert_eq!(r.restored, ["out/prd.md"]);
        assert_eq!(
            fs::read_to_string(root.join("out/.archive/T/out/prd.md")).unwrap(),
            "v3"
        );
        assert_eq!(
            fs::read_to_string(root.join("out/.archive/T/out/x/new.md")).unwrap(),
            "new"
        );
        assert_eq!(
            fs::read_to_string(root.join("out/.archive/old.md")).unwrap(),
            "kept out"
        );
        assert!(matches!(
            c.restore(7, root, "T"),
            Err(CheckpointError::Unknown { .. })
        ));
    }

    #[test]
    fn a_tampered_or_corrupt_checkpoint_changes_nothing() {
        let (d, c) = setup();
        let root = d.path();
        write(root, "out/prd.md", "v1");
        c.take(1).unwrap();
        write(root, "out/prd.md", "v2");
        let copy = c.dir.join("1/files/out/prd.md");
        fs::write(&copy, "tampered").unwrap();
        let e = c.restore(1, &root.join("out/.archive"), "T").unwrap_err();
        assert!(e.to_string().contains("SHA-256"), "{e}");
        assert_eq!(fs::read_to_string(root.join("out/prd.md")).unwrap(), "v2");
        let m = c.dir.join("1/manifest.json");
        let text = fs::read_to_string(&m)
            .unwrap()
            .replace("out/prd.md", "../x");
        fs::write(&m, text).unwrap();
        let e = c.restore(1, &root.join("out/.archive"), "T").unwrap_err();
        assert!(e.to_string().contains("leaves"), "{e}");
        assert!(!root.join("out/.archive").exists());
        // A checkpoint without its manifest never counts.
        fs::create_dir_all(c.dir.join("9/files")).unwrap();
        assert_eq!(c.steps(), [1]);
    }
}
