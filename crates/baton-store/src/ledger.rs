//! The durable transition: sprint file and journal changed together, safely.
//!
//! One transition takes the sprint lock, reconciles anything a killed process left pending,
//! checks the move against baton-core's table, lets the epic follow its stories, records the
//! events as *pending* (one durable journal commit), writes the sprint file atomically with
//! compare-and-swap (one file flush), and marks the events *applied*. If the file changed
//! underneath, the events are abandoned and the whole step is planned again from the new file.
//! On the next start, a pending event is *applied* if the file shows it, *abandoned* if not, so
//! every transition is in the journal exactly once and the file always parses.
//!
//! Moves ready at the same moment (the stories of a parallel run) go through
//! [`Ledger::transition_all`]: each is checked on its own, and together they cost one journal
//! commit and one file write. The replaced sprint file is removed on a thread of its own
//! ([`crate::atomic::Reaper`]), and a story's file is found through
//! [`story_file::find_indexed`], so neither its removal nor a listing of the stories folder is
//! on a step's path.

use crate::journal::{Event, EventFilter, Journal, JournalError, NewEvent};
use crate::lock::{FileLock, LockError};
use crate::sprint_file::{Change, EditError, EditOptions, LoadError, PersistError, SprintDoc};
use crate::story_file;
use baton_core::actor::Actor;
use baton_core::epic;
use baton_core::key::KeyKind;
use baton_core::stamp::Stamp;
use baton_core::status::{Status, StatusValue};
use baton_core::transition::{self, Allowed, Current, Refusal};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How many times a step is re-planned when the file keeps changing underneath.
const MAX_ATTEMPTS: usize = 12;
/// The first wait after a conflict; each later one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(2);
/// The longest wait between two attempts (before jitter).
const MAX_BACKOFF: Duration = Duration::from_millis(250);

/// The wait after the `attempt`-th conflict (0-based): exponential, capped, with "full jitter"
/// (a random part of the step), so writers that collided spread out.
fn backoff(attempt: usize) -> Duration {
    let step = FIRST_BACKOFF
        .saturating_mul(1u32 << attempt.min(16))
        .min(MAX_BACKOFF);
    let nanos = u64::try_from(step.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(nanos / 2 + jitter() % (nanos / 2 + 1))
}

/// A cheap random number (no need for quality: it only spreads retries apart).
fn jitter() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}

/// The current time, as the journal and the sprint file write it.
#[derive(Debug, Clone)]
pub struct Now {
    /// Minute stamp for `last_updated`.
    pub stamp: Stamp,
    /// RFC 3339 for the journal.
    pub rfc3339: String,
}

impl Now {
    /// The system clock, in local time.
    pub fn system() -> Now {
        let z = jiff::Zoned::now();
        let stamp = Stamp::new(
            u16::try_from(z.year()).unwrap_or(1970),
            u8::try_from(z.month()).unwrap_or(1),
            u8::try_from(z.day()).unwrap_or(1),
            u8::try_from(z.hour()).unwrap_or(0),
            u8::try_from(z.minute()).unwrap_or(0),
        )
        .unwrap_or(Stamp {
            year: 1970,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
        });
        Now {
            stamp,
            rfc3339: z.timestamp().to_string(),
        }
    }
}

/// Errors of a transition.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The sprint file could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The lock could not be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The edit could not be made.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The write failed.
    #[error(transparent)]
    Write(#[from] crate::atomic::WriteError),
    /// The transition table refused the move.
    #[error("cannot move `{key}`: {refusal}")]
    Refused {
        /// The key.
        key: String,
        /// Why.
        refusal: Refusal,
    },
    /// The file kept changing underneath.
    #[error(
        "`{path}` kept changing while baton tried to write it ({attempts} attempts); is another tool rewriting it in a loop?"
    )]
    Contended {
        /// The file.
        path: PathBuf,
        /// Attempts made.
        attempts: usize,
    },
    /// The edited sprint file would not load back; nothing was written.
    #[error(transparent)]
    Persist(PersistError),
    /// The story file could not be kept in step.
    #[error(transparent)]
    StoryFile(#[from] story_file::StoryFileError),
    /// A request of a batch that was not made because an earlier part of the batch failed
    /// ([`Ledger::transition_all`]).
    #[error("`{key}` was not moved: an earlier move of the same batch failed")]
    Stopped {
        /// The key.
        key: String,
    },
}

