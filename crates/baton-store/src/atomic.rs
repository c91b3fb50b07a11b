//! Atomic file replacement.
//!
//! A file is replaced by writing a temporary file in the same directory, flushing it to disk,
//! and renaming it over the target, so a reader (or a crash) sees either the old bytes or the new
//! ones, never a mixture. The target's permissions are kept and a symlinked target is replaced at
//! its real location. The directory itself is flushed by [`sync_dir`], which callers run once per
//! batch of writes: the journal is the redo log for a rename lost to a power cut.
//!
//! Removing the replaced file is nobody's wait: [`replace_if_with`] hands it to a [`Reaper`],
//! whose thread unlinks it after the caller has moved on (freeing a file's blocks costs a
//! journaled file system about as much as a flush). A process killed before that leaves the old
//! version under a temp name, which [`remove_stale_temps`] sweeps like any other.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::thread::JoinHandle;
use tempfile::TempPath;

/// An error replacing a file, naming it.
#[derive(Debug, thiserror::Error)]
#[error("cannot write `{path}`: {source}")]
pub struct WriteError {
    /// The file being written.
    pub path: PathBuf,
    /// The IO error.
    #[source]
    pub source: io::Error,
}

fn err(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
    move |source| WriteError {
        path: path.to_path_buf(),
        source,
    }
}

/// Resolves symlinks on the target so the link itself survives the rename. Only a link in the
/// last component matters (the temp file goes beside the target, wherever its directory really
/// is), so a path whose last component is not a link is returned as it is, for one `lstat`
/// instead of one `readlink` per component.
pub fn real_target(path: &Path) -> PathBuf {
    match fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_symlink() => path.to_path_buf(),
        _ => fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
    }
}

/// Replaces `path` with `bytes`: temp file in the same directory, `fsync`, rename.
/// Returns the metadata of the new file.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<fs::Metadata, WriteError> {
    replace_with(path, bytes, true)
}

/// Replaces `path` with `bytes` atomically (temp file, rename) without flushing it: readers and a
/// killed process see the old or the new content, never a mix, but a power cut may lose it. For
/// files that mirror durable state (a story's `Status:` line) or that the next commit records.
pub fn replace_unsynced(path: &Path, bytes: &[u8]) -> Result<fs::Metadata, WriteError> {
    replace_with(path, bytes, false)
}

fn replace_with(path: &Path, bytes: &[u8], sync: bool) -> Result<fs::Metadata, WriteError> {
    let target = real_target(path);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(&target))
        .tempfile_in(&dir)
        .map_err(err(&target))?;
    if let Ok(meta) = fs::metadata(&target) {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .map_err(err(&target))?;
    }
    tmp.write_all(bytes).map_err(err(&target))?;
    if sync {
        tmp.as_file().sync_data().map_err(err(&target))?;
    }
    let file = tmp.persist(&target).map_err(|e| err(&target)(e.error))?;
    file.metadata().map_err(err(&target))
}

/// Replaces `path` with `bytes` like [`replace`], but only if `unchanged` accepts the metadata
/// of the file that is being replaced, both before the temp file is written and when it is
/// swapped in. Returns `None`, leaving the file as it was, when it does not (or when the file is
/// gone). `unchanged` is told whether the file was already moved aside by baton (its ctime then
/// changed with the move, so only the other fields can be compared).
///
/// On Linux the new file is swapped in with `renameat2(RENAME_EXCHANGE)`, which moves the file it
/// replaces to the temp file's name in the same step; that file is then checked, and if it is not
/// the expected one it is swapped straight back. So a save made at any time before the swap is
/// never lost; what remains is that a reader looking in the microseconds between the two swaps
/// sees baton's version. Where the exchange is not available (other systems, some file systems)
/// the file is checked once more right after the flush and before the rename, and a save landing
/// in between is overwritten.
///
/// The file left under the temp name is removed before this returns; [`replace_if_with`] leaves
/// that to a [`Reaper`].
pub fn replace_if(
    path: &Path,
    bytes: &[u8],
    unchanged: impl Fn(&fs::Metadata, bool) -> bool,
) -> Result<Option<fs::Metadata>, WriteError> {
    replace_if_inner(path, bytes, unchanged, None)
}

