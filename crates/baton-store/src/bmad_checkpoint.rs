//! Checkpoints of a BMad run's artifacts, so a run can be rolled back to an earlier step.
//!
//! A checkpoint copies every regular file under the watched directories (BMad's output folder,
//! `_bmad-output`, typically) into `<dir>/<step>/files/…` and lists them, with their SHA-256 and
//! size, in `<dir>/<step>/manifest.json`. Symbolic links are never followed nor copied, and the
//! folders BMad and baton keep for themselves (`.archive`, `.memory-queue`, `.rollback-archive`)
//! are left out. A checkpoint is built in a temporary folder beside the others, manifest last,
//! and renamed into place whole, so a checkpoint cut short is never listed; taking a step again
//! replaces it.
//!
//! Restoring makes the watched directories equal to a checkpoint. Nothing is deleted: a file that
//! differs from the checkpoint or is not in it is first moved into `<archive>/<stamp>/…`, then the
//! checkpoint's files are copied back (each one through a temp file and a rename). Every file of
//! the checkpoint is verified against its manifest before anything is touched, so a damaged
//! checkpoint changes nothing. A manifest is a file anyone could edit: each path in it must be
//! relative, free of `..`, and inside a watched directory, or the checkpoint is refused.

use crate::atomic::{self, WriteError};
use crate::lock::{FileLock, LockError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

/// The manifest format's version.
pub const VERSION: u32 = 1;

/// Folder names whose content is never part of a checkpoint: BMad's archive and memory queue, and
/// the archive of files a rollback moved aside.
pub const SKIPPED: [&str; 3] = [".archive", ".memory-queue", ".rollback-archive"];

/// One file in a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Its path from the project root, with `/` separators.
    pub path: String,
    /// The SHA-256 of its bytes, in lowercase hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
}

/// What a checkpoint holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The format's version ([`VERSION`]).
    pub version: u32,
    /// The step it was taken at.
    pub step: u32,
    /// Its files, sorted by path.
    pub files: Vec<ManifestEntry>,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// The files written back from the checkpoint (missing, or different), sorted.
    pub restored: Vec<String>,
    /// What was moved into the archive (files that differed from the checkpoint or were not in
    /// it, and links or folders standing where a checkpoint file goes), sorted.
    pub archived: Vec<String>,
}

/// An error taking, listing or restoring checkpoints.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file or folder could not be read or written.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// What was being done (`read`, `copy`, `move`, …).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// A path that would leave the project or the watched directories.
    #[error("`{path}` is refused: {why}")]
    Outside {
        /// The path as written.
        path: String,
        /// Why it is refused.
        why: String,
    },
    /// No complete checkpoint for the step.
    #[error("there is no checkpoint of step {step}; {}", steps_list(.available))]
    UnknownStep {
        /// The step asked for.
        step: u32,
        /// The steps that have one.
        available: Vec<u32>,
    },
    /// The checkpoint does not hold what its manifest says; nothing was changed.
    #[error("the checkpoint of step {step} is damaged at `{path}`: {why}; nothing was changed")]
    Corrupt {
        /// The step.
        step: u32,
        /// The file (or `manifest.json`).
        path: String,
        /// What is wrong.
        why: String,
    },
    /// A file name that is not UTF-8 cannot be listed in a manifest.
    #[error("`{}` has a name that is not UTF-8; rename it to take a checkpoint", .0.display())]
    NotUtf8(PathBuf),
    /// The archive folder for this stamp already exists.
    #[error(
        "the archive `{}` already exists; restore with another stamp so nothing in it is overwritten",
        .0.display()
    )]
    ArchiveExists(PathBuf),
    /// The stamp cannot name a folder.
    #[error("the archive stamp `{0}` must be one folder name (no `/`, not `.` or `..`)")]
    BadStamp(String),
    /// The lock on the checkpoint folder could not be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A manifest could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

fn steps_list(steps: &[u32]) -> String {
    if steps.is_empty() {
        return "no checkpoint has been taken".to_owned();
    }
    let s: Vec<String> = steps.iter().map(u32::to_string).collect();
    format!("checkpoints exist for steps {}", s.join(", "))
}

fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> CheckpointError + 'a {
    move |source| CheckpointError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// The checkpoints of one BMad run.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    /// The project root.
    root: PathBuf,
    /// Where the checkpoints are kept (absolute).
    dir: PathBuf,
    /// The directories whose files are the artifacts, relative to `root`.
    watched: Vec<PathBuf>,
}