/// Settings of the ledger.
#[derive(Debug, Clone)]
pub struct LedgerOptions {
    /// The lock file.
    pub lock_path: PathBuf,
    /// Where story files live (their `Status:` line is kept equal to the sprint file).
    pub stories_dir: Option<PathBuf>,
    /// Write extended statuses literally.
    pub write_extended: bool,
    /// Epic follows to done automatically.
    pub auto_epic_done: bool,
}

/// A request to move one key.
#[derive(Debug, Clone)]
pub struct Request {
    /// The key.
    pub key: String,
    /// The new status.
    pub to: Status,
    /// Who asks.
    pub actor: Actor,
    /// Why (journaled; shown in a needs-intervention marker).
    pub reason: String,
    /// A note to keep as a comment on the line.
    pub note: Option<String>,
    /// Allow a move the table forbids.
    pub force: bool,
    /// The run, if any.
    pub run_id: Option<String>,
}

/// One change that was written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Applied {
    /// Journal event id.
    pub event_id: i64,
    /// The key.
    pub key: String,
    /// Status before (effective).
    pub from: String,
    /// Status after.
    pub to: String,
    /// Who made it.
    pub actor: String,
    /// Whether forced.
    pub forced: bool,
}

/// What reconciliation found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Pending events found on disk, now applied.
    pub applied: Vec<i64>,
    /// Pending events whose write never happened, now abandoned.
    pub abandoned: Vec<i64>,
}

/// A key whose file status and journal disagree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Disagreement {
    /// The key.
    pub key: String,
    /// Effective status in the file (`None` if the key is gone).
    pub file: Option<String>,
    /// Status after the last applied event.
    pub journal: String,
}

/// The sprint file and its journal, kept in step.
pub struct Ledger<J: Journal> {
    doc: SprintDoc,
    journal: J,
    opts: LedgerOptions,
    /// Stories whose file lives elsewhere than `opts.stories_dir` for now: in the story's own
    /// git worktree while it is worked in parallel with others.
    placed: std::collections::HashMap<String, PathBuf>,
    /// Removes the sprint file's replaced versions off the step's path.
    reaper: crate::atomic::Reaper,
    #[cfg(test)]
    test: TestHooks,
}

/// What [`Ledger::commit`] did with the requests it was given.
enum Commit {
    /// The results of the requests it took (a prefix of them, in order).
    Done(Vec<Result<Vec<Applied>, LedgerError>>),
    /// The batch's text was refused as unreadable: go on one request per commit.
    OneByOne,
}

/// Counts and a simulated kill, for tests.
#[cfg(test)]
#[derive(Debug, Default)]
struct TestHooks {
    /// Journal commits of pending events.
    commits: usize,
    /// Writes of the sprint file.
    writes: usize,
    /// The commit (its number, counting from 1) that stops, and where, as if the process were
    /// killed there.
    kill: Option<(usize, Kill)>,
}

/// Where a simulated kill stops a commit.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kill {
    /// After the events are recorded pending, before the file is written.
    BeforeWrite,
    /// After the file is written, before the events are marked applied.
    AfterWrite,
}

/// The error a simulated kill returns.
#[cfg(test)]
fn killed(path: &Path) -> LedgerError {
    LedgerError::Write(crate::atomic::WriteError {
        path: path.to_path_buf(),
        source: std::io::Error::other("killed"),
    })
}

impl<J: Journal> Ledger<J> {
    /// Opens the sprint file, reconciling anything left pending.
    pub fn open(sprint_path: &Path, journal: J, opts: LedgerOptions) -> Result<Self, LedgerError> {
        let _lock = FileLock::acquire(&opts.lock_path)?;
        let doc = SprintDoc::load(sprint_path)?;
        let mut ledger = Ledger {
            doc,
            journal,
            opts,
            placed: std::collections::HashMap::new(),
            reaper: crate::atomic::Reaper::new(),
            #[cfg(test)]
            test: TestHooks::default(),
        };
        crate::atomic::remove_stale_temps(ledger.doc.path());
        ledger.reconcile_locked()?;
        Ok(ledger)
    }

    /// The sprint document as last read or written.
    pub fn doc(&self) -> &SprintDoc {
        &self.doc
    }

    /// The journal.
    pub fn journal(&self) -> &J {
        &self.journal
    }

    /// The journal, mutably (runs, steps, escalations).
    pub fn journal_mut(&mut self) -> &mut J {
        &mut self.journal
    }

