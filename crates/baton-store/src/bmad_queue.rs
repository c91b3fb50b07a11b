//! The queue of BMad workflow tasks waiting for `baton bmad` (`.baton/bmad-queue.json`).
//!
//! A task is a skill to run, with its input, an optional tier and a priority. The queue runs High
//! before Normal before Low, and in the order tasks were added within a priority. It holds at
//! most [`CAP`] tasks: the 101st is refused (never a silent drop of someone's task), and the
//! message says how to make room. Ids are handed out from a counter kept in the file, so an id is
//! never reused, even after its task is gone.
//!
//! Several baton processes may change the queue at once. Every change takes the exclusive lock
//! on the sibling `.lock` file, reads the file again under it, and replaces the file atomically
//! and durably, so concurrent adds are all kept. A file that is not valid JSON (or of an unknown
//! version) is an error naming it, with the line and column, and is never written over.

use crate::atomic::{self, WriteError};
use crate::lock::{FileLock, LockError};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The most tasks the queue holds.
pub const CAP: usize = 100;

/// The file format's version.
pub const VERSION: u32 = 1;

/// How urgent a task is: the queue runs every High task before any Normal one, and every Normal
/// one before any Low one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Runs first.
    High,
    /// The default.
    #[default]
    Normal,
    /// Runs last.
    Low,
}

impl Priority {
    /// Its name as written: `high`, `normal` or `low`.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }

    /// Its place in the run order (0 runs first).
    fn rank(self) -> u8 {
        match self {
            Priority::High => 0,
            Priority::Normal => 1,
            Priority::Low => 2,
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A priority that is not `high`, `normal` or `low`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown priority `{0}`: expected high, normal or low")]
pub struct PriorityError(pub String);

impl FromStr for Priority {
    type Err = PriorityError;

    /// `high`, `normal` or `low`, in any case.
    fn from_str(s: &str) -> Result<Priority, PriorityError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "high" => Ok(Priority::High),
            "normal" => Ok(Priority::Normal),
            "low" => Ok(Priority::Low),
            _ => Err(PriorityError(s.to_owned())),
        }
    }
}

/// One waiting task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Its id: unique in this queue's whole history.
    pub id: u64,
    /// The BMad skill to run (e.g. `bmad-create-prd`).
    pub skill: String,
    /// What the skill is given to start with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The project tier (BMad level 0–4) to run it at, when not the project's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<u8>,
    /// How urgent it is.
    pub priority: Priority,
    /// When it was added (RFC 3339, as the caller's clock gave it).
    pub added_at: String,
}

/// The run order: priority, then the order of adding.
fn run_order(a: &Task, b: &Task) -> Ordering {
    (a.priority.rank(), a.id).cmp(&(b.priority.rank(), b.id))
}

/// What the file holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct File {
    version: u32,
    next_id: u64,
    tasks: Vec<Task>,
}

impl File {
    fn empty() -> File {
        File {
            version: VERSION,
            next_id: 1,
            tasks: Vec::new(),
        }
    }
}

/// An error reading or changing the queue.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The file could not be read.
    #[error("cannot read the BMad queue `{path}`: {source}")]
    Read {
        /// The queue file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The file is not a queue; it is left as it is.
    #[error(
        "the BMad queue `{path}` is not valid at line {line}, column {column}: {message} (fix or remove the file; baton does not write over it)"
    )]
    Malformed {
        /// The queue file.
        path: PathBuf,
        /// Its line (from 1).
        line: usize,
        /// Its column (from 1).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The file was written by another version of baton.
    #[error(
        "the BMad queue `{path}` is version {found}; this baton reads version {VERSION} only (upgrade baton, or remove the file)"
    )]
    Version {
        /// The queue file.
        path: PathBuf,
        /// The version the file says.
        found: u64,
    },
    /// The queue already holds [`CAP`] tasks.
    #[error(
        "the BMad queue holds {cap} tasks, its limit; remove one first with `baton bmad queue remove ID` (`baton bmad queue` lists them)"
    )]
    Full {
        /// The limit.
        cap: usize,
    },
    /// No task has this id.
    #[error("no task {id} in the BMad queue; {}", waiting_list(.waiting))]
    UnknownId {
        /// The id asked for.
        id: u64,
        /// The ids that are waiting, in run order.
        waiting: Vec<u64>,
    },
    /// A task that cannot be queued.
    #[error("cannot queue this task: {0}")]
    Invalid(String),
    /// The lock could not be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

