//! The team's memory in a run, the same for every workflow: what a unit's agent is reminded of
//! before its step, and what the work teaches afterwards.
//!
//! [`Memory`] holds the embedded store and, when one is configured, an external backend behind
//! [`Degrading`]. Recall takes the memories whose scope fits the unit ([`About`]: its files, its
//! epic, its kind of step), ranks and cuts them to the token budget
//! ([`baton_core::memory::recall`]), appends them to the task as quoted data, and records which
//! went in. Learning stores a draft and mirrors it to the external backend. Neither ever fails a
//! run: an error of the memory is reported once as a notice and the run goes on without it.

use baton_core::memory::recall::{self, Query};
use baton_core::memory::{Draft, sources};
use baton_core::verdict::Finding;
use baton_store::memory::degrade::{CommandBackend, Degrading, Health};
use baton_store::memory::{Curated, MemoryError, MemoryStore, RecallRecord};
use std::sync::Mutex;

/// What a step is about, for recall.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct About {
    /// Files the unit touches or will touch, relative to the project root.
    pub files: Vec<String>,
    /// Its epic.
    pub epic: Option<String>,
    /// The kind of step (`dev`, `fix`, `review`, `plan:prd`, `sdd`, `team`).
    pub stage: String,
    /// Whether the agent reviews rather than builds.
    pub reviewer: bool,
    /// Words that say what the unit is about (its key, its title): they rank memories whose
    /// text matches them higher.
    pub words: String,
    /// The step opts out of recall.
    pub skip: bool,
}

/// What recall put into a task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recalled {
    /// The section appended to the task (empty: nothing).
    pub section: String,
    /// The memories in it, in order.
    pub ids: Vec<i64>,
}

/// The memory of a run.
pub struct Memory {
    store: Mutex<Box<dyn MemoryStore>>,
    external: Option<Mutex<Degrading<CommandBackend>>>,
    budget_tokens: usize,
    skip: Vec<String>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("budget_tokens", &self.budget_tokens)
            .field("external", &self.external.is_some())
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// `store`, recalling at most `budget_tokens` per task.
    pub fn new(store: Box<dyn MemoryStore>, budget_tokens: usize) -> Memory {
        Memory {
            store: Mutex::new(store),
            external: None,
            budget_tokens,
            skip: Vec::new(),
        }
    }

    /// Also writes to, and recalls from, `external`.
    pub fn with_external(mut self, external: Degrading<CommandBackend>) -> Memory {
        self.external = Some(Mutex::new(external));
        self
    }

    /// Steps of these kinds get no recall (`[memory] skip`).
    pub fn skipping(mut self, stages: Vec<String>) -> Memory {
        self.skip = stages;
        self
    }

    /// The store, for the front ends' own commands.
    pub fn with_store<T>(
        &self,
        f: impl FnOnce(&mut dyn MemoryStore) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let mut guard = self
            .store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(guard.as_mut())
    }

    /// The memories for a step about `about`, recorded as recalled into `unit` of `run_id`.
    pub fn recall(
        &self,
        run_id: &str,
        unit: &str,
        about: &About,
        now: i64,
    ) -> Result<Recalled, MemoryError> {
        if about.skip || self.budget_tokens == 0 || self.skip.contains(&about.stage) {
            return Ok(Recalled::default());
        }
        let query = Query {
            files: about.files.clone(),
            epic: about.epic.clone(),
            stage: about.stage.clone(),
            reviewer: about.reviewer,
            budget_tokens: self.budget_tokens,
        };
        let mut candidates = self.with_store(|s| s.candidates(&query, &about.words, now))?;
        if let Some(ext) = &self.external
            && let Ok(mut ext) = ext.lock()
        {
            candidates.extend(ext.recall(&query, &about.words, now.saturating_mul(1000)));
        }
        let chosen = recall::select(candidates, &query);
        let ids: Vec<i64> = chosen.iter().map(|c| c.memory.id).collect();
        if !ids.is_empty() {
            self.with_store(|s| {
                s.record_recall(&RecallRecord {
                    run_id: run_id.to_owned(),
                    unit: unit.to_owned(),
                    stage: about.stage.clone(),
                    memories: ids.clone(),
                    at: now,
                })
            })?;
        }
        Ok(Recalled {
            section: recall::render(&chosen, about.reviewer),
            ids,
        })
    }

