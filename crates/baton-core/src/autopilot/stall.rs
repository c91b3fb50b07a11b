//! When a validation loop should stop trying on its own.
//!
//! Each validation round reduces its issues to a hash ([`issue_set_hash`]: SHA-256 of the
//! issues, normalised, deduplicated and sorted, so order and spacing do not matter). The
//! [`Loop`] reads the rounds one by one and says what comes next:
//!
//! - a new issue set: fix and validate again;
//! - the same set as the round before is a stall: it calls one party, unless a party was already
//!   held on this very set (it survived the party), in which case a person decides;
//! - a set coming back after another (oscillation: A, B, A), the same set for the 3rd time in
//!   all (`MAX_SAME_ERROR_RETRIES`) without a party, or the 10th validation
//!   (`MAX_VALIDATION_ITERATIONS`): a person decides;
//! - no issues: done.
//!
//! Every path ends: a person, or done.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The most validation rounds of one workflow step.
pub const MAX_VALIDATION_ITERATIONS: u32 = 10;
/// The most times the same issue set may be seen.
pub const MAX_SAME_ERROR_RETRIES: u32 = 3;
/// Attempts after which a stall calls a party.
pub const PARTY_AFTER_ATTEMPTS: u32 = 2;

/// The hash of a round's issues, whatever their order, case or spacing.
pub fn issue_set_hash<S: AsRef<str>>(issues: &[S]) -> String {
    let set: BTreeSet<String> = issues
        .iter()
        .map(|i| {
            i.as_ref()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .filter(|i| !i.is_empty())
        .collect();
    let joined = set.into_iter().collect::<Vec<_>>().join("\n");
    let mut hex = String::with_capacity(64);
    for b in Sha256::digest(joined.as_bytes()) {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// What to do after a validation round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// No issues left.
    Done,
    /// Fix the issues and validate again.
    Fix,
    /// The same issues as before, early on: retry, trying remembered fixes first.
    Retry,
    /// A stall after enough attempts: call a party on this issue set.
    Party(String),
    /// Stop and ask a person, for this reason.
    Escalate(String),
}

/// The rounds of one validation loop.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loop {
    rounds: u32,
    last: Option<String>,
    seen: BTreeMap<String, u32>,
    failed_parties: BTreeSet<String>,
}

impl Loop {
    /// A loop that has seen nothing.
    pub fn new() -> Loop {
        Loop::default()
    }

    /// Rounds read so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Records that the party called on `hash` did not resolve it: that set never calls a
    /// party again.
    pub fn party_failed(&mut self, hash: &str) {
        self.failed_parties.insert(hash.to_owned());
    }

    /// Reads a round whose issues hash to `hash` (`issue_set_hash`; `empty` when it found none).
    pub fn observe(&mut self, hash: &str, empty: bool) -> Next {
        self.rounds += 1;
        if empty {
            self.last = None;
            return Next::Done;
        }
        let times = {
            let n = self.seen.entry(hash.to_owned()).or_insert(0);
            *n += 1;
            *n
        };
        let repeated = self.last.as_deref() == Some(hash);
        self.last = Some(hash.to_owned());
        if self.rounds >= MAX_VALIDATION_ITERATIONS {
            return Next::Escalate(format!(
                "{MAX_VALIDATION_ITERATIONS} validation rounds without passing"
            ));
        }
        if repeated && self.failed_parties.contains(hash) {
            return Next::Escalate("the issues survived a party held on them".into());
        }
        if times >= MAX_SAME_ERROR_RETRIES {
            return Next::Escalate(format!("the same issues {MAX_SAME_ERROR_RETRIES} times"));
        }
        if times > 1 && !repeated {
            return Next::Escalate("the issues oscillate: a set fixed earlier came back".into());
        }
        if !repeated {
            return Next::Fix;
        }
        // The same set twice in a row: the attempts on it are this set's sightings.
        if times >= PARTY_AFTER_ATTEMPTS {
            Next::Party(hash.to_owned())
        } else {
            Next::Retry
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_ignores_order_case_spacing_and_repeats() {
        let a = issue_set_hash(&["Missing NFR section", "FR-3 has no   acceptance"]);
        let b = issue_set_hash(&[
            "fr-3 has no acceptance",
            "missing nfr section",
            "Missing NFR section",
        ]);
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        assert_ne!(a, issue_set_hash(&["missing nfr section"]));
        assert_eq!(issue_set_hash::<&str>(&[]), issue_set_hash(&["  "]));
    }

    #[test]
    fn a_stall_retries_early_then_calls_one_party_then_a_person() {
        let (a, b) = (issue_set_hash(&["a"]), issue_set_hash(&["b"]));
        let mut l = Loop::new();
        assert_eq!(l.observe(&b, false), Next::Fix);
        assert_eq!(l.observe(&a, false), Next::Fix);
        // The same set twice in a row after two attempts: a party.
        assert_eq!(l.observe(&a, false), Next::Party(a.clone()));
        l.party_failed(&a);
        // Not again after a failed party: the third sighting ends it anyway.
        assert!(matches!(l.observe(&a, false), Next::Escalate(_)));
    }

    #[test]
    fn the_same_set_twice_calls_one_party_and_a_set_that_survives_it_goes_to_a_person() {
        let a = issue_set_hash(&["a"]);
        let mut l = Loop::new();
        assert_eq!(l.observe(&a, false), Next::Fix);
        assert_eq!(l.observe(&a, false), Next::Party(a.clone()));
        l.party_failed(&a);
        assert_eq!(
            l.observe(&a, false),
            Next::Escalate("the issues survived a party held on them".into())
        );
        let mut l = Loop::new();
        l.party_failed(&a);
        let b = issue_set_hash(&["b"]);
        assert_eq!(l.observe(&b, false), Next::Fix);
        assert_eq!(l.observe(&a, false), Next::Fix);
        assert_eq!(
            l.observe(&a, false),
            Next::Escalate("the issues survived a party held on them".into())
        );
    }

    #[test]
    fn every_sequence_calls_at_most_one_party_per_set() {
        let sets: Vec<String> = (0..3).map(|i| issue_set_hash(&[format!("s{i}")])).collect();
        // Every sequence of up to 10 rounds over 3 sets.
        for code in 0..3usize.pow(MAX_VALIDATION_ITERATIONS) {
            let mut l = Loop::new();
            let mut parties: Vec<String> = Vec::new();
            let mut c = code;
            let mut ended = false;
            for _ in 0..MAX_VALIDATION_ITERATIONS {
                let h = &sets[c % 3];
                c /= 3;
                match l.observe(h, false) {
                    Next::Party(p) => {
                        assert!(!parties.contains(&p), "{code}: a second party on one set");
                        parties.push(p.clone());
                        l.party_failed(&p);
                    }
                    Next::Escalate(_) | Next::Done => {
                        ended = true;
                        break;
                    }
                    Next::Fix | Next::Retry => {}
                }
            }
            // Each path reached a person (or passed) within the round limit.
            assert!(ended, "{code} did not end");
            assert!(parties.len() <= 3);
        }
    }

    #[test]
    fn oscillation_and_the_round_limit_end_the_loop() {
        let (a, b) = (issue_set_hash(&["a"]), issue_set_hash(&["b"]));
        let mut l = Loop::new();
        assert_eq!(l.observe(&a, false), Next::Fix);
        assert_eq!(l.observe(&b, false), Next::Fix);
        assert!(matches!(l.observe(&a, false), Next::Escalate(r) if r.contains("oscillate")));
        let mut l = Loop::new();
        for i in 1..MAX_VALIDATION_ITERATIONS {
            assert_eq!(
                l.observe(&issue_set_hash(&[format!("issue {i}")]), false),
                Next::Fix
            );
        }
        assert!(
            matches!(l.observe(&issue_set_hash(&["last"]), false), Next::Escalate(r) if r.contains("10 validation rounds"))
        );
        assert_eq!(Loop::new().observe("", true), Next::Done);
    }

    #[test]
    fn every_sequence_ends_within_the_round_limit() {
        // Whatever issue sets come, the loop escalates or is done by round 10.
        let sets: Vec<String> = (0..4).map(|i| issue_set_hash(&[format!("s{i}")])).collect();
        for seed in 0u64..500 {
            let mut l = Loop::new();
            let mut x = seed;
            let mut ended = false;
            for _ in 0..MAX_VALIDATION_ITERATIONS {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let pick = usize::try_from(x >> 62).unwrap_or(0);
                match l.observe(&sets[pick], false) {
                    Next::Escalate(_) | Next::Done => {
                        ended = true;
                        break;
                    }
                    Next::Party(h) => l.party_failed(&h),
                    Next::Fix | Next::Retry => {}
                }
            }
            assert!(ended, "seed {seed} did not end");
        }
    }
}
