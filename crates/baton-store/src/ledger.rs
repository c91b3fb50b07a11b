//! The durable transition: sprint file and journal changed together, safely.
//!
//! One transition takes the sprint lock, reconciles anything a killed process left pending,
//! checks the move against baton-core's table, lets the epic follow its stories, records the
//! events as *pending* (one durable journal commit), writes the sprint file atomically with
//! compare-and-swap (one file flush), and marks the events *applied*. If the file changed
//! underneath, the events are abandoned and the whole step is planned again from the new file.
//! On the next start, a pending event is *applied* if the file shows it, *abandoned* if not, so
//! every transition is in the journal exactly once and the file always parses. The replaced
//! sprint file is removed on a thread of its own ([`crate::atomic::Reaper`]), and a story's file
//! is found through [`story_file::find_indexed`], so neither its removal nor a listing of the
//! stories folder is on a step's path.

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
use std::collections::HashMap;
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

    /// Makes one transition durable (plus the epic's follow-up, if any). Returns the changes
    /// written; empty if the key already had that status.
    pub fn transition(&mut self, req: &Request, now: &Now) -> Result<Vec<Applied>, LedgerError> {
        let _lock = FileLock::acquire(&self.opts.lock_path)?;
        for attempt in 0..MAX_ATTEMPTS {
            self.refresh()?;
            self.reconcile_locked()?;
            let (changes, events) = self.plan(req, now)?;
            if changes.is_empty() {
                return Ok(Vec::new());
            }
            let edit = EditOptions {
                write_extended: self.opts.write_extended,
            };
            self.doc.apply(&changes, now.stamp, edit)?;
            let ids = match self.journal.record_pending(&events) {
                Ok(ids) => ids,
                Err(e) => {
                    self.doc = SprintDoc::load(self.doc.path())?;
                    return Err(e.into());
                }
            };
            match self.doc.persist_with(&self.reaper) {
                Ok(()) => {
                    self.journal.mark_applied(&ids)?;
                    for (c, e) in changes.iter().zip(&events) {
                        self.sync_story(&c.key, e.from.as_deref())?;
                    }
                    return Ok(events
                        .into_iter()
                        .zip(ids)
                        .map(|(e, id)| Applied {
                            event_id: id,
                            key: e.key,
                            from: e.from.unwrap_or_default(),
                            to: e.to,
                            actor: e.actor,
                            forced: e.forced,
                        })
                        .collect());
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
                    return Err(LedgerError::Persist(e));
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