    /// Stores `draft` (and sends it to the external backend, or queues it there), with every
    /// configured secret masked first: a memory is put in front of agents and may leave the
    /// machine.
    pub fn learn(&self, mut draft: Draft, now: i64) -> Result<Curated, MemoryError> {
        if let std::borrow::Cow::Owned(masked) = baton_core::secrets::redact(&draft.text) {
            draft.text = masked;
        }
        if let Some(ext) = &self.external
            && let Ok(mut ext) = ext.lock()
        {
            ext.write(&draft, now.saturating_mul(1000))?;
        }
        self.with_store(|s| s.remember(draft, now))
    }

    /// [`Memory::learn`] once per `origin` (what the draft was read from, such as a memlog
    /// entry's file and content): `None`, with nothing stored or sent, when that origin was
    /// learned before.
    pub fn learn_once(
        &self,
        mut draft: Draft,
        origin: &str,
        now: i64,
    ) -> Result<Option<Curated>, MemoryError> {
        if let std::borrow::Cow::Owned(masked) = baton_core::secrets::redact(&draft.text) {
            draft.text = masked;
        }
        let curated = self.with_store(|s| s.remember_once(draft.clone(), origin, now))?;
        if curated.is_some()
            && let Some(ext) = &self.external
            && let Ok(mut ext) = ext.lock()
        {
            ext.write(&draft, now.saturating_mul(1000))?;
        }
        Ok(curated)
    }

    /// Settles a review of `unit`: the findings of its previous review that this one no longer
    /// reports were resolved by the fix round between them, and each becomes a problem–solution
    /// memory for its file. Returns how many were learned.
    pub fn review_settled(
        &self,
        unit: &str,
        findings: &[Finding],
        now: i64,
    ) -> Result<usize, MemoryError> {
        let resolved = self.with_store(|s| s.settle_findings(unit, findings))?;
        let mut learned = 0;
        // A finding the new review words differently is still there: nothing was resolved.
        let resolved = resolved
            .iter()
            .filter(|f| !findings.iter().any(|now| sources::reworded(f, now)));
        for f in resolved {
            if let Some(d) = sources::finding_draft(f, unit) {
                self.learn(d, now)?;
                learned += 1;
            }
        }
        Ok(learned)
    }

    /// How the external backend is doing (`None`: there is none).
    pub fn external_health(&self, now: i64) -> Option<Result<Health, MemoryError>> {
        let ext = self.external.as_ref()?;
        let ext = ext.lock().ok()?;
        Some(ext.health(now.saturating_mul(1000)))
    }
}