/// [`replace_if`], with the file left under the temp name after the swap (the replaced version,
/// or baton's own after a swap back) handed to `reaper` instead of removed before returning.
pub fn replace_if_with(
    path: &Path,
    bytes: &[u8],
    unchanged: impl Fn(&fs::Metadata, bool) -> bool,
    reaper: &Reaper,
) -> Result<Option<fs::Metadata>, WriteError> {
    replace_if_inner(path, bytes, unchanged, Some(reaper))
}

fn replace_if_inner(
    path: &Path,
    bytes: &[u8],
    unchanged: impl Fn(&fs::Metadata, bool) -> bool,
    reaper: Option<&Reaper>,
) -> Result<Option<fs::Metadata>, WriteError> {
    let target = real_target(path);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // A first look before anything is written: a file already changed (or gone) is a conflict
    // that costs no temp file.
    let current = match fs::metadata(&target) {
        Ok(meta) if unchanged(&meta, false) => meta,
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(&target)(e)),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(&target))
        .tempfile_in(&dir)
        .map_err(err(&target))?;
    tmp.as_file()
        .set_permissions(current.permissions())
        .map_err(err(&target))?;
    tmp.write_all(bytes).map_err(err(&target))?;
    tmp.as_file().sync_data().map_err(err(&target))?;
    #[cfg(target_os = "linux")]
    if let Some(done) = exchange_if(&tmp, &target, &unchanged)? {
        // Whatever is under the temp name now is not needed: removed here, or by the reaper.
        match reaper {
            Some(r) => r.remove(tmp.into_temp_path()),
            None => drop(tmp),
        }
        return Ok(done);
    }
    // The flush is done: look again, as late as possible, then rename.
    let now = fs::metadata(&target).map_err(err(&target))?;
    if !unchanged(&now, false) {
        return Ok(None);
    }
    let file = tmp.persist(&target).map_err(|e| err(&target)(e.error))?;
    file.metadata().map(Some).map_err(err(&target))
}

/// The exchange protocol of [`replace_if`]; `Ok(None)` when the file system cannot exchange.
/// Whatever ends up under `tmp`'s name is for the caller to remove.
#[cfg(target_os = "linux")]
fn exchange_if(
    tmp: &tempfile::NamedTempFile,
    target: &Path,
    unchanged: &impl Fn(&fs::Metadata, bool) -> bool,
) -> Result<Option<Option<fs::Metadata>>, WriteError> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use std::os::unix::fs::MetadataExt;
    let swap = || renameat_with(CWD, tmp.path(), CWD, target, RenameFlags::EXCHANGE);
    match swap() {
        Ok(()) => {}
        Err(e)
            if e == rustix::io::Errno::INVAL
                || e == rustix::io::Errno::NOSYS
                || e == rustix::io::Errno::OPNOTSUPP =>
        {
            return Ok(None);
        }
        Err(e) => return Err(err(target)(e.into())),
    }
    let mine = tmp.as_file().metadata().map_err(err(target))?;
    let replaced = fs::symlink_metadata(tmp.path()).map_err(err(target))?;
    if unchanged(&replaced, true) {
        return Ok(Some(Some(mine)));
    }
    // Not the version that was read: put it back.
    swap().map_err(|e| err(target)(e.into()))?;
    // If yet another save replaced baton's version in between, that save is now under the temp
    // name: swap once more so the newest save is the one in place.
    let back = fs::symlink_metadata(tmp.path()).map_err(err(target))?;
    if back.ino() != mine.ino() || back.dev() != mine.dev() {
        swap().map_err(|e| err(target)(e.into()))?;
    }
    Ok(Some(None))
}

/// Removes files on a thread of its own, so that the writer that replaced them does not wait for
/// their blocks to be freed. The thread starts on first use; dropping the reaper (or
/// [`Reaper::wait`]) waits for every file handed to it, so a process that ends normally leaves
/// none behind, and one that is killed leaves temp files that [`remove_stale_temps`] sweeps.
#[derive(Debug, Default)]
pub struct Reaper {
    worker: OnceLock<Option<Worker>>,
    /// Files are kept, not removed, until [`Reaper::wait`] (tests: to see what a killed process
    /// would leave).
    #[cfg(test)]
    held: Option<std::sync::Mutex<Vec<TempPath>>>,
}