impl Checkpoints {
    /// Checkpoints of the files under `watched` (directories relative to `root`, e.g.
    /// `_bmad-output`), kept in `dir` (relative to `root`, or absolute; e.g.
    /// `.baton/bmad/<session>/checkpoints`). A watched path that is absolute, holds `..`, or is
    /// not a plain relative path is refused.
    pub fn new(
        root: &Path,
        dir: &Path,
        watched: &[PathBuf],
    ) -> Result<Checkpoints, CheckpointError> {
        let mut checked = Vec::with_capacity(watched.len());
        for w in watched {
            let text = w.to_string_lossy();
            let rel = plain_relative(&text).map_err(|why| CheckpointError::Outside {
                path: text.clone().into_owned(),
                why,
            })?;
            checked.push(rel);
        }
        Ok(Checkpoints {
            root: root.to_path_buf(),
            dir: root.join(dir),
            watched: checked,
        })
    }

    /// Where the checkpoints are kept.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the checkpoint of `step`, replacing one taken before at the same step.
    pub fn take(&self, step: u32) -> Result<Manifest, CheckpointError> {
        fs::create_dir_all(&self.dir).map_err(io_err("create", &self.dir))?;
        let _lock = FileLock::acquire(&self.dir.join(".lock"))?;
        self.sweep_leftovers();
        let current = self.current_files()?;
        let staging = self.dir.join(format!(".tmp-{step}-{}", std::process::id()));
        remove_tree(&staging)?;
        let files_dir = staging.join("files");
        let mut files = Vec::with_capacity(current.len());
        for (rel, abs) in &current {
            let to = files_dir.join(rel);
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).map_err(io_err("create", parent))?;
            }
            let (sha256, size) = copy_hashed(abs, &to, true)?;
            files.push(ManifestEntry {
                path: rel.clone(),
                sha256,
                size,
            });
        }
        let manifest = Manifest {
            version: VERSION,
            step,
            files,
        };
        let mut bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| WriteError {
            path: staging.join("manifest.json"),
            source: io::Error::other(e),
        })?;
        bytes.push(b'\n');
        fs::create_dir_all(&staging).map_err(io_err("create", &staging))?;
        atomic::replace_durable(&staging.join("manifest.json"), &bytes)?;
        // Into place whole: the old checkpoint of this step stays complete until the new one is.
        let target = self.dir.join(step.to_string());
        let old = self.dir.join(format!(".old-{step}-{}", std::process::id()));
        let had_old = match fs::symlink_metadata(&target) {
            Ok(_) => {
                fs::rename(&target, &old).map_err(io_err("move", &target))?;
                true
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(io_err("read", &target)(e)),
        };
        fs::rename(&staging, &target).map_err(io_err("move", &staging))?;
        atomic::sync_dir(&target)?;
        if had_old {
            remove_tree(&old)?;
        }
        Ok(manifest)
    }

    /// The steps with a complete checkpoint, in order.
    pub fn steps(&self) -> Result<Vec<u32>, CheckpointError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("read", &self.dir)(e)),
        };
        let mut steps: Vec<u32> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let step: u32 = name.parse().ok()?;
                // One name per step: `007` or `+7` are not checkpoints.
                (step.to_string() == name).then_some(step)
            })
            .filter(|step| self.manifest_path(*step).is_file())
            .collect();
        steps.sort_unstable();
        Ok(steps)
    }

    /// The most recent step with a complete checkpoint.
    pub fn latest(&self) -> Result<Option<u32>, CheckpointError> {
        Ok(self.steps()?.last().copied())
    }

    /// Removes all but the `keep` most recent checkpoints; returns the steps removed.
    pub fn prune(&self, keep: usize) -> Result<Vec<u32>, CheckpointError> {
        let _lock = FileLock::acquire(&self.dir.join(".lock"))?;
        let steps = self.steps()?;
        let drop = steps.len().saturating_sub(keep);
        let gone: Vec<u32> = steps.into_iter().take(drop).collect();
        for step in &gone {
            let path = self.dir.join(step.to_string());
            // The manifest first: a removal cut short leaves no checkpoint that looks whole.
            fs::remove_file(self.manifest_path(*step))
                .map_err(io_err("remove", &self.manifest_path(*step)))?;
            remove_tree(&path)?;
        }
        Ok(gone)
    }

    /// The manifest of `step`, its paths checked.
    pub fn manifest(&self, step: u32) -> Result<Manifest, CheckpointError> {
        let path = self.manifest_path(step);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(CheckpointError::UnknownStep {
                    step,
                    available: self.steps()?,
                });
            }
            Err(e) => return Err(io_err("read", &path)(e)),
        };
        let corrupt = |why: String| CheckpointError::Corrupt {
            step,
            path: "manifest.json".to_owned(),
            why,
        };
        let manifest: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(format!("it is not a valid manifest: {e}")))?;
        if manifest.version != VERSION {
            return Err(corrupt(format!(
                "it is version {}; this baton reads version {VERSION}",
                manifest.version
            )));
        }
        if manifest.step != step {
            return Err(corrupt(format!("it says step {}", manifest.step)));
        }
        let mut seen = BTreeSet::new();
        for entry in &manifest.files {
            self.artifact_path(&entry.path)?;
            if !seen.insert(entry.path.as_str()) {
                return Err(corrupt(format!("`{}` is listed twice", entry.path)));
            }
        }
        // A file cannot also be a folder of another listed file.
        for entry in &manifest.files {
            let prefix = format!("{}/", entry.path);
            if let Some(inner) = seen.range(prefix.as_str()..).next()
                && inner.starts_with(&prefix)
            {
                return Err(corrupt(format!(
                    "`{}` is listed as a file and as the folder of `{inner}`",
                    entry.path
                )));
            }
        }
        Ok(manifest)
    }

    /// Makes the watched directories equal to the checkpoint of `step`. Files that differ from
    /// it or are not in it are moved (never deleted) into `archive_root/<stamp>/<their path>`,
    /// then its files are copied back. `archive_root` is relative to the project root or
    /// absolute; it may be inside a watched directory only under a [`SKIPPED`] folder (e.g.
    /// `_bmad-output/.rollback-archive`). The checkpoint is verified whole first: if any file
    /// differs from its manifest, this is an error and nothing is changed.
    pub fn restore(
        &self,
        step: u32,
        archive_root: &Path,
        stamp: &str,
    ) -> Result<Restored, CheckpointError> {
        if stamp.is_empty() || stamp.contains(['/', '\0']) || stamp == "." || stamp == ".." {
            return Err(CheckpointError::BadStamp(stamp.to_owned()));
        }
        let archive = self.root.join(archive_root).join(stamp);
        self.check_archive(&archive)?;
        let _lock = FileLock::acquire(&self.dir.join(".lock"))?;
        let manifest = self.manifest(step)?;
        let files = self.dir.join(step.to_string()).join("files");

        // Everything is verified before anything is touched.
        for entry in &manifest.files {
            let copy = files.join(&entry.path);
            let corrupt = |why: String| CheckpointError::Corrupt {
                step,
                path: entry.path.clone(),
                why,
            };
            match fs::symlink_metadata(&copy) {
                Ok(m) if m.file_type().is_file() => {}
                Ok(_) => return Err(corrupt("the copy is not a regular file".into())),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(corrupt("the copy is missing".into()));
                }
                Err(e) => return Err(io_err("read", &copy)(e)),
            }
            let (sha256, size) = hash_file(&copy)?;
            if size != entry.size || sha256 != entry.sha256 {
                return Err(corrupt(format!(
                    "the copy's content ({size} bytes, sha256 {sha256}) is not the one recorded ({} bytes, sha256 {})",
                    entry.size, entry.sha256
                )));
            }
        }

        let wanted: BTreeMap<&str, &ManifestEntry> = manifest
            .files
            .iter()
            .map(|e| (e.path.as_str(), e))
            .collect();
        let current = self.current_files()?;
        let mut to_archive = Vec::new();
        let mut same = BTreeSet::new();
        for (rel, abs) in &current {
            match wanted.get(rel.as_str()) {
                Some(entry) if hash_file(abs)? == (entry.sha256.clone(), entry.size) => {
                    same.insert(rel.as_str());
                }
                _ => to_archive.push(rel.clone()),
            }
        }
        let to_restore: Vec<&ManifestEntry> = manifest
            .files
            .iter()
            .filter(|e| !same.contains(e.path.as_str()))
            .collect();
        let mut done = Restored::default();
        if to_archive.is_empty() && to_restore.is_empty() {
            return Ok(done);
        }
        if fs::symlink_metadata(&archive).is_ok() {
            return Err(CheckpointError::ArchiveExists(archive));
        }

        for rel in &to_archive {
            self.move_aside(rel, &archive)?;
            done.archived.push(rel.clone());
        }
        self.remove_emptied(&to_archive);

        for entry in to_restore {
            self.clear_way(&entry.path, &archive, &mut done.archived)?;
            let target = self.root.join(&entry.path);
            let parent = target.parent().unwrap_or(&self.root);
            let tmp = tempfile::Builder::new()
                .prefix(".baton-restore-")
                .tempfile_in(parent)
                .map_err(io_err("create a file in", parent))?;
            let copy = files.join(&entry.path);
            let (sha256, size) = copy_hashed(&copy, tmp.path(), true)?;
            if sha256 != entry.sha256 || size != entry.size {
                return Err(CheckpointError::Corrupt {
                    step,
                    path: entry.path.clone(),
                    why: "the copy changed while it was restored".into(),
                });
            }
            tmp.persist(&target)
                .map_err(|e| io_err("write", &target)(e.error))?;
            done.restored.push(entry.path.clone());
        }
        done.restored.sort();
        done.archived.sort();
        done.archived.dedup();
        Ok(done)
    }

    fn manifest_path(&self, step: u32) -> PathBuf {
        self.dir.join(step.to_string()).join("manifest.json")
    }

    /// `rel` checked as an artifact's path: plain, relative, inside a watched directory and not
    /// in a skipped folder.
    fn artifact_path(&self, rel: &str) -> Result<PathBuf, CheckpointError> {
        let outside = |why: &str| CheckpointError::Outside {
            path: rel.to_owned(),
            why: why.to_owned(),
        };
        let path = plain_relative(rel).map_err(|why| outside(&why))?;
        if !self
            .watched
            .iter()
            .any(|w| path.starts_with(w) && path != *w)
        {
            return Err(outside("it is not inside a watched directory"));
        }
        if path
            .components()
            .any(|c| SKIPPED.iter().any(|s| c.as_os_str() == *s))
        {
            return Err(outside("it is inside a folder checkpoints leave out"));
        }
        Ok(path)
    }

    /// The archive must not be among the artifacts (it would be checkpointed and restored).
    fn check_archive(&self, archive: &Path) -> Result<(), CheckpointError> {
        let Ok(rel) = archive.strip_prefix(&self.root) else {
            return Ok(());
        };
        if rel.components().any(|c| c == Component::ParentDir) {
            return Err(CheckpointError::Outside {
                path: archive.display().to_string(),
                why: "an archive path holds no `..`".into(),
            });
        }
        for w in &self.watched {
            if let Ok(inner) = rel.strip_prefix(w)
                && !inner
                    .components()
                    .any(|c| SKIPPED.iter().any(|s| c.as_os_str() == *s))
            {
                return Err(CheckpointError::Outside {
                    path: archive.display().to_string(),
                    why: format!(
                        "the archive is inside the watched `{}`; put it under `{}/.rollback-archive` or outside",
                        w.display(),
                        w.display()
                    ),
                });
            }
        }
        Ok(())
    }

    /// Every regular file under the watched directories: path from the root (with `/`) → its
    /// absolute path. Links are neither followed nor listed.
    fn current_files(&self) -> Result<BTreeMap<String, PathBuf>, CheckpointError> {
        let mut out = BTreeMap::new();
        for w in &self.watched {
            // The watched path itself must not pass through a link.
            let mut at = self.root.clone();
            let mut present = true;
            for c in w.components() {
                at.push(c);
                match fs::symlink_metadata(&at) {
                    Ok(m) if m.file_type().is_symlink() => {
                        return Err(CheckpointError::Outside {
                            path: w.display().to_string(),
                            why: format!(
                                "`{}` is a symbolic link, and checkpoints never follow links",
                                at.strip_prefix(&self.root).unwrap_or(&at).display()
                            ),
                        });
                    }
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => {
                        present = false;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        present = false;
                        break;
                    }
                    Err(e) => return Err(io_err("read", &at)(e)),
                }
            }
            if present {
                self.walk(&self.root.join(w), &mut out)?;
            }
        }
        Ok(out)
    }

    fn walk(&self, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> Result<(), CheckpointError> {
        if dir == self.dir {
            return Ok(());
        }
        let entries = fs::read_dir(dir).map_err(io_err("read", dir))?;
        for entry in entries {
            let entry = entry.map_err(io_err("read", dir))?;
            let name = entry.file_name();
            if SKIPPED.iter().any(|s| name == *s) {
                continue;
            }
            let path = entry.path();
            let kind = entry.file_type().map_err(io_err("read", &path))?;
            if kind.is_dir() {
                self.walk(&path, out)?;
            } else if kind.is_file() {
                let rel = path
                    .strip_prefix(&self.root)
                    .unwrap_or(&path)
                    .to_str()
                    .ok_or_else(|| CheckpointError::NotUtf8(path.clone()))?
                    .to_owned();
                out.insert(rel, path);
            }
            // Links and special files are not artifacts.
        }
        Ok(())
    }

    /// Moves `rel` (a file, link or folder) into the archive at the same relative path.
    fn move_aside(&self, rel: &str, archive: &Path) -> Result<(), CheckpointError> {
        let from = self.root.join(rel);
        let to = archive.join(rel);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(io_err("create", parent))?;
        }
        match fs::rename(&from, &to) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
                // Another file system: copy, flush, then remove the original.
                let meta = fs::symlink_metadata(&from).map_err(io_err("read", &from))?;
                #[cfg(unix)]
                if meta.file_type().is_symlink() {
                    let target = fs::read_link(&from).map_err(io_err("read", &from))?;
                    std::os::unix::fs::symlink(target, &to).map_err(io_err("write", &to))?;
                    return fs::remove_file(&from).map_err(io_err("remove", &from));
                }
                if meta.is_file() {
                    copy_hashed(&from, &to, true)?;
                } else {
                    return Err(io_err("move", &from)(e));
                }
                fs::remove_file(&from).map_err(io_err("remove", &from))
            }
            Err(e) => Err(io_err("move", &from)(e)),
        }
    }

    /// Removes the folders that moving `moved` aside left empty, up to the watched directory.
    fn remove_emptied(&self, moved: &[String]) {
        let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
        for rel in moved {
            let mut p = Path::new(rel).parent();
            while let Some(d) = p {
                if self.watched.iter().any(|w| w.starts_with(d)) || d.as_os_str().is_empty() {
                    break;
                }
                dirs.insert(d.to_path_buf());
                p = d.parent();
            }
        }
        // Deepest first; a folder that still holds something stays.
        for d in dirs.iter().rev() {
            let _ = fs::remove_dir(self.root.join(d));
        }
    }

    /// Makes room for the file `rel`: each folder on its way is created, and a link, file or
    /// folder standing where a folder or the file goes is moved into the archive.
    fn clear_way(
        &self,
        rel: &str,
        archive: &Path,
        archived: &mut Vec<String>,
    ) -> Result<(), CheckpointError> {
        let path = Path::new(rel);
        let mut at = PathBuf::new();
        let count = path.components().count();
        for (i, c) in path.components().enumerate() {
            at.push(c);
            let last = i + 1 == count;
            let abs = self.root.join(&at);
            let in_way = match fs::symlink_metadata(&abs) {
                Ok(m) if m.file_type().is_symlink() => true,
                Ok(m) if last => !m.is_file(),
                Ok(m) => !m.is_dir(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if !last {
                        fs::create_dir(&abs).map_err(io_err("create", &abs))?;
                    }
                    continue;
                }
                Err(e) => return Err(io_err("read", &abs)(e)),
            };
            if in_way {
                let text = at.to_string_lossy().into_owned();
                self.move_aside(&text, archive)?;
                archived.push(text);
                if !last {
                    fs::create_dir(&abs).map_err(io_err("create", &abs))?;
                }
            }
        }
        Ok(())
    }

    /// Removes what a take cut short left behind (under the lock).
    fn sweep_leftovers(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".tmp-") || name.starts_with(".old-") {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
}