    /// Re-reads the file if it changed on disk.
    pub fn refresh(&mut self) -> Result<(), LedgerError> {
        if self.doc.changed_on_disk() {
            self.doc = SprintDoc::load(self.doc.path())?;
        }
        Ok(())
    }

    /// Settles pending events under the lock.
    pub fn reconcile(&mut self) -> Result<Reconciled, LedgerError> {
        let _lock = FileLock::acquire(&self.opts.lock_path)?;
        self.refresh()?;
        crate::atomic::remove_stale_temps(self.doc.path());
        self.reconcile_locked()
    }

    /// Settles pending events. Temp files of killed writers are swept when the ledger opens and
    /// on an explicit [`Ledger::reconcile`], not here: listing the directory on every transition
    /// would make a step's cost grow with the number of story files beside the sprint file.
    fn reconcile_locked(&mut self) -> Result<Reconciled, LedgerError> {
        let pending = self.journal.pending()?;
        let mut out = Reconciled::default();
        if pending.is_empty() {
            return Ok(out);
        }
        for ev in &pending {
            let on_disk = self
                .doc
                .sprint()
                .get(&ev.key)
                .map(|e| e.effective().as_str().to_owned());
            if on_disk.as_deref() == Some(ev.to.as_str()) {
                out.applied.push(ev.id);
            } else {
                out.abandoned.push(ev.id);
            }
        }
        self.journal.mark_applied(&out.applied)?;
        self.journal.mark_abandoned(&out.abandoned)?;
        for ev in pending.iter().filter(|e| out.applied.contains(&e.id)) {
            self.sync_story(&ev.key, ev.from.as_deref())?;
        }
        Ok(out)
    }

    /// Keeps `key`'s story file `Status:` line in `dir` from now on (`None`: back in the
    /// project's stories folder). A story worked in its own git worktree has its file there.
    pub fn place_story(&mut self, key: &str, dir: Option<PathBuf>) {
        match dir {
            Some(d) => {
                self.placed.insert(key.to_owned(), d);
            }
            None => {
                self.placed.remove(key);
            }
        }
    }

    /// The text a move of story `key` to `to` would leave on its story file's `Status:` line
    /// (the sprint file's value for it, extended statuses as configured); nothing is written.
    /// `None` when the move would change nothing or is refused.
    pub fn status_text(&self, req: &Request, now: &Now) -> Option<String> {
        let (changes, _) = self.plan(req, now).ok()?;
        let first = changes.first()?.clone();
        let mut doc = self.doc.clone();
        let edit = EditOptions {
            write_extended: self.opts.write_extended,
        };
        doc.apply(&[first], now.stamp, edit).ok()?;
        doc.sprint().get(&req.key)?.raw.clone()
    }

    /// Makes one transition durable (plus the epic's follow-up, if any). Returns the changes
    /// written; empty if the key already had that status.
    pub fn transition(&mut self, req: &Request, now: &Now) -> Result<Vec<Applied>, LedgerError> {
        let mut results = self.transition_all(std::slice::from_ref(req), now)?;
        results.pop().unwrap_or_else(|| Ok(Vec::new()))
    }

    /// Makes several transitions durable together: moves that are ready at the same moment (the
    /// stories of a parallel run) share one journal commit and one write of the sprint file,
    /// where [`Ledger::transition`] takes one of each per move.
    ///
    /// The requests are taken in order, each checked against the transition table on its own,
    /// against the file as the earlier requests leave it: the outcome is the one of calling
    /// [`Ledger::transition`] for each in turn. The result has one entry per request, in order:
    /// the changes written for it (empty when its key already had that status), or why it was
    /// not made; a refused request does not hold back the others. The outer error is for what
    /// stops the batch before any of it is made (the lock, the journal, the write of the file, a
    /// file that keeps changing underneath), as [`Ledger::transition`]'s error is.
    ///
    /// A key moves at most once per commit, so that a batch cut off by a kill is reconciled as a
    /// single transition is (a pending event was applied exactly when the file shows its
    /// status): a request that would move a key an earlier request of the same commit moved (the
    /// same story twice, or an epic following a second of its stories to another status) starts
    /// the next commit. When such a later commit fails, the commits before it stand: its first
    /// request gets the error and every request after it [`LedgerError::Stopped`].
    pub fn transition_all(
        &mut self,
        reqs: &[Request],
        now: &Now,
    ) -> Result<Vec<Result<Vec<Applied>, LedgerError>>, LedgerError> {
        let _lock = FileLock::acquire(&self.opts.lock_path)?;
        let mut out: Vec<Result<Vec<Applied>, LedgerError>> = Vec::with_capacity(reqs.len());
        // After a write refused as unreadable, the rest go one per commit, so that the request
        // whose text was refused is the only one refused.
        let mut one_by_one = false;
        while out.len() < reqs.len() {
            let from = out.len();
            let to = if one_by_one { from + 1 } else { reqs.len() };
            match self.commit(&reqs[from..to], now) {
                Ok(Commit::Done(results)) => out.extend(results),
                Ok(Commit::OneByOne) => one_by_one = true,
                Err(e) if out.is_empty() => return Err(e),
                Err(e) => {
                    // Earlier commits of the batch were made: their results stand, and the
                    // requests from here on are answered with what stopped them.
                    out.push(Err(e));
                    out.extend(
                        reqs[out.len()..]
                            .iter()
                            .map(|r| Err(LedgerError::Stopped { key: r.key.clone() })),
                    );
                }
            }
        }
        Ok(out)
    }