fn waiting_list(ids: &[u64]) -> String {
    if ids.is_empty() {
        return "the queue is empty".to_owned();
    }
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!("waiting: {}", ids.join(", "))
}

/// The queue in one file. It shows the tasks as of the last time it read the file (on open and
/// after each change it makes); every change reads the file again under the lock first.
#[derive(Debug, Clone)]
pub struct Queue {
    path: PathBuf,
    state: File,
}

impl Queue {
    /// Opens the queue at `path` (a missing file is an empty queue; nothing is written until a
    /// change).
    pub fn open(path: &Path) -> Result<Queue, QueueError> {
        Ok(Queue {
            path: path.to_path_buf(),
            state: read(path)?,
        })
    }

    /// The queue file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The waiting tasks in run order.
    pub fn list(&self) -> Vec<Task> {
        let mut tasks = self.state.tasks.clone();
        tasks.sort_by(run_order);
        tasks
    }

    /// How many tasks wait.
    pub fn len(&self) -> usize {
        self.state.tasks.len()
    }

    /// Whether no task waits.
    pub fn is_empty(&self) -> bool {
        self.state.tasks.is_empty()
    }

    /// Adds a task; `now` (RFC 3339) is recorded as when. Refused with [`QueueError::Full`] when
    /// [`CAP`] tasks already wait, and with [`QueueError::Invalid`] for an empty skill name or a
    /// tier above 4.
    pub fn add(
        &mut self,
        skill: &str,
        input: Option<&str>,
        tier: Option<u8>,
        priority: Priority,
        now: &str,
    ) -> Result<Task, QueueError> {
        let skill = skill.trim();
        if skill.is_empty() || skill.chars().any(char::is_control) {
            return Err(QueueError::Invalid(format!(
                "the skill name `{skill}` is empty or holds control characters"
            )));
        }
        if let Some(t) = tier
            && t > 4
        {
            return Err(QueueError::Invalid(format!(
                "tier {t} is not a BMad level (0 to 4)"
            )));
        }
        self.change(|file| {
            if file.tasks.len() >= CAP {
                return Err(QueueError::Full { cap: CAP });
            }
            // The counter never goes below an id in the file, even one written by hand.
            let id = file
                .tasks
                .iter()
                .map(|t| t.id + 1)
                .max()
                .unwrap_or(1)
                .max(file.next_id);
            let task = Task {
                id,
                skill: skill.to_owned(),
                input: input.map(str::to_owned),
                tier,
                priority,
                added_at: now.to_owned(),
            };
            file.next_id = id + 1;
            file.tasks.push(task.clone());
            Ok((task, true))
        })
    }

    /// Removes the task with `id` (a cancellation); the others keep their order.
    pub fn remove(&mut self, id: u64) -> Result<Task, QueueError> {
        self.change(|file| {
            let Some(at) = file.tasks.iter().position(|t| t.id == id) else {
                let mut tasks = file.tasks.clone();
                tasks.sort_by(run_order);
                return Err(QueueError::UnknownId {
                    id,
                    waiting: tasks.iter().map(|t| t.id).collect(),
                });
            };
            Ok((file.tasks.remove(at), true))
        })
    }

    /// Removes and returns the task that runs next, `None` when none waits (then nothing is
    /// written).
    pub fn pop_next(&mut self) -> Result<Option<Task>, QueueError> {
        self.change(|file| {
            let next = file
                .tasks
                .iter()
                .enumerate()
                .min_by(|(_, a), (_, b)| run_order(a, b))
                .map(|(at, _)| at);
            let task = next.map(|at| file.tasks.remove(at));
            let changed = task.is_some();
            Ok((task, changed))
        })
    }