/// Seconds since the Unix epoch of an RFC 3339 time (the clock's), or of the system clock.
pub fn unix_secs(rfc3339: &str) -> i64 {
    rfc3339
        .parse::<jiff::Timestamp>()
        .unwrap_or_else(|_| jiff::Timestamp::now())
        .as_second()
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::memory::{Kind, Scope, Source};
    use baton_core::verdict::Severity;
    use baton_store::memory::SqliteMemory;

    fn memory(budget: usize) -> Memory {
        Memory::new(Box::new(SqliteMemory::open_in_memory(100).unwrap()), budget)
    }

    fn about(files: &[&str]) -> About {
        About {
            files: files.iter().map(|s| (*s).to_owned()).collect(),
            stage: "dev".into(),
            ..About::default()
        }
    }

    #[test]
    fn a_resolved_finding_is_recalled_for_its_file_only() {
        let m = memory(300);
        let f = Finding {
            severity: Severity::High,
            file: "src/db.rs".into(),
            line: Some(4),
            issue: "The pool is never closed".into(),
            suggestion: Some("Close it in Drop".into()),
        };
        assert_eq!(
            m.review_settled("1-1-a", std::slice::from_ref(&f), 10)
                .unwrap(),
            0
        );
        assert_eq!(m.review_settled("1-1-a", &[], 20).unwrap(), 1);
        let hit = m.recall("r", "1-2-b", &about(&["src/db.rs"]), 30).unwrap();
        assert_eq!(hit.ids.len(), 1);
        assert!(
            hit.section.contains("The pool is never closed"),
            "{}",
            hit.section
        );
        let miss = m.recall("r", "1-3-c", &about(&["src/web.rs"]), 30).unwrap();
        assert_eq!(miss, Recalled::default());
        let recorded = m.with_store(|s| s.recalls("1-2-b")).unwrap();
        assert_eq!(recorded[0].memories, hit.ids);
        assert!(m.with_store(|s| s.recalls("1-3-c")).unwrap().is_empty());
    }

    #[test]
    fn a_secret_never_reaches_the_memory() {
        baton_core::secrets::register(["sk-memory-test-0123456789"]);
        let m = memory(300);
        let id = m
            .learn(
                Draft::new(
                    Kind::Preference,
                    Source::HumanFeedback,
                    "use the key sk-memory-test-0123456789 for staging",
                ),
                1,
            )
            .unwrap()
            .id();
        let stored = m.with_store(|s| s.get(id)).unwrap().unwrap();
        assert!(!stored.text.contains("sk-memory-test"), "{}", stored.text);
    }

    #[test]
    fn steps_that_opt_out_get_nothing() {
        let m = memory(300).skipping(vec!["review".into()]);
        m.learn(
            Draft::new(Kind::Pattern, Source::HumanFeedback, "keep it small"),
            1,
        )
        .unwrap();
        assert_eq!(m.recall("r", "u", &about(&[]), 2).unwrap().ids.len(), 1);
        let mut skip = about(&[]);
        skip.skip = true;
        assert!(m.recall("r", "u", &skip, 2).unwrap().ids.is_empty());
        let mut review = about(&[]);
        review.stage = "review".into();
        assert!(m.recall("r", "u", &review, 2).unwrap().ids.is_empty());
        assert!(
            memory(0)
                .recall("r", "u", &about(&[]), 2)
                .unwrap()
                .ids
                .is_empty()
        );
    }

    #[test]
    fn an_unreachable_external_backend_never_fails_learning_or_recall() {
        let dir = tempfile::tempdir().unwrap();
        let queue = baton_store::memory::queue::WriteQueue::new(dir.path().join("q"));
        let ext = Degrading::new(
            CommandBackend::new(
                vec!["/nonexistent/bridge".into()],
                std::time::Duration::from_secs(1),
            ),
            queue.clone(),
            Box::new(|_| {}),
        );
        let m = memory(300).with_external(ext);
        for i in 0..120 {
            let mut d = Draft::new(Kind::Pattern, Source::HumanFeedback, format!("lesson {i}"));
            d.scope = Scope::project();
            m.learn(d, 100).unwrap();
        }
        assert_eq!(queue.len().unwrap(), 100);
        assert!(!m.recall("r", "u", &about(&[]), 101).unwrap().ids.is_empty());
        assert!(matches!(
            m.external_health(101),
            Some(Ok(Health::Degraded { queued: 100, .. }))
        ));
    }

    #[test]
    fn a_finding_the_next_review_only_rewords_is_not_learned_as_resolved() {
        let m = memory(300);
        let low = |line: u32, issue: &str| Finding {
            severity: Severity::Low,
            file: "src/db.rs".into(),
            line: Some(line),
            issue: issue.into(),
            suggestion: Some("rename it".into()),
        };
        m.review_settled(
            "1-1-a",
            &[low(12, "The variable name `tmp` is unclear")],
            10,
        )
        .unwrap();
        let reworded = [low(12, "Rename `tmp` so it says what it holds")];
        assert_eq!(m.review_settled("1-1-a", &reworded, 20).unwrap(), 0);
        assert_eq!(m.review_settled("1-1-a", &reworded, 25).unwrap(), 0);
        // Gone for real in the round after: now it was resolved.
        assert_eq!(m.review_settled("1-1-a", &[], 30).unwrap(), 1);
    }

    #[test]
    fn a_memlog_entry_is_learned_once() {
        let m = memory(300);
        let d = Draft::new(Kind::Decision, Source::Memlog, "lead with one account");
        assert!(
            m.learn_once(d.clone(), "memlog|x|decision|lead", 1)
                .unwrap()
                .is_some()
        );
        assert!(
            m.learn_once(d, "memlog|x|decision|lead", 2)
                .unwrap()
                .is_none()
        );
        let all = m.with_store(|s| s.list(&Default::default())).unwrap();
        assert_eq!((all.len(), all[0].strength), (1, 1));
    }
}