    /// One journal commit and one write for the longest prefix of `reqs` that moves no key
    /// twice; the results of the requests it took, in order.
    fn commit(&mut self, reqs: &[Request], now: &Now) -> Result<Commit, LedgerError> {
        let edit = EditOptions {
            write_extended: self.opts.write_extended,
        };
        for attempt in 0..MAX_ATTEMPTS {
            self.refresh()?;
            self.reconcile_locked()?;
            // Each request taken: its result, or `None` while its events wait for the write.
            let mut results: Vec<Option<Result<Vec<Applied>, LedgerError>>> = Vec::new();
            // For each request that changes the file: its position, its changes, and how many
            // of `events` are its.
            let mut planned: Vec<(usize, Vec<Change>, usize)> = Vec::new();
            let mut events: Vec<NewEvent> = Vec::new();
            let mut moved: HashSet<String> = HashSet::new();
            for req in reqs {
                let (changes, evs) = match self.plan(req, now) {
                    Ok(p) => p,
                    Err(e) => {
                        results.push(Some(Err(e)));
                        continue;
                    }
                };
                if changes.is_empty() {
                    results.push(Some(Ok(Vec::new())));
                    continue;
                }
                if changes.iter().any(|c| moved.contains(&c.key)) {
                    break;
                }
                if let Err(e) = self.doc.apply(&changes, now.stamp, edit) {
                    results.push(Some(Err(e.into())));
                    continue;
                }
                moved.extend(changes.iter().map(|c| c.key.clone()));
                planned.push((results.len(), changes, evs.len()));
                results.push(None);
                events.extend(evs);
            }
            let done = |results: Vec<Option<Result<Vec<Applied>, LedgerError>>>| {
                Commit::Done(
                    results
                        .into_iter()
                        .map(|r| r.unwrap_or_else(|| Ok(Vec::new())))
                        .collect(),
                )
            };
            if planned.is_empty() {
                return Ok(done(results));
            }
            let ids = match self.journal.record_pending(&events) {
                Ok(ids) => ids,
                Err(e) => {
                    self.doc = SprintDoc::load(self.doc.path())?;
                    return Err(e.into());
                }
            };
            #[cfg(test)]
            {
                self.test.commits += 1;
                if self.test.kill == Some((self.test.commits, Kill::BeforeWrite)) {
                    return Err(killed(self.doc.path()));
                }
            }
            match self.doc.persist_with(&self.reaper) {
                Ok(()) => {
                    #[cfg(test)]
                    {
                        self.test.writes += 1;
                        if self.test.kill == Some((self.test.commits, Kill::AfterWrite)) {
                            return Err(killed(self.doc.path()));
                        }
                    }
                    self.journal.mark_applied(&ids)?;
                    let mut written = events.into_iter().zip(ids);
                    for (at, changes, n) in planned {
                        let mine: Vec<(NewEvent, i64)> = written.by_ref().take(n).collect();
                        let synced = changes
                            .iter()
                            .zip(&mine)
                            .try_for_each(|(c, (e, _))| self.sync_story(&c.key, e.from.as_deref()));
                        if let Some(slot) = results.get_mut(at) {
                            *slot = Some(synced.map(|()| {
                                mine.into_iter()
                                    .map(|(e, id)| Applied {
                                        event_id: id,
                                        key: e.key,
                                        from: e.from.unwrap_or_default(),
                                        to: e.to,
                                        actor: e.actor,
                                        forced: e.forced,
                                    })
                                    .collect()
                            }));
                        }
                    }
                    return Ok(done(results));
                }
                Err(PersistError::Conflict { .. }) => {
                    self.journal.mark_abandoned(&ids)?;
                    self.doc = SprintDoc::load(self.doc.path())?;
                }
                Err(PersistError::Write(e)) => {
                    self.journal.mark_abandoned(&ids)?;
                    self.doc = SprintDoc::load(self.doc.path())?;
                    return Err(e.into());
                }
                Err(e @ PersistError::Unreadable { .. }) => {
                    self.journal.mark_abandoned(&ids)?;
                    self.doc = SprintDoc::load(self.doc.path())?;
                    if planned.len() > 1 {
                        return Ok(Commit::OneByOne);
                    }
                    // The one request that wrote is the one whose text was refused.
                    if let Some((at, _, _)) = planned.first()
                        && let Some(slot) = results.get_mut(*at)
                    {
                        *slot = Some(Err(LedgerError::Persist(e)));
                    }
                    return Ok(done(results));
                }
            }
            // Someone else is writing the file: give them room before planning again, with
            // jitter so two writers that collided do not collide again in step.
            std::thread::sleep(backoff(attempt));
        }
        Err(LedgerError::Contended {
            path: self.doc.path().to_path_buf(),
            attempts: MAX_ATTEMPTS,
        })
    }

