//! Watching a status file (the sprint's `sprint-status.yaml`) for changes made outside a run,
//! as a pure machine: snapshots of `key → status` go in with the time they were read, and
//! debounced, deduplicated change events come out.
//!
//! - **Debounce**: a snapshot takes effect once no different one followed it for the debounce
//!   interval (500 ms), so a file rewritten twice in quick succession is one change.
//! - **Deduplication**: the same change (`key` to the same status) is reported at most once per
//!   30 s.
//! - **Cycling**: a key whose statuses go A → B → A → B more than 3 times is reported as
//!   cycling, once, and the debounce interval doubles (up to 8 s) while watching goes on.
//!
//! Writes are not this module's: every change baton makes goes through the ledger's
//! compare-and-swap.

use std::collections::{BTreeMap, HashMap};

/// The default debounce interval, in milliseconds.
pub const DEBOUNCE_MS: u64 = 500;
/// The deduplication window, in milliseconds.
pub const DEDUP_MS: u64 = 30_000;
/// Cycles (A → B → A) after which a key is reported as cycling.
pub const MAX_CYCLES: u32 = 3;
/// The longest debounce interval cycling raises it to, in milliseconds.
pub const MAX_DEBOUNCE_MS: u64 = 8_000;

/// Statuses by key.
pub type Snapshot = BTreeMap<String, String>;

/// What the watcher reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `key` went from `from` (none: new) to `to` (none: removed).
    Status {
        /// The key.
        key: String,
        /// Its status before.
        from: Option<String>,
        /// Its status now.
        to: Option<String>,
    },
    /// `key` keeps going back and forth; the debounce is now `debounce_ms`.
    Cycling {
        /// The key.
        key: String,
        /// The statuses it cycles through, in order.
        between: Vec<String>,
        /// The new debounce interval.
        debounce_ms: u64,
    },
}

/// The machine.
#[derive(Debug, Clone)]
pub struct Watcher {
    debounce_ms: u64,
    settled: Snapshot,
    pending: Option<(u64, Snapshot)>,
    reported: HashMap<(String, Option<String>), u64>,
    trail: HashMap<String, Vec<String>>,
    cycling_reported: HashMap<String, bool>,
}

impl Watcher {
    /// A watcher whose first snapshot is `initial`.
    pub fn new(initial: Snapshot) -> Watcher {
        Watcher {
            debounce_ms: DEBOUNCE_MS,
            settled: initial,
            pending: None,
            reported: HashMap::new(),
            trail: HashMap::new(),
            cycling_reported: HashMap::new(),
        }
    }

    /// The current debounce interval.
    pub fn debounce_ms(&self) -> u64 {
        self.debounce_ms
    }

    /// A snapshot read at `now_ms`.
    pub fn observe(&mut self, now_ms: u64, snapshot: Snapshot) {
        match &self.pending {
            Some((_, s)) if *s == snapshot => {}
            _ if snapshot == self.settled => self.pending = None,
            _ => self.pending = Some((now_ms, snapshot)),
        }
    }

    /// The changes that took effect by `now_ms`.
    pub fn tick(&mut self, now_ms: u64) -> Vec<Change> {
        let Some((since, _)) = &self.pending else {
            return Vec::new();
        };
        if now_ms.saturating_sub(*since) < self.debounce_ms {
            return Vec::new();
        }
        let Some((_, next)) = self.pending.take() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let keys: Vec<String> = self.settled.keys().chain(next.keys()).cloned().collect();
        let mut seen = std::collections::BTreeSet::new();
        for key in keys {
            if !seen.insert(key.clone()) {
                continue;
            }
            let (from, to) = (self.settled.get(&key).cloned(), next.get(&key).cloned());
            if from == to {
                continue;
            }
            let id = (key.clone(), to.clone());
            let dup = self
                .reported
                .get(&id)
                .is_some_and(|at| now_ms.saturating_sub(*at) < DEDUP_MS);
            self.reported.insert(id, now_ms);
            if let Some(t) = &to {
                out.extend(self.follow(&key, t));
            }
            if !dup {
                out.push(Change::Status { key, from, to });
            }
        }
        self.settled = next;
        out
    }