#[derive(Debug)]
struct Worker {
    tx: mpsc::Sender<TempPath>,
    handle: JoinHandle<()>,
}

impl Reaper {
    /// A reaper; its thread starts with the first file.
    pub fn new() -> Reaper {
        Reaper::default()
    }

    /// A reaper that keeps the files it is given until [`Reaper::wait`] or
    /// [`Reaper::forget`].
    #[cfg(test)]
    pub(crate) fn holding() -> Reaper {
        Reaper {
            worker: OnceLock::new(),
            held: Some(std::sync::Mutex::new(Vec::new())),
        }
    }

    /// Leaves every held file where it is, as a killed process would.
    #[cfg(test)]
    pub(crate) fn forget(&mut self) {
        if let Some(held) = &self.held
            && let Ok(mut v) = held.lock()
        {
            for p in v.drain(..) {
                let _ = p.keep();
            }
        }
    }

    /// Removes `path` on the reaper's thread (or here, if the thread cannot be started).
    pub fn remove(&self, path: TempPath) {
        #[cfg(test)]
        if let Some(held) = &self.held {
            if let Ok(mut v) = held.lock() {
                v.push(path);
            }
            return;
        }
        let worker = self.worker.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<TempPath>();
            std::thread::Builder::new()
                .name("baton-reaper".into())
                .spawn(move || {
                    // Dropping a `TempPath` unlinks it.
                    for path in rx {
                        drop(path);
                    }
                })
                .ok()
                .map(|handle| Worker { tx, handle })
        });
        // Without a thread (it could not be started), the file is removed here.
        match worker {
            Some(w) => {
                if let Err(mpsc::SendError(path)) = w.tx.send(path) {
                    drop(path);
                }
            }
            None => drop(path),
        }
    }

    /// Waits until every file handed to the reaper is removed.
    pub fn wait(&mut self) {
        #[cfg(test)]
        if let Some(held) = &self.held
            && let Ok(mut v) = held.lock()
        {
            v.clear();
        }
        if let Some(Some(Worker { tx, handle })) = self.worker.take() {
            drop(tx);
            let _ = handle.join();
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.wait();
    }
}

/// The prefix of `path`'s temporary files: `.<name>.baton-tmp-`, so the ones a killed writer
/// left behind can be found and removed by the next writer of the same file.
fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.baton-tmp-")
}

/// Removes temporary files a killed writer of `path` left behind. Call it only while holding
/// the lock that serialises writers of `path`. Returns how many were removed.
pub fn remove_stale_temps(path: &Path) -> usize {
    let target = real_target(path);
    let (Some(dir), prefix) = (target.parent(), temp_prefix(&target)) else {
        return 0;
    };
    let Ok(entries) = fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| fs::remove_file(e.path()).is_ok())
        .count()
}

/// Replaces `path` and flushes its directory too: the full protocol for one-off writes.
pub fn replace_durable(path: &Path, bytes: &[u8]) -> Result<fs::Metadata, WriteError> {
    let meta = replace(path, bytes)?;
    sync_dir(path)?;
    Ok(meta)
}