    fn plan(&self, req: &Request, now: &Now) -> Result<(Vec<Change>, Vec<NewEvent>), LedgerError> {
        let sprint = self.doc.sprint();
        let path = self.doc.path().display().to_string();
        let entry = sprint.get(&req.key).ok_or_else(|| EditError::NotFound {
            key: req.key.clone(),
            path: path.clone(),
        })?;
        let kind = entry.key.kind();
        let current = Current {
            canonical: entry.value.clone(),
            extended: entry.extended,
        };
        let allowed =
            transition::check(kind, &current, req.to, req.actor, req.force).map_err(|refusal| {
                LedgerError::Refused {
                    key: req.key.clone(),
                    refusal,
                }
            })?;
        if allowed == Allowed::Unchanged {
            return Ok((Vec::new(), Vec::new()));
        }
        let forced = allowed == Allowed::Forced;
        let event = |key: &str, from: String, to: Status, actor: Actor, reason: String| NewEvent {
            at: now.rfc3339.clone(),
            actor: actor.as_str().to_owned(),
            key: key.to_owned(),
            from: Some(from),
            to: to.as_str().to_owned(),
            reason,
            forced,
            run_id: req.run_id.clone(),
        };
        let mut changes = vec![Change {
            key: req.key.clone(),
            to: req.to,
            reason: (req.to == Status::NeedsIntervention).then(|| req.reason.clone()),
            note: req.note.clone(),
        }];
        let mut events = vec![event(
            &req.key,
            current.effective().as_str().to_owned(),
            req.to,
            req.actor,
            req.reason.clone(),
        )];
        if let KeyKind::Story { epic: n, .. } = kind {
            let epic_key = format!("epic-{n}");
            if let Some(epic_entry) = sprint.get(&epic_key) {
                let after = StatusValue::Known(req.to);
                let stories: Vec<StatusValue> = self
                    .doc
                    .stories_of(n)
                    .map(|s| {
                        if s.key.as_str() == req.key {
                            after.clone()
                        } else {
                            s.effective()
                        }
                    })
                    .collect();
                if let Some(target) = epic::follow(
                    &epic_entry.value,
                    &stories,
                    self.opts.auto_epic_done,
                    forced,
                ) {
                    changes.push(Change {
                        key: epic_key.clone(),
                        to: target,
                        reason: None,
                        note: None,
                    });
                    events.push(event(
                        &epic_key,
                        epic_entry.value.as_str().to_owned(),
                        target,
                        Actor::Orchestrator,
                        format!("epic follows its stories ({} → {})", req.key, req.to),
                    ));
                }
            }
        }
        Ok((changes, events))
    }

