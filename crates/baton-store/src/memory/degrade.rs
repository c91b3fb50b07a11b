//! An external memory backend that can never fail a run.
//!
//! [`External`] is what a backend beyond the embedded store implements (an MCP memory server
//! behind a bridge, for example; [`CommandBackend`] runs one as a program). [`Degrading`] wraps
//! it with the requirement's rules: each call is tried [`RETRIES`] times, [`RETRY_PAUSE`] apart;
//! a write that still fails is queued in the [`WriteQueue`] (at most 100, FIFO overflow) and sent
//! when the backend answers again; a recall is served from a cache kept [`CACHE_TTL`], or comes
//! back empty; a backend down for [`GIVE_UP_AFTER`] is marked unavailable, and said so, until a
//! call succeeds again. When it went down is kept in the queue directory, so the four hours count
//! across runs. The embedded store is not behind this: it always works.

use super::MemoryError;
use super::queue::WriteQueue;
use baton_core::memory::Draft;
use baton_core::memory::recall::{Candidate, Query};
use std::collections::HashMap;
use std::time::Duration;

/// Tries per call.
pub const RETRIES: u32 = 3;
/// The pause between tries.
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How long a recall is served from the cache.
pub const CACHE_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a backend may be down before it is marked unavailable.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(4 * 60 * 60);

/// A memory backend outside baton.
pub trait External: Send {
    /// What to call it in messages.
    fn name(&self) -> String;
    /// Stores a draft.
    fn write(&mut self, draft: &Draft) -> Result<(), String>;
    /// The memories it holds that may apply to `query`.
    fn recall(&mut self, query: &Query, words: &str) -> Result<Vec<Candidate>, String>;
}

/// How the external backend is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// It answers.
    Up,
    /// It did not answer since `since` (Unix ms); `queued` writes wait.
    Degraded {
        /// Down since (Unix ms).
        since: i64,
        /// Writes waiting.
        queued: usize,
    },
    /// Down for more than four hours: no longer tried until a call succeeds... which it will
    /// not be, until the queue directory's state is cleared or a later run finds it up.
    Unavailable {
        /// Down since (Unix ms).
        since: i64,
    },
}

/// What became of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// The backend stored it.
    Stored,
    /// It waits in the queue; `dropped` older drafts fell out of it.
    Queued {
        /// Drafts dropped from the front of the queue.
        dropped: usize,
        /// Why it was not sent.
        why: String,
    },
}

/// An external backend behind retries, a write queue and a recall cache.
pub struct Degrading<E: External> {
    backend: E,
    queue: WriteQueue,
    cache: HashMap<String, (i64, Vec<Candidate>)>,
    sleep: Box<dyn FnMut(Duration) + Send>,
}

impl<E: External> Degrading<E> {
    /// `backend`, queueing in `queue`, pausing with `sleep` between tries.
    pub fn new(backend: E, queue: WriteQueue, sleep: Box<dyn FnMut(Duration) + Send>) -> Self {
        Degrading {
            backend,
            queue,
            cache: HashMap::new(),
            sleep,
        }
    }

    fn state_file(&self) -> std::path::PathBuf {
        self.queue.dir().join("down-since")
    }

