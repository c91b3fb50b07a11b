//! The OS file lock that makes baton processes take turns on one sprint file.
//!
//! The sprint file itself is replaced by rename on every write, so locking it would lock a file
//! that no longer exists after the first write. baton locks a sidecar file under `.baton/`
//! instead, for the whole read-modify-write; the lock is released when the guard drops (or the
//! process dies, which the OS handles).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// An error taking the lock.
#[derive(Debug, thiserror::Error)]
#[error("cannot lock `{path}`: {source}")]
pub struct LockError {
    /// The lock file.
    pub path: PathBuf,
    /// The IO error.
    #[source]
    pub source: io::Error,
}

/// A held exclusive lock.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

impl FileLock {
    /// Blocks until the exclusive lock on `path` (created if missing) is held.
    pub fn acquire(path: &Path) -> Result<FileLock, LockError> {
        let err = |source| LockError {
            path: path.to_path_buf(),
            source,
        };
        let open = || {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(path)
        };
        // The directory exists on every call but the first: try the open before creating it.
        let file = match open() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(dir) = path.parent() {
                    fs::create_dir_all(dir).map_err(err)?;
                }
                open().map_err(err)?
            }
            other => other.map_err(err)?,
        };
        file.lock().map_err(err)?;
        Ok(FileLock { file })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first makes it prompt.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn excludes_other_holders() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/sprint.lock");
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (path, inside) = (path.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let _g = FileLock::acquire(&path).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