    /// The read-modify-write under the lock: `apply` changes the file's content and returns
    /// what the caller gets, and whether it changed anything (if not, nothing is written).
    fn change<T>(
        &mut self,
        apply: impl FnOnce(&mut File) -> Result<(T, bool), QueueError>,
    ) -> Result<T, QueueError> {
        let _lock = FileLock::acquire(&lock_path(&self.path))?;
        let mut file = read(&self.path)?;
        // What others wrote is seen from now on, whatever `apply` decides.
        self.state = file.clone();
        let (value, changed) = apply(&mut file)?;
        if !changed {
            return Ok(value);
        }
        let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| WriteError {
            path: self.path.clone(),
            source: io::Error::other(e),
        })?;
        bytes.push(b'\n');
        if let Some(dir) = self.path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|source| WriteError {
                path: self.path.clone(),
                source,
            })?;
        }
        atomic::replace_durable(&self.path, &bytes)?;
        self.state = file;
        Ok(value)
    }
}

/// The lock beside the queue file: `bmad-queue.json.lock`.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".lock");
    path.with_file_name(name)
}

fn read(path: &Path) -> Result<File, QueueError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(File::empty()),
        Err(source) => {
            return Err(QueueError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let malformed = |e: serde_json::Error| QueueError::Malformed {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    };
    // The version first, so a future format is refused as such rather than as malformed.
    let value: serde_json::Value = serde_json::from_str(&text).map_err(malformed)?;
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(found) => {
            return Err(QueueError::Version {
                path: path.to_path_buf(),
                found,
            });
        }
        None => {}
    }
    serde_json::from_str(&text).map_err(malformed)
}