    /// Keeps the story file's status equal to the sprint file's after `key` moved from
    /// `before`. A story file that was ahead of the sprint file (it says `done` while the sprint
    /// said `review`) is not lowered: that disagreement is for a human to settle, and
    /// `baton status` shows it.
    fn sync_story(&self, key: &str, before: Option<&str>) -> Result<(), LedgerError> {
        let Some(dir) = self.placed.get(key).or(self.opts.stories_dir.as_ref()) else {
            return Ok(());
        };
        let Some(entry) = self.doc.sprint().get(key) else {
            return Ok(());
        };
        if !matches!(entry.key.kind(), KeyKind::Story { .. }) {
            return Ok(());
        }
        let Some(path) = story_file::find_indexed(dir, key) else {
            return Ok(());
        };
        let Some(raw) = &entry.raw else {
            return Ok(());
        };
        let kind = entry.key.kind();
        let rank = |v: &str| StatusValue::parse(v, kind).0.known()?.rank(kind);
        if let Some(story) = story_file::read_status_at(&path)?
            && let (Some(story_rank), Some(new_rank)) = (rank(&story.value), rank(raw))
            && new_rank < story_rank
            && before.and_then(rank).is_some_and(|b| story_rank > b)
        {
            return Ok(());
        }
        story_file::sync_status(&path, raw)?;
        Ok(())
    }

    /// Keys whose file status differs from the journal's last applied event.
    pub fn audit(&self) -> Result<Vec<Disagreement>, LedgerError> {
        Ok(audit(&self.doc, &self.journal)?)
    }
}