/// `text` as a plain relative path: not empty, not absolute, only normal components.
fn plain_relative(text: &str) -> Result<PathBuf, String> {
    if text.is_empty() {
        return Err("the path is empty".into());
    }
    if text.contains('\0') {
        return Err("the path holds a NUL byte".into());
    }
    let path = Path::new(text);
    if path.is_absolute() {
        return Err("paths are relative to the project, never absolute".into());
    }
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => return Err("`..` would leave the project".into()),
            Component::RootDir | Component::Prefix(_) => {
                return Err("paths are relative to the project, never absolute".into());
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err("the path names no file".into());
    }
    Ok(out)
}

/// Removes a folder and everything in it; a missing one is fine.
fn remove_tree(path: &Path) -> Result<(), CheckpointError> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("remove", path)(e)),
    }
}

fn hex(digest: &[u8]) -> String {
    let mut s = String::with_capacity(digest.len() * 2);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The SHA-256 (hex) and size of a file.
fn hash_file(path: &Path) -> Result<(String, u64), CheckpointError> {
    let mut file = fs::File::open(path).map_err(io_err("read", path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(io_err("read", path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((hex(&hasher.finalize()), size))
}

/// Copies `from` to `to` (created or truncated), hashing what is written; flushes it when
/// `sync`. Returns the SHA-256 (hex) and size of the copy.
fn copy_hashed(from: &Path, to: &Path, sync: bool) -> Result<(String, u64), CheckpointError> {
    let mut src = fs::File::open(from).map_err(io_err("read", from))?;
    let mut dst = fs::File::create(to).map_err(io_err("write", to))?;
    // The copy keeps the original's mode (a restored script stays executable).
    let mode = src.metadata().map_err(io_err("read", from))?.permissions();
    dst.set_permissions(mode).map_err(io_err("write", to))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = src.read(&mut buf).map_err(io_err("read", from))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        dst.write_all(&buf[..n]).map_err(io_err("write", to))?;
        size += n as u64;
    }
    if sync {
        dst.sync_all().map_err(io_err("write", to))?;
    }
    Ok((hex(&hasher.finalize()), size))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Project {
        _dir: tempfile::TempDir,
        root: PathBuf,
        cps: Checkpoints,
    }

    fn project() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let cps = Checkpoints::new(
            &root,
            Path::new(".baton/bmad/s1/checkpoints"),
            &[PathBuf::from("_bmad-output")],
        )
        .unwrap();
        Project {
            _dir: dir,
            root,
            cps,
        }
    }

    impl Project {
        fn write(&self, rel: &str, text: &str) {
            let p = self.root.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        fn read(&self, rel: &str) -> Option<String> {
            fs::read_to_string(self.root.join(rel)).ok()
        }
        /// Every regular file under `rel`, with its content.
        fn tree(&self, rel: &str) -> BTreeMap<String, String> {
            fn go(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
                let Ok(entries) = fs::read_dir(dir) else {
                    return;
                };
                for e in entries.flatten() {
                    let p = e.path();
                    let t = e.file_type().unwrap();
                    if t.is_dir() {
                        go(base, &p, out);
                    } else if t.is_file() {
                        let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                        out.insert(rel, fs::read_to_string(&p).unwrap());
                    }
                }
            }
            let mut out = BTreeMap::new();
            go(&self.root, &self.root.join(rel), &mut out);
            out
        }
    }

    #[test]
    fn restore_brings_back_a_step_and_archives_what_came_after() {
        let p = project();
        p.write("_bmad-output/prd.md", "prd v1");
        p.write("_bmad-output/planning/arch.md", "arch v1");
        p.write("_bmad-output/.archive/old.md", "kept out");
        p.write("_bmad-output/.memory-queue/q.json", "kept out");
        let m1 = p.cps.take(1).unwrap();
        let listed: Vec<&str> = m1.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            listed,
            ["_bmad-output/planning/arch.md", "_bmad-output/prd.md"]
        );
        assert_eq!(m1.files[1].size, 6);
        let step1 = p.tree("_bmad-output");

        p.write("_bmad-output/prd.md", "prd v2");
        p.write("_bmad-output/epics/epic-1.md", "epic 1");
        p.cps.take(2).unwrap();
        p.write("_bmad-output/prd.md", "prd v3");
        p.write("_bmad-output/epics/epic-2.md", "epic 2");
        assert_eq!(p.cps.steps().unwrap(), [1, 2]);
        assert_eq!(p.cps.latest().unwrap(), Some(2));

        let r = p
            .cps
            .restore(
                1,
                Path::new("_bmad-output/.rollback-archive"),
                "20261126T120000Z",
            )
            .unwrap();
        assert_eq!(p.tree("_bmad-output"), {
            let mut want = step1.clone();
            // The archive holds what was moved aside.
            let a = "_bmad-output/.rollback-archive/20261126T120000Z/_bmad-output";
            want.insert(format!("{a}/prd.md"), "prd v3".into());
            want.insert(format!("{a}/epics/epic-1.md"), "epic 1".into());
            want.insert(format!("{a}/epics/epic-2.md"), "epic 2".into());
            want
        });
        assert_eq!(r.restored, ["_bmad-output/prd.md"]);
        assert_eq!(
            r.archived,
            [
                "_bmad-output/epics/epic-1.md",
                "_bmad-output/epics/epic-2.md",
                "_bmad-output/prd.md"
            ]
        );
        // The folder that only held later files is gone; the checkpoints are untouched.
        assert!(!p.root.join("_bmad-output/epics").exists());
        assert_eq!(p.cps.steps().unwrap(), [1, 2]);
        // Restoring again finds nothing to do and needs no new archive.
        let again = p
            .cps
            .restore(
                1,
                Path::new("_bmad-output/.rollback-archive"),
                "20261126T120000Z",
            )
            .unwrap();
        assert_eq!(again, Restored::default());
        // And step 2 comes back too.
        let r2 = p.cps.restore(2, Path::new(".baton/archive"), "b").unwrap();
        assert_eq!(
            r2.restored,
            ["_bmad-output/epics/epic-1.md", "_bmad-output/prd.md"]
        );
        assert_eq!(p.read("_bmad-output/prd.md").as_deref(), Some("prd v2"));
        assert_eq!(
            p.read(".baton/archive/b/_bmad-output/prd.md").as_deref(),
            Some("prd v1")
        );
    }

    #[test]
    fn a_tampered_manifest_path_is_refused_and_nothing_changes() {
        for bad in [
            "../x",
            "/etc/passwd",
            "_bmad-output/../../x",
            "src/main.rs",
            "_bmad-output/.archive/x",
        ] {
            let p = project();
            p.write("_bmad-output/prd.md", "v1");
            p.cps.take(1).unwrap();
            p.write("_bmad-output/prd.md", "v2");
            let path = p.cps.manifest_path(1);
            let text = fs::read_to_string(&path).unwrap();
            fs::write(&path, text.replace("_bmad-output/prd.md", bad)).unwrap();
            let e = p
                .cps
                .restore(1, Path::new(".baton/archive"), "s")
                .unwrap_err();
            assert!(matches!(e, CheckpointError::Outside { .. }), "{bad}: {e:?}");
            assert!(e.to_string().contains(bad), "{e}");
            assert_eq!(p.read("_bmad-output/prd.md").as_deref(), Some("v2"));
            assert!(!p.root.join(".baton/archive").exists());
        }
    }

    #[test]
    fn a_corrupted_copy_is_refused_and_nothing_changes() {
        let p = project();
        p.write("_bmad-output/a.md", "a1");
        p.write("_bmad-output/b.md", "b1");
        p.cps.take(1).unwrap();
        p.write("_bmad-output/a.md", "a2");
        p.write("_bmad-output/c.md", "c2");
        // The second file's copy is damaged: the first must not be restored either.
        fs::write(p.cps.dir().join("1/files/_bmad-output/b.md"), "bX").unwrap();
        let before = p.tree("");
        let e = p
            .cps
            .restore(1, Path::new(".baton/archive"), "s")
            .unwrap_err();
        match &e {
            CheckpointError::Corrupt { step: 1, path, .. } => assert_eq!(path, "_bmad-output/b.md"),
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("nothing was changed"), "{e}");
        assert_eq!(p.tree(""), before);
        // A missing copy likewise.
        fs::remove_file(p.cps.dir().join("1/files/_bmad-output/b.md")).unwrap();
        let before = p.tree("");
        let e = p
            .cps
            .restore(1, Path::new(".baton/archive"), "s")
            .unwrap_err();
        assert!(matches!(e, CheckpointError::Corrupt { .. }), "{e:?}");
        assert_eq!(p.tree(""), before);
    }

    #[test]
    fn an_unknown_step_lists_those_that_exist() {
        let p = project();
        let e = p
            .cps
            .restore(3, Path::new(".baton/archive"), "s")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "there is no checkpoint of step 3; no checkpoint has been taken"
        );
        p.write("_bmad-output/a.md", "a");
        p.cps.take(1).unwrap();
        p.cps.take(4).unwrap();
        let e = p
            .cps
            .restore(3, Path::new(".baton/archive"), "s")
            .unwrap_err();
        assert!(
            matches!(&e, CheckpointError::UnknownStep { step: 3, available } if available == &[1, 4])
        );
        assert_eq!(
            e.to_string(),
            "there is no checkpoint of step 3; checkpoints exist for steps 1, 4"
        );
    }

    #[test]
    fn a_checkpoint_cut_short_is_not_listed_and_taking_a_step_again_replaces_it() {
        let p = project();
        p.write("_bmad-output/a.md", "one");
        p.cps.take(1).unwrap();
        // A take killed before its rename leaves only a temp folder; a step folder without its
        // manifest is not a checkpoint either.
        fs::create_dir_all(p.cps.dir().join(".tmp-2-999/files")).unwrap();
        fs::create_dir_all(p.cps.dir().join("3/files")).unwrap();
        fs::create_dir_all(p.cps.dir().join("007")).unwrap();
        fs::write(p.cps.dir().join("007/manifest.json"), "{}").unwrap();
        assert_eq!(p.cps.steps().unwrap(), [1]);

        p.write("_bmad-output/a.md", "two");
        p.write("_bmad-output/b.md", "new");
        let m = p.cps.take(1).unwrap();
        assert_eq!(m.files.len(), 2);
        assert_eq!(p.cps.manifest(1).unwrap(), m);
        assert_eq!(
            fs::read_to_string(p.cps.dir().join("1/files/_bmad-output/a.md")).unwrap(),
            "two"
        );
        // The leftover is swept by the next take.
        assert!(!p.cps.dir().join(".tmp-2-999").exists());
    }

    #[test]
    fn links_are_never_followed_nor_copied() {
        let p = project();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s3cret").unwrap();
        p.write("_bmad-output/a.md", "a");
        std::os::unix::fs::symlink(outside.path(), p.root.join("_bmad-output/linked-dir")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            p.root.join("_bmad-output/s.md"),
        )
        .unwrap();
        let m = p.cps.take(1).unwrap();
        assert_eq!(m.files.len(), 1, "{m:?}");
        assert_eq!(m.files[0].path, "_bmad-output/a.md");

        // A manifest naming a file under a link in the project: the link is moved aside, and
        // nothing is written through it.
        let p2 = project();
        p2.write("_bmad-output/d/x.md", "x1");
        p2.cps.take(1).unwrap();
        fs::remove_dir_all(p2.root.join("_bmad-output/d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), p2.root.join("_bmad-output/d")).unwrap();
        let r = p2.cps.restore(1, Path::new(".baton/archive"), "s").unwrap();
        assert_eq!(r.restored, ["_bmad-output/d/x.md"]);
        assert_eq!(r.archived, ["_bmad-output/d"]);
        assert!(!outside.path().join("x.md").exists());
        assert_eq!(p2.read("_bmad-output/d/x.md").as_deref(), Some("x1"));
        assert!(
            fs::symlink_metadata(p2.root.join(".baton/archive/s/_bmad-output/d"))
                .unwrap()
                .file_type()
                .is_symlink()
        );

        // A watched directory that is itself a link is refused.
        let p3 = project();
        std::os::unix::fs::symlink(outside.path(), p3.root.join("_bmad-output")).unwrap();
        let e = p3.cps.take(1).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
    }

    #[test]
    fn watched_paths_and_stamps_and_archives_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["../out", "/abs", ""] {
            assert!(
                Checkpoints::new(dir.path(), Path::new("c"), &[PathBuf::from(bad)]).is_err(),
                "{bad}"
            );
        }
        let p = project();
        p.write("_bmad-output/a.md", "a");
        p.cps.take(1).unwrap();
        p.write("_bmad-output/a.md", "b");
        for stamp in ["", "a/b", "..", "."] {
            assert!(matches!(
                p.cps.restore(1, Path::new("arch"), stamp),
                Err(CheckpointError::BadStamp(_))
            ));
        }
        // An archive among the artifacts would be checkpointed and restored itself.
        let e = p
            .cps
            .restore(1, Path::new("_bmad-output/old"), "s")
            .unwrap_err();
        assert!(matches!(e, CheckpointError::Outside { .. }), "{e:?}");
        // An archive that exists already is never written into.
        fs::create_dir_all(p.root.join("arch/s")).unwrap();
        let e = p.cps.restore(1, Path::new("arch"), "s").unwrap_err();
        assert!(matches!(e, CheckpointError::ArchiveExists(_)), "{e:?}");
        assert_eq!(p.read("_bmad-output/a.md").as_deref(), Some("b"));
    }

    #[test]
    fn prune_keeps_the_most_recent() {
        let p = project();
        p.write("_bmad-output/a.md", "a");
        for step in 1..=12 {
            p.cps.take(step).unwrap();
        }
        assert_eq!(p.cps.prune(10).unwrap(), [1, 2]);
        assert_eq!(p.cps.steps().unwrap(), (3..=12).collect::<Vec<_>>());
        assert!(!p.cps.dir().join("1").exists());
    }
}