    fn follow(&mut self, key: &str, to: &str) -> Option<Change> {
        let trail = self.trail.entry(key.to_owned()).or_default();
        trail.push(to.to_owned());
        let n = trail.len();
        // Cycles: how often the trail returned to a status two steps back.
        let cycles = trail
            .windows(3)
            .filter(|w| w[0] == w[2] && w[0] != w[1])
            .count();
        if u32::try_from(cycles).unwrap_or(u32::MAX) > MAX_CYCLES
            && !self.cycling_reported.get(key).copied().unwrap_or(false)
        {
            self.cycling_reported.insert(key.to_owned(), true);
            self.debounce_ms = (self.debounce_ms * 2).min(MAX_DEBOUNCE_MS);
            let between = trail[n.saturating_sub(2)..].to_vec();
            return Some(Change::Cycling {
                key: key.to_owned(),
                between,
                debounce_ms: self.debounce_ms,
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(pairs: &[(&str, &str)]) -> Snapshot {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn status(key: &str, from: Option<&str>, to: Option<&str>) -> Change {
        Change::Status {
            key: key.into(),
            from: from.map(str::to_owned),
            to: to.map(str::to_owned),
        }
    }

    #[test]
    fn two_writes_within_the_debounce_are_one_change() {
        let mut w = Watcher::new(snap(&[("1-1-a", "backlog")]));
        w.observe(0, snap(&[("1-1-a", "ready-for-dev")]));
        w.observe(200, snap(&[("1-1-a", "in-progress")]));
        assert_eq!(w.tick(600), vec![]);
        assert_eq!(
            w.tick(700),
            vec![status("1-1-a", Some("backlog"), Some("in-progress"))]
        );
        assert_eq!(w.tick(5_000), vec![]);
        // A write undone before it settled is no change.
        w.observe(6_000, snap(&[("1-1-a", "review")]));
        w.observe(6_100, snap(&[("1-1-a", "in-progress")]));
        assert_eq!(w.tick(9_000), vec![]);
    }

    #[test]
    fn the_same_change_within_30_s_is_reported_once_and_keys_come_and_go() {
        let mut w = Watcher::new(snap(&[("k", "a")]));
        w.observe(0, snap(&[("k", "b")]));
        assert_eq!(w.tick(500).len(), 1);
        w.observe(1_000, snap(&[("k", "a")]));
        assert_eq!(w.tick(1_500), vec![status("k", Some("b"), Some("a"))]);
        w.observe(2_000, snap(&[("k", "b")]));
        assert_eq!(w.tick(2_500), vec![], "k → b again within 30 s");
        w.observe(40_000, snap(&[("k", "a"), ("n", "backlog")]));
        assert_eq!(
            w.tick(40_500),
            vec![
                status("k", Some("b"), Some("a")),
                status("n", None, Some("backlog"))
            ]
        );
        w.observe(41_000, snap(&[("k", "a")]));
        assert_eq!(w.tick(41_500), vec![status("n", Some("backlog"), None)]);
    }

    #[test]
    fn cycling_is_reported_once_and_slows_the_watch() {
        let mut w = Watcher::new(snap(&[("k", "a")]));
        let mut t = 0;
        let mut cycling = Vec::new();
        for i in 0..8 {
            t += 40_000;
            w.observe(t, snap(&[("k", if i % 2 == 0 { "b" } else { "a" })]));
            t += 10_000;
            for c in w.tick(t) {
                if let Change::Cycling { debounce_ms, .. } = c {
                    cycling.push(debounce_ms);
                }
            }
        }
        assert_eq!(cycling, vec![1_000], "once, with the debounce doubled");
        assert_eq!(w.debounce_ms(), 1_000);
    }
}