/// Keys whose file status differs from the journal's last applied event.
pub fn audit(doc: &SprintDoc, journal: &impl Journal) -> Result<Vec<Disagreement>, JournalError> {
    let events: Vec<Event> = journal.events(&EventFilter::default())?;
    let mut last: HashMap<&str, &str> = HashMap::new();
    for e in &events {
        last.insert(&e.key, &e.to);
    }
    let mut out: Vec<Disagreement> = last
        .into_iter()
        .filter_map(|(key, to)| {
            let file = doc
                .sprint()
                .get(key)
                .map(|e| e.effective().as_str().to_owned());
            (file.as_deref() != Some(to)).then(|| Disagreement {
                key: key.to_owned(),
                file,
                journal: to.to_owned(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{EventState, SqliteJournal};
    use std::fs;

    const SPRINT: &str = "\
last_updated: 2026-11-01 09:00
development_status:
  epic-1: in-progress
  1-1-a: in-progress
  1-2-b: in-progress
  1-3-c: ready-for-dev
  epic-1-retrospective: optional
  epic-2: backlog
  2-1-d: backlog
  epic-2-retrospective: optional
";

    fn now() -> Now {
        Now {
            stamp: Stamp::new(2026, 11, 22, 9, 30).unwrap(),
            rfc3339: "2026-11-22T09:30:00Z".into(),
        }
    }

    /// The sprint above in `dir`, with a story file for `1-1-a` only.
    fn setup(dir: &Path) {
        fs::write(dir.join("sprint-status.yaml"), SPRINT).unwrap();
        fs::create_dir_all(dir.join("stories")).unwrap();
        fs::write(
            dir.join("stories/1-1-a.md"),
            "# Story 1.1: A\n\nStatus: in-progress\n",
        )
        .unwrap();
    }

    fn open(dir: &Path) -> Ledger<SqliteJournal> {
        let journal = SqliteJournal::open(&dir.join(".baton/baton.db")).unwrap();
        let opts = LedgerOptions {
            lock_path: dir.join(".baton/sprint.lock"),
            stories_dir: Some(dir.join("stories")),
            write_extended: false,
            auto_epic_done: false,
        };
        Ledger::open(&dir.join("sprint-status.yaml"), journal, opts).unwrap()
    }

    fn req(key: &str, to: Status, actor: Actor) -> Request {
        Request {
            key: key.into(),
            to,
            actor,
            reason: "test".into(),
            note: None,
            force: false,
            run_id: None,
        }
    }

    /// Three stories of two epics; the third brings its epic along.
    fn three() -> Vec<Request> {
        vec![
            req("1-1-a", Status::Review, Actor::Developer),
            req("1-2-b", Status::Review, Actor::Developer),
            req("2-1-d", Status::ReadyForDev, Actor::ScrumMaster),
        ]
    }

    fn status(dir: &Path, key: &str) -> String {
        let doc = SprintDoc::load(&dir.join("sprint-status.yaml")).unwrap();
        doc.sprint()
            .get(key)
            .unwrap()
            .effective()
            .as_str()
            .to_owned()
    }

    fn all_events(l: &Ledger<SqliteJournal>) -> Vec<Event> {
        l.journal()
            .events(&EventFilter {
                all_states: true,
                ..EventFilter::default()
            })
            .unwrap()
    }

    fn moves(l: &Ledger<SqliteJournal>, state: EventState) -> Vec<(String, String)> {
        all_events(l)
            .into_iter()
            .filter(|e| e.state == state)
            .map(|e| (e.key, e.to))
            .collect()
    }

    fn three_moves() -> Vec<(String, String)> {
        [
            ("1-1-a", "review"),
            ("1-2-b", "review"),
            ("2-1-d", "ready-for-dev"),
            ("epic-2", "in-progress"),
        ]
        .iter()
        .map(|(k, s)| ((*k).to_owned(), (*s).to_owned()))
        .collect()
    }

    #[test]
    fn a_batch_is_one_journal_commit_and_one_write() {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        let mut l = open(dir.path());
        let results = l.transition_all(&three(), &now()).unwrap();
        let applied: Vec<usize> = results.iter().map(|r| r.as_ref().unwrap().len()).collect();
        assert_eq!(applied, [1, 1, 2], "the third brings epic-2 along");
        assert_eq!((l.test.commits, l.test.writes), (1, 1));
        let events = all_events(&l);
        assert_eq!(events.len(), 4);
        assert!(
            events.iter().all(|e| e.group == events[0].group),
            "one group"
        );
        assert_eq!(moves(&l, EventState::Applied), three_moves());
        for (key, to) in three_moves() {
            assert_eq!(status(dir.path(), &key), to);
        }
        let story = fs::read_to_string(dir.path().join("stories/1-1-a.md")).unwrap();
        assert!(story.contains("Status: review"), "{story}");
        // The same batch again changes nothing: every key already has its status.
        let again = l.transition_all(&three(), &now()).unwrap();
        assert!(again.iter().all(|r| r.as_ref().is_ok_and(Vec::is_empty)));
        assert_eq!((l.test.commits, l.test.writes), (1, 1));
    }

    #[test]
    fn a_refused_request_leaves_the_others_applied() {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        let mut l = open(dir.path());
        let reqs = [
            req("1-1-a", Status::Review, Actor::Developer),
            req("1-3-c", Status::Done, Actor::Developer),
            req("9-9-missing", Status::Review, Actor::Developer),
            req("1-2-b", Status::Review, Actor::Developer),
        ];
        let results = l.transition_all(&reqs, &now()).unwrap();
        assert_eq!(results.len(), 4);
        assert_eq!(results[0].as_ref().unwrap().len(), 1);
        assert!(
            matches!(&results[1], Err(LedgerError::Refused { key, .. }) if key == "1-3-c"),
            "{:?}",
            results[1]
        );
        assert!(
            matches!(
                &results[2],
                Err(LedgerError::Edit(EditError::NotFound { .. }))
            ),
            "{:?}",
            results[2]
        );
        assert_eq!(results[3].as_ref().unwrap().len(), 1);
        assert_eq!((l.test.commits, l.test.writes), (1, 1));
        assert_eq!(status(dir.path(), "1-1-a"), "review");
        assert_eq!(status(dir.path(), "1-3-c"), "ready-for-dev");
        assert_eq!(status(dir.path(), "1-2-b"), "review");
        // A single refused transition is still the caller's error.
        let one = l.transition(&reqs[1], &now());
        assert!(matches!(one, Err(LedgerError::Refused { .. })), "{one:?}");
    }

    #[test]
    fn a_key_moved_twice_in_a_batch_takes_a_second_commit() {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        let mut l = open(dir.path());
        let reqs = [
            req("1-1-a", Status::Review, Actor::Developer),
            req("1-2-b", Status::Review, Actor::Developer),
            req("1-1-a", Status::InProgress, Actor::Reviewer),
            req("1-3-c", Status::InProgress, Actor::Developer),
        ];
        let results = l.transition_all(&reqs, &now()).unwrap();
        assert!(
            results
                .iter()
                .all(|r| r.as_ref().is_ok_and(|a| a.len() == 1))
        );
        assert_eq!((l.test.commits, l.test.writes), (2, 2));
        let events = all_events(&l);
        let groups: Vec<(&str, bool)> = events
            .iter()
            .map(|e| (e.key.as_str(), e.group == events[0].group))
            .collect();
        assert_eq!(
            groups,
            [
                ("1-1-a", true),
                ("1-2-b", true),
                ("1-1-a", false),
                ("1-3-c", false)
            ]
        );
        assert_eq!(status(dir.path(), "1-1-a"), "in-progress");
        assert!(moves(&l, EventState::Pending).is_empty());
    }

    #[test]
    fn a_batch_killed_before_the_write_is_abandoned_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        let mut l = open(dir.path());
        l.test.kill = Some((1, Kill::BeforeWrite));
        assert!(l.transition_all(&three(), &now()).is_err());
        drop(l);
        assert_eq!(
            fs::read_to_string(dir.path().join("sprint-status.yaml")).unwrap(),
            SPRINT
        );
        let mut l = open(dir.path());
        assert_eq!(moves(&l, EventState::Abandoned), three_moves());
        assert!(moves(&l, EventState::Pending).is_empty());
        // Made again, each move is applied once.
        let results = l.transition_all(&three(), &now()).unwrap();
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(moves(&l, EventState::Applied), three_moves());
    }

    #[test]
    fn a_batch_killed_after_the_write_is_applied_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        let mut l = open(dir.path());
        l.test.kill = Some((1, Kill::AfterWrite));
        assert!(l.transition_all(&three(), &now()).is_err());
        drop(l);
        let mut l = open(dir.path());
        assert_eq!(moves(&l, EventState::Applied), three_moves());
        assert!(moves(&l, EventState::Pending).is_empty());
        assert!(moves(&l, EventState::Abandoned).is_empty());
        // Reconciliation brought the story file along.
        let story = fs::read_to_string(dir.path().join("stories/1-1-a.md")).unwrap();
        assert!(story.contains("Status: review"), "{story}");
        // Made again, nothing moves twice.
        let results = l.transition_all(&three(), &now()).unwrap();
        assert!(results.iter().all(|r| r.as_ref().is_ok_and(Vec::is_empty)));
        assert_eq!(moves(&l, EventState::Applied), three_moves());
    }

    #[test]
    fn a_batch_killed_in_its_second_commit_keeps_the_first_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        let mut l = open(dir.path());
        l.test.kill = Some((2, Kill::BeforeWrite));
        let reqs = [
            req("1-1-a", Status::Review, Actor::Developer),
            req("1-2-b", Status::Review, Actor::Developer),
            req("1-1-a", Status::InProgress, Actor::Reviewer),
            req("1-3-c", Status::InProgress, Actor::Developer),
        ];
        let results = l.transition_all(&reqs, &now()).unwrap();
        assert_eq!(results[0].as_ref().unwrap().len(), 1);
        assert_eq!(results[1].as_ref().unwrap().len(), 1);
        assert!(
            matches!(results[2], Err(LedgerError::Write(_))),
            "{results:?}"
        );
        assert!(
            matches!(&results[3], Err(LedgerError::Stopped { key }) if key == "1-3-c"),
            "{results:?}"
        );
        drop(l);
        let l = open(dir.path());
        let first = [("1-1-a", "review"), ("1-2-b", "review")];
        let second = [("1-1-a", "in-progress"), ("1-3-c", "in-progress")];
        let owned = |m: &[(&str, &str)]| -> Vec<(String, String)> {
            m.iter()
                .map(|(k, s)| ((*k).to_owned(), (*s).to_owned()))
                .collect()
        };
        assert_eq!(moves(&l, EventState::Applied), owned(&first));
        assert_eq!(moves(&l, EventState::Abandoned), owned(&second));
        assert_eq!(status(dir.path(), "1-1-a"), "review");
        assert_eq!(status(dir.path(), "1-3-c"), "ready-for-dev");
    }

    #[test]
    fn a_step_leaves_no_temp_file_once_the_ledger_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        let mut l = open(dir.path());
        for to in [Status::Review, Status::InProgress, Status::Review] {
            let actor = if to == Status::Review {
                Actor::Developer
            } else {
                Actor::Reviewer
            };
            l.transition(&req("1-2-b", to, actor), &now()).unwrap();
        }
        drop(l);
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("baton-tmp"))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn backoff_doubles_to_its_cap_with_jitter_in_the_upper_half() {
        let mut seen = std::collections::BTreeSet::new();
        for attempt in 0..40 {
            let step = FIRST_BACKOFF
                .saturating_mul(1u32 << attempt.min(16))
                .min(MAX_BACKOFF);
            for _ in 0..20 {
                let wait = backoff(attempt);
                assert!(
                    wait >= step / 2 && wait <= step,
                    "{attempt}: {wait:?} vs {step:?}"
                );
                seen.insert(wait);
            }
        }
        assert!(seen.len() > 40, "jitter spreads the waits: {}", seen.len());
        let total: Duration = (0..MAX_ATTEMPTS).map(backoff).sum();
        assert!(total <= Duration::from_secs(3), "{total:?}");
    }
}