/// Flushes the directory holding `path`, making earlier renames in it durable.
pub fn sync_dir(path: &Path) -> Result<(), WriteError> {
    let target = real_target(path);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(err(&dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_keeps_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.yaml");
        fs::write(&p, "old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        replace_durable(&p, b"new").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file left behind");
    }

    #[test]
    fn stale_temps_of_the_same_file_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.yaml");
        fs::write(&p, "x").unwrap();
        fs::write(dir.path().join(".s.yaml.baton-tmp-abc"), "partial").unwrap();
        fs::write(dir.path().join(".other.md.baton-tmp-abc"), "partial").unwrap();
        assert_eq!(remove_stale_temps(&p), 1);
        assert!(dir.path().join(".other.md.baton-tmp-abc").exists());
    }

    /// The identity `replace_if` callers compare (`moved`: ctime is not comparable).
    fn same(a: &fs::Metadata, b: &fs::Metadata, moved: bool) -> bool {
        use std::os::unix::fs::MetadataExt;
        a.ino() == b.ino()
            && a.len() == b.len()
            && a.mtime_nsec() == b.mtime_nsec()
            && a.mtime() == b.mtime()
            && (moved || a.ctime_nsec() == b.ctime_nsec())
    }

    #[test]
    fn replace_if_writes_over_the_expected_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.yaml");
        fs::write(&p, "read").unwrap();
        let read = fs::metadata(&p).unwrap();
        let written = replace_if(&p, b"mine", |m, moved| same(m, &read, moved)).unwrap();
        assert!(written.is_some());
        assert_eq!(fs::read_to_string(&p).unwrap(), "mine");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temp left");

        // Replaced by rename since it was read (an editor's save): left alone.
        let read = fs::metadata(&p).unwrap();
        let other = dir.path().join("editor-copy");
        fs::write(&other, "hand edit").unwrap();
        fs::rename(&other, &p).unwrap();
        let written = replace_if(&p, b"stale", |m, moved| same(m, &read, moved)).unwrap();
        assert!(written.is_none());
        assert_eq!(fs::read_to_string(&p).unwrap(), "hand edit");

        // Rewritten in place since it was read: left alone too.
        let read = fs::metadata(&p).unwrap();
        fs::write(&p, "hand edit, in place").unwrap();
        let written = replace_if(&p, b"stale", |m, moved| same(m, &read, moved)).unwrap();
        assert!(written.is_none());
        assert_eq!(fs::read_to_string(&p).unwrap(), "hand edit, in place");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temp left");
    }

    fn temps(dir: &Path) -> Vec<PathBuf> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".baton-tmp-"))
            .collect()
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_replaced_file_is_left_to_the_reaper() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.yaml");
        fs::write(&p, "old").unwrap();
        let read = fs::metadata(&p).unwrap();
        let mut reaper = Reaper::holding();
        let written = replace_if_with(&p, b"new", |m, moved| same(m, &read, moved), &reaper);
        assert!(written.unwrap().is_some());
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        // The replaced version is still there when the write returns: nobody waited for it.
        let left = temps(dir.path());
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(fs::read_to_string(&left[0]).unwrap(), "old");
        reaper.wait();
        assert!(temps(dir.path()).is_empty());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_kill_before_the_reaper_leaves_a_temp_the_next_writer_sweeps() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.yaml");
        fs::write(&p, "old").unwrap();
        let read = fs::metadata(&p).unwrap();
        let mut reaper = Reaper::holding();
        replace_if_with(&p, b"new", |m, moved| same(m, &read, moved), &reaper).unwrap();
        reaper.forget();
        drop(reaper);
        assert_eq!(temps(dir.path()).len(), 1);
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(remove_stale_temps(&p), 1);
        assert!(temps(dir.path()).is_empty());
    }

    #[test]
    fn a_reaper_removes_what_it_is_given_by_the_time_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.yaml");
        fs::write(&p, "0").unwrap();
        let reaper = Reaper::new();
        for i in 1..=20 {
            let read = fs::metadata(&p).unwrap();
            let text = i.to_string();
            let written = replace_if_with(
                &p,
                text.as_bytes(),
                |m, moved| same(m, &read, moved),
                &reaper,
            );
            assert!(written.unwrap().is_some());
        }
        // A write that finds the file changed hands nothing over and leaves nothing.
        let stale = fs::metadata(&p).unwrap();
        fs::write(&p, "hand edit").unwrap();
        let written = replace_if_with(&p, b"x", |m, moved| same(m, &stale, moved), &reaper);
        assert!(written.unwrap().is_none());
        drop(reaper);
        assert_eq!(fs::read_to_string(&p).unwrap(), "hand edit");
        assert!(temps(dir.path()).is_empty());
    }

    #[test]
    fn writes_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.yaml");
        let link = dir.path().join("link.yaml");
        fs::write(&real, "a").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        replace(&link, b"b").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "b");
    }
}