/// serde_json's message without its own " at line L column C" (the error says it once).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    const NOW: &str = "2026-11-26T12:00:00Z";

    fn queue() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".baton/bmad-queue.json");
        (dir, path)
    }

    fn ids(q: &Queue) -> Vec<u64> {
        q.list().iter().map(|t| t.id).collect()
    }

    #[test]
    fn a_missing_file_is_an_empty_queue_and_nothing_is_written_by_opening_it() {
        let (_dir, path) = queue();
        let q = Queue::open(&path).unwrap();
        assert!(q.is_empty());
        assert!(q.list().is_empty());
        assert!(!path.exists());
    }

    #[test]
    fn tasks_run_by_priority_then_in_the_order_they_were_added() {
        let (_dir, path) = queue();
        let mut q = Queue::open(&path).unwrap();
        let add = |q: &mut Queue, skill: &str, p| q.add(skill, None, None, p, NOW).unwrap().id;
        let a = add(&mut q, "a", Priority::Low);
        let b = add(&mut q, "b", Priority::Normal);
        let c = add(&mut q, "c", Priority::High);
        let d = add(&mut q, "d", Priority::Normal);
        let e = add(&mut q, "e", Priority::High);
        assert_eq!(ids(&q), [c, e, b, d, a]);
        // Another handle reads the same order from the file.
        assert_eq!(ids(&Queue::open(&path).unwrap()), [c, e, b, d, a]);
        let mut popped = Vec::new();
        while let Some(t) = q.pop_next().unwrap() {
            popped.push(t.skill);
        }
        assert_eq!(popped, ["c", "e", "b", "d", "a"]);
        assert!(Queue::open(&path).unwrap().is_empty());
    }

    #[test]
    fn a_task_keeps_what_it_was_given_through_the_file() {
        let (_dir, path) = queue();
        let mut q = Queue::open(&path).unwrap();
        let t = q
            .add(
                " bmad-create-prd ",
                Some("a todo app"),
                Some(2),
                Priority::High,
                NOW,
            )
            .unwrap();
        assert_eq!(t.skill, "bmad-create-prd");
        let read = Queue::open(&path).unwrap().list();
        assert_eq!(read, [t]);
        let text = std::fs::read_to_string(&path).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["version"], 1);
        assert_eq!(json["next_id"], 2);
        assert_eq!(json["tasks"][0]["priority"], "high");
        assert_eq!(json["tasks"][0]["added_at"], NOW);
    }

    #[test]
    fn ids_are_never_reused() {
        let (_dir, path) = queue();
        let mut q = Queue::open(&path).unwrap();
        let first = q.add("a", None, None, Priority::Normal, NOW).unwrap();
        let second = q.add("b", None, None, Priority::Normal, NOW).unwrap();
        q.remove(second.id).unwrap();
        q.pop_next().unwrap();
        assert!(q.is_empty());
        let third = Queue::open(&path)
            .unwrap()
            .add("c", None, None, Priority::Normal, NOW)
            .unwrap();
        assert_eq!((first.id, second.id, third.id), (1, 2, 3));
    }

    #[test]
    fn the_101st_task_is_refused_with_how_to_make_room() {
        let (_dir, path) = queue();
        let mut q = Queue::open(&path).unwrap();
        for i in 0..CAP {
            q.add(&format!("s{i}"), None, None, Priority::Normal, NOW)
                .unwrap();
        }
        let e = q
            .add("one-more", None, None, Priority::High, NOW)
            .unwrap_err();
        assert!(matches!(e, QueueError::Full { cap: 100 }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("holds 100 tasks"), "{msg}");
        assert!(msg.contains("baton bmad queue remove ID"), "{msg}");
        assert_eq!(Queue::open(&path).unwrap().len(), CAP);
        // Removing one makes room.
        q.remove(7).unwrap();
        let t = q.add("one-more", None, None, Priority::High, NOW).unwrap();
        assert_eq!(t.id, 101);
        assert_eq!(q.list()[0].id, 101);
    }

    #[test]
    fn removing_an_unknown_id_says_which_wait_and_changes_nothing() {
        let (_dir, path) = queue();
        let mut q = Queue::open(&path).unwrap();
        q.add("a", None, None, Priority::Low, NOW).unwrap();
        q.add("b", None, None, Priority::High, NOW).unwrap();
        let before = std::fs::read(&path).unwrap();
        let e = q.remove(9).unwrap_err();
        assert!(matches!(e, QueueError::UnknownId { id: 9, .. }), "{e:?}");
        assert_eq!(e.to_string(), "no task 9 in the BMad queue; waiting: 2, 1");
        assert_eq!(std::fs::read(&path).unwrap(), before);
        let e = Queue::open(&queue().1).unwrap().remove(1).unwrap_err();
        assert!(e.to_string().ends_with("the queue is empty"), "{e}");
    }

    #[test]
    fn removing_one_task_leaves_the_others_in_order() {
        let (_dir, path) = queue();
        let mut q = Queue::open(&path).unwrap();
        for s in ["a", "b", "c"] {
            q.add(s, None, None, Priority::Normal, NOW).unwrap();
        }
        assert_eq!(q.remove(2).unwrap().skill, "b");
        assert_eq!(ids(&Queue::open(&path).unwrap()), [1, 3]);
    }

    #[test]
    fn popping_an_empty_queue_writes_nothing() {
        let (_dir, path) = queue();
        let mut q = Queue::open(&path).unwrap();
        assert_eq!(q.pop_next().unwrap(), None);
        assert!(!path.exists());
    }

    #[test]
    fn a_malformed_file_is_named_with_its_position_and_never_written_over() {
        let (_dir, path) = queue();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let bad = "{\n  \"version\": 1,\n  \"next_id\": 3,\n  \"tasks\": [ { \"id\": 1, }\n";
        std::fs::write(&path, bad).unwrap();
        let e = Queue::open(&path).unwrap_err();
        match &e {
            QueueError::Malformed { line, .. } => assert_eq!(*line, 4),
            other => panic!("{other:?}"),
        }
        let msg = e.to_string();
        assert!(msg.contains("bmad-queue.json"), "{msg}");
        assert!(msg.contains("line 4, column"), "{msg}");

        // A handle opened before the file went bad does not write over it either.
        std::fs::write(&path, "{\"version\":1,\"next_id\":1,\"tasks\":[]}").unwrap();
        let mut q = Queue::open(&path).unwrap();
        std::fs::write(&path, bad).unwrap();
        assert!(matches!(
            q.add("a", None, None, Priority::Normal, NOW),
            Err(QueueError::Malformed { .. })
        ));
        assert!(matches!(q.pop_next(), Err(QueueError::Malformed { .. })));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), bad);

        // Valid JSON of the wrong shape is malformed too.
        std::fs::write(&path, "{\"version\":1,\"next_id\":1,\"tasks\":{}}").unwrap();
        assert!(matches!(
            Queue::open(&path),
            Err(QueueError::Malformed { .. })
        ));
    }

    #[test]
    fn an_unknown_version_is_refused_as_such() {
        let (_dir, path) = queue();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let future = "{\"version\":2,\"next_id\":1,\"entries\":[]}";
        std::fs::write(&path, future).unwrap();
        let e = Queue::open(&path).unwrap_err();
        assert!(matches!(e, QueueError::Version { found: 2, .. }), "{e:?}");
        assert!(e.to_string().contains("version 2"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), future);
    }

    #[test]
    fn priorities_read_in_any_case_and_refuse_others_clearly() {
        for (text, p) in [
            ("high", Priority::High),
            ("Normal", Priority::Normal),
            (" LOW ", Priority::Low),
        ] {
            assert_eq!(text.parse::<Priority>(), Ok(p));
            assert_eq!(p.as_str().parse::<Priority>(), Ok(p));
        }
        let e = "urgent".parse::<Priority>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown priority `urgent`: expected high, normal or low"
        );
        assert_eq!(Priority::default(), Priority::Normal);
    }

    #[test]
    fn an_empty_skill_or_a_tier_above_4_is_refused() {
        let (_dir, path) = queue();
        let mut q = Queue::open(&path).unwrap();
        assert!(matches!(
            q.add("  ", None, None, Priority::Normal, NOW),
            Err(QueueError::Invalid(_))
        ));
        assert!(matches!(
            q.add("s", None, Some(5), Priority::Normal, NOW),
            Err(QueueError::Invalid(_))
        ));
        assert!(!path.exists());
    }

    #[test]
    fn concurrent_adds_from_separate_handles_are_all_kept() {
        let (_dir, path) = queue();
        let threads = 6;
        let each = 10;
        let start = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|n| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    let mut q = Queue::open(&path).unwrap();
                    start.wait();
                    (0..each)
                        .map(|i| {
                            q.add(&format!("t{n}-{i}"), None, None, Priority::Normal, NOW)
                                .unwrap()
                                .id
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut given: Vec<u64> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        given.sort_unstable();
        let expected: Vec<u64> = (1..=(threads * each) as u64).collect();
        assert_eq!(given, expected, "every add got its own id");
        let q = Queue::open(&path).unwrap();
        assert_eq!(ids(&q), expected, "and every task is in the file");
    }

    #[test]
    fn concurrent_adds_past_the_cap_keep_exactly_the_cap() {
        let (_dir, path) = queue();
        let start = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|n| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    let mut q = Queue::open(&path).unwrap();
                    start.wait();
                    let mut full = 0;
                    for i in 0..30 {
                        match q.add(&format!("t{n}-{i}"), None, None, Priority::Low, NOW) {
                            Ok(_) => {}
                            Err(QueueError::Full { .. }) => full += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                    full
                })
            })
            .collect();
        let refused: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(refused, 120 - CAP);
        assert_eq!(Queue::open(&path).unwrap().len(), CAP);
    }
}