    fn down_since(&self) -> Option<i64> {
        std::fs::read_to_string(self.state_file())
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    fn mark_down(&self, now_ms: i64) -> i64 {
        if let Some(since) = self.down_since() {
            return since;
        }
        if self.queue.create().is_ok() {
            // Losing this mark only restarts the four hours.
            let _ = std::fs::write(self.state_file(), now_ms.to_string());
        }
        now_ms
    }

    fn mark_up(&self) {
        let _ = std::fs::remove_file(self.state_file());
    }

    /// How the backend is doing at `now_ms`.
    pub fn health(&self, now_ms: i64) -> Result<Health, MemoryError> {
        Ok(match self.down_since() {
            None => Health::Up,
            Some(since) if now_ms - since >= millis(GIVE_UP_AFTER) => Health::Unavailable { since },
            Some(since) => Health::Degraded {
                since,
                queued: self.queue.len()?,
            },
        })
    }

    fn unavailable(&self, now_ms: i64) -> bool {
        self.down_since()
            .is_some_and(|since| now_ms - since >= millis(GIVE_UP_AFTER))
    }

    fn try_calls<T>(
        &mut self,
        mut call: impl FnMut(&mut E) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut last = String::new();
        for attempt in 0..RETRIES {
            if attempt > 0 {
                (self.sleep)(RETRY_PAUSE);
            }
            match call(&mut self.backend) {
                Ok(v) => return Ok(v),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Sends `draft`, or queues it. Never fails the caller: only the queue's own IO can err.
    pub fn write(&mut self, draft: &Draft, now_ms: i64) -> Result<Sent, MemoryError> {
        if self.unavailable(now_ms) {
            let dropped = self.queue.push(draft)?;
            return Ok(Sent::Queued {
                dropped,
                why: format!("{} is marked unavailable", self.backend.name()),
            });
        }
        match self.try_calls(|b| b.write(draft)) {
            Ok(()) => {
                self.mark_up();
                let backend = &mut self.backend;
                self.queue.drain(|d| backend.write(d).is_ok())?;
                Ok(Sent::Stored)
            }
            Err(why) => {
                self.mark_down(now_ms);
                let dropped = self.queue.push(draft)?;
                Ok(Sent::Queued { dropped, why })
            }
        }
    }

    /// The backend's memories for `query`: fresh, from the cache, or none.
    pub fn recall(&mut self, query: &Query, words: &str, now_ms: i64) -> Vec<Candidate> {
        let key = format!("{query:?}\u{1f}{words}");
        if let Some((at, hit)) = self.cache.get(&key)
            && now_ms - at < millis(CACHE_TTL)
        {
            return hit.clone();
        }
        if self.unavailable(now_ms) {
            return Vec::new();
        }
        match self.try_calls(|b| b.recall(query, words)) {
            Ok(found) => {
                self.mark_up();
                self.cache.insert(key, (now_ms, found.clone()));
                found
            }
            Err(_) => {
                self.mark_down(now_ms);
                Vec::new()
            }
        }
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// An external backend run as a program: each call starts it with the request as one JSON
/// object on its standard input (`{"op":"write","memory":{..}}` or
/// `{"op":"recall","query":{..},"words":".."}`) and reads one JSON value from its standard
/// output (anything for a write; an array of memories for a recall). A non-zero exit, no answer
/// within the timeout, or an answer that does not parse is a failure. The program gets no
/// environment but `PATH` and `HOME`: no key of baton's reaches it.
#[derive(Debug, Clone)]
pub struct CommandBackend {
    argv: Vec<String>,
    timeout: Duration,
}

impl CommandBackend {
    /// The program `argv[0]` with its arguments, killed after `timeout`.
    pub fn new(argv: Vec<String>, timeout: Duration) -> CommandBackend {
        CommandBackend { argv, timeout }
    }

    fn call(&self, request: &serde_json::Value) -> Result<serde_json::Value, String> {
        use std::io::{Read as _, Write as _};
        use std::process::{Command, Stdio};
        let (program, args) = self.argv.split_first().ok_or("no program is configured")?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for var in ["PATH", "HOME"] {
            if let Some(v) = std::env::var_os(var) {
                cmd.env(var, v);
            }
        }
        let mut child = cmd.spawn().map_err(|e| format!("`{program}`: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(request.to_string().as_bytes());
        }
        let mut stdout = child.stdout.take().ok_or("no standard output")?;
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.by_ref().take(1 << 20).read_to_end(&mut out);
            out
        });
        let started = std::time::Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() < self.timeout => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "`{program}` did not answer within {:?}",
                        self.timeout
                    ));
                }
                Err(e) => return Err(e.to_string()),
            }
        };
        let out = reader.join().unwrap_or_default();
        if !status.success() {
            return Err(format!("`{program}` exited with {status}"));
        }
        serde_json::from_slice(&out).map_err(|e| format!("`{program}` answered no JSON: {e}"))
    }
}

impl External for CommandBackend {
    fn name(&self) -> String {
        self.argv.first().cloned().unwrap_or_default()
    }

    fn write(&mut self, draft: &Draft) -> Result<(), String> {
        self.call(&serde_json::json!({"op": "write", "memory": draft}))
            .map(|_| ())
    }

    fn recall(&mut self, query: &Query, words: &str) -> Result<Vec<Candidate>, String> {
        let answer = self.call(&serde_json::json!({
            "op": "recall",
            "query": {"files": query.files, "epic": query.epic, "stage": query.stage},
            "words": words,
        }))?;
        let items = answer.as_array().ok_or("a recall answer is a JSON array")?;
        Ok(items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let d: Draft = serde_json::from_value(v.clone()).ok()?;
                Some(Candidate {
                    // External memories are numbered below zero, apart from the store's.
                    id: -1 - i64::try_from(i).ok()?,
                    kind: d.kind,
                    importance: d.importance,
                    text: d.text,
                    scope: d.scope,
                    strength: 1,
                    age_days: 0.0,
                    text_match: 0.0,
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests;
