//! The write queue of an external memory that is down: one JSON file per draft in a directory
//! (`_bmad-output/.memory-queue/`), named by a rising sequence number so that the oldest is sent
//! first. It holds at most [`MAX_QUEUED`] drafts; past that the oldest is dropped (FIFO overflow)
//! and the drop is reported. Each file is written to a temp name and renamed, so a killed writer
//! leaves either the whole draft or none.

use super::MemoryError;
use baton_core::memory::Draft;
use std::path::{Path, PathBuf};

/// The most drafts the queue holds.
pub const MAX_QUEUED: usize = 100;

/// The queue in `dir`.
#[derive(Debug, Clone)]
pub struct WriteQueue {
    dir: PathBuf,
    max: usize,
}

impl WriteQueue {
    /// The queue in `dir` (created on the first push), holding at most [`MAX_QUEUED`].
    pub fn new(dir: impl Into<PathBuf>) -> WriteQueue {
        WriteQueue {
            dir: dir.into(),
            max: MAX_QUEUED,
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn err(&self, source: std::io::Error) -> MemoryError {
        MemoryError::Queue {
            path: self.dir.clone(),
            source,
        }
    }

    /// The queued files, oldest first.
    fn files(&self) -> Result<Vec<(u64, PathBuf)>, MemoryError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.err(e)),
        };
        let mut files: Vec<(u64, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let seq = name.strip_suffix(".json")?.parse().ok()?;
                Some((seq, e.path()))
            })
            .collect();
        files.sort();
        Ok(files)
    }

    /// Creates the directory, with a `.gitignore` that keeps it out of the project's history
    /// (and out of the clean-tree check of a sprint).
    pub fn create(&self) -> Result<(), MemoryError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| self.err(e))?;
        let ignore = self.dir.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "*\n").map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// How many drafts wait.
    pub fn len(&self) -> Result<usize, MemoryError> {
        Ok(self.files()?.len())
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> Result<bool, MemoryError> {
        Ok(self.len()? == 0)
    }

    /// Queues `draft`; returns how many of the oldest were dropped to stay within the cap.
    pub fn push(&self, draft: &Draft) -> Result<usize, MemoryError> {
        self.create()?;
        let files = self.files()?;
        let seq = files.last().map_or(1, |(s, _)| s + 1);
        let json = serde_json::to_vec(draft).map_err(|e| self.err(std::io::Error::other(e)))?;
        let tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(|e| self.err(e))?;
        std::fs::write(tmp.path(), json).map_err(|e| self.err(e))?;
        tmp.persist(self.dir.join(format!("{seq:012}.json")))
            .map_err(|e| self.err(e.error))?;
        let over = (files.len() + 1).saturating_sub(self.max);
        for (_, path) in files.iter().take(over) {
            std::fs::remove_file(path).map_err(|e| self.err(e))?;
        }
        Ok(over)
    }

    /// The queued drafts, oldest first; a file that does not parse is skipped (and left).
    pub fn peek(&self) -> Result<Vec<(PathBuf, Draft)>, MemoryError> {
        Ok(self
            .files()?
            .into_iter()
            .filter_map(|(_, p)| {
                let text = std::fs::read(&p).ok()?;
                let draft = serde_json::from_slice(&text).ok()?;
                Some((p, draft))
            })
            .collect())
    }

    /// Sends the queued drafts in order with `send`, removing each one sent, and stops at the
    /// first that fails; returns how many were sent.
    pub fn drain(&self, mut send: impl FnMut(&Draft) -> bool) -> Result<usize, MemoryError> {
        let mut sent = 0;
        for (path, draft) in self.peek()? {
            if !send(&draft) {
                break;
            }
            std::fs::remove_file(&path).map_err(|e| self.err(e))?;
            sent += 1;
        }
        Ok(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::memory::{Kind, Source};

    fn draft(i: usize) -> Draft {
        Draft::new(Kind::Pattern, Source::HumanFeedback, format!("lesson {i}"))
    }

    #[test]
    fn the_queue_keeps_the_newest_hundred_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let q = WriteQueue::new(dir.path().join(".memory-queue"));
        assert!(q.is_empty().unwrap());
        let mut dropped = 0;
        for i in 1..=130 {
            dropped += q.push(&draft(i)).unwrap();
        }
        assert_eq!(dropped, 30);
        assert_eq!(
            std::fs::read_to_string(q.dir().join(".gitignore")).unwrap(),
            "*\n"
        );
        assert_eq!(q.len().unwrap(), MAX_QUEUED);
        let texts: Vec<String> = q.peek().unwrap().into_iter().map(|(_, d)| d.text).collect();
        assert_eq!(texts.first().map(String::as_str), Some("lesson 31"));
        assert_eq!(texts.last().map(String::as_str), Some("lesson 130"));
    }

    #[test]
    fn draining_stops_at_the_first_failure_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let q = WriteQueue::new(dir.path());
        for i in 1..=5 {
            q.push(&draft(i)).unwrap();
        }
        let mut seen = Vec::new();
        let sent = q
            .drain(|d| {
                seen.push(d.text.clone());
                seen.len() < 3
            })
            .unwrap();
        assert_eq!(sent, 2);
        assert_eq!(q.len().unwrap(), 3);
        assert_eq!(q.peek().unwrap()[0].1.text, "lesson 3");
    }
}
