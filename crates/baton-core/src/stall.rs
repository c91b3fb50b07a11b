//! Stall and loop detection: knowing when more rounds will not help.
//!
//! A fix/review loop has stalled when two reviews in a row report the same findings: the
//! developer's round changed nothing the reviewer cares about. [`findings_fingerprint`] reduces a
//! round's findings to a hash that ignores their order, the suggested fixes and cosmetic
//! differences in wording; [`StallDetector`] compares consecutive rounds. Separately,
//! [`LoopDetector`] counts how often a story re-enters a status, so a story bouncing between
//! `review` and `in-progress` is escalated after a fixed number of visits even when the findings
//! keep changing. Both are plain values: the engine owns them and may persist them.

use crate::verdict::Finding;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The hex SHA-256 of a set of findings, insensitive to their order and suggestions.
///
/// Each finding becomes `severity|file|line|issue` (file trimmed, line empty when absent, issue
/// lowercased with whitespace collapsed and trailing punctuation trimmed); the lines are sorted,
/// joined with `\n` and hashed. No findings hash the empty string.
pub fn findings_fingerprint(findings: &[Finding]) -> String {
    let mut lines: Vec<String> = findings.iter().map(normalise).collect();
    lines.sort();
    let digest = Sha256::digest(lines.join("\n").as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

fn normalise(f: &Finding) -> String {
    let issue = f
        .issue
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let issue = issue
        .trim_end_matches(|c: char| c.is_whitespace() || TRAILING_PUNCTUATION.contains(&c))
        .to_owned();
    let line = f.line.map(|l| l.to_string()).unwrap_or_default();
    format!("{}|{}|{}|{}", f.severity, f.file.trim(), line, issue)
}

/// Punctuation that ends a sentence or clause, trimmed from the end of an issue.
const TRAILING_PUNCTUATION: &[char] = &['.', ',', ';', ':', '!', '?', '…', '。'];

/// Spots two consecutive rounds with the same findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallDetector {
    last: Option<String>,
}

impl StallDetector {
    /// A detector that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a round's fingerprint; true when it equals the previous round's (A, A stalls;
    /// A, B, A does not).
    pub fn observe(&mut self, fingerprint: &str) -> bool {
        let stalled = self.last.as_deref() == Some(fingerprint);
        self.last = Some(fingerprint.to_owned());
        stalled
    }

    /// The fingerprint of the last round observed.
    pub fn last(&self) -> Option<&str> {
        self.last.as_deref()
    }
}

/// Counts how often each key entered each status, and trips at a limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopDetector {
    limit: u32,
    /// key → status → entries.
    counts: BTreeMap<String, BTreeMap<String, u32>>,
}

impl LoopDetector {
    /// The limit baton uses unless configured otherwise.
    pub const DEFAULT_LIMIT: u32 = 5;

    /// A detector that trips when a key enters the same status `limit` times. A limit of 0
    /// behaves like 1: the first entry trips.
    pub fn new(limit: u32) -> Self {
        LoopDetector {
            limit,
            counts: BTreeMap::new(),
        }
    }

    /// The limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Records that `key` entered `status`; true once it has done so `limit` times or more.
    pub fn enter(&mut self, key: &str, status: &str) -> bool {
        let count = self
            .counts
            .entry(key.to_owned())
            .or_default()
            .entry(status.to_owned())
            .or_default();
        *count = count.saturating_add(1);
        *count >= self.limit
    }

    /// How many times `key` entered `status`.
    pub fn count(&self, key: &str, status: &str) -> u32 {
        self.counts
            .get(key)
            .and_then(|m| m.get(status))
            .copied()
            .unwrap_or(0)
    }

    /// Forgets `key` (after a human resolved its escalation, say).
    pub fn reset(&mut self, key: &str) {
        self.counts.remove(key);
    }
}

impl Default for LoopDetector {
    fn default() -> Self {
        Self::new(Self::DEFAULT_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Severity;

    fn finding(severity: Severity, file: &str, line: Option<u32>, issue: &str) -> Finding {
        Finding {
            severity,
            file: file.into(),
            line,
            issue: issue.into(),
            suggestion: None,
        }
    }

    fn sample() -> Vec<Finding> {
        vec![
            finding(Severity::High, "src/a.rs", Some(3), "Missing check"),
            finding(Severity::Low, "src/b.rs", None, "Naming"),
            finding(
                Severity::Medium,
                "src/a.rs",
                Some(9),
                "No test for empty input",
            ),
        ]
    }

    #[test]
    fn fingerprint_is_lowercase_hex_sha256() {
        let fp = findings_fingerprint(&sample());
        assert_eq!(fp.len(), 64);
        assert!(fp.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
        // No findings hash the empty string.
        assert_eq!(
            findings_fingerprint(&[]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn fingerprint_ignores_order() {
        let mut reversed = sample();
        reversed.reverse();
        assert_eq!(
            findings_fingerprint(&sample()),
            findings_fingerprint(&reversed)
        );
    }

    #[test]
    fn fingerprint_ignores_suggestions_and_cosmetic_wording() {
        let mut other = sample();
        other[0].suggestion = Some("Add the check".into());
        other[1].suggestion = Some("Rename it".into());
        other[2].issue = "  no TEST for\n empty   input.  ".into();
        other[0].issue = "Missing check!".into();
        assert_eq!(
            findings_fingerprint(&sample()),
            findings_fingerprint(&other)
        );
    }

    #[test]
    fn different_findings_differ() {
        let base = findings_fingerprint(&sample());
        let mut other = sample();
        other[0].severity = Severity::Critical;
        assert_ne!(base, findings_fingerprint(&other));
        let mut other = sample();
        other[0].line = Some(4);
        assert_ne!(base, findings_fingerprint(&other));
        let mut other = sample();
        other[1].file = "src/c.rs".into();
        assert_ne!(base, findings_fingerprint(&other));
        let mut other = sample();
        other[2].issue = "No test for huge input".into();
        assert_ne!(base, findings_fingerprint(&other));
        assert_ne!(base, findings_fingerprint(&sample()[..2]));
    }

    #[test]
    fn stall_is_the_same_fingerprint_twice_in_a_row() {
        let mut d = StallDetector::new();
        assert!(!d.observe("a"));
        assert!(!d.observe("b"));
        assert!(!d.observe("a"), "A, B, A is not a stall");
        assert!(d.observe("a"), "A, A is a stall");
        assert!(d.observe("a"));
        assert_eq!(d.last(), Some("a"));
    }

    #[test]
    fn loop_detector_trips_at_five() {
        let mut d = LoopDetector::default();
        assert_eq!(d.limit(), 5);
        for _ in 0..4 {
            assert!(!d.enter("1-1-a", "in-progress"));
            assert!(!d.enter("1-2-b", "in-progress"));
            assert!(!d.enter("1-1-a", "review"));
        }
        assert_eq!(d.count("1-1-a", "in-progress"), 4);
        assert!(d.enter("1-1-a", "in-progress"));
        assert_eq!(d.count("1-1-a", "in-progress"), 5);
        assert!(!d.enter("1-1-a", "story-doc-review"));
        assert!(d.enter("1-1-a", "review"));
        assert!(d.enter("1-1-a", "in-progress"), "stays tripped");
        d.reset("1-1-a");
        assert_eq!(d.count("1-1-a", "in-progress"), 0);
        assert_eq!(d.count("1-2-b", "in-progress"), 4);
        assert_eq!(d.count("9-9-z", "done"), 0);
    }

    #[test]
    fn detectors_round_trip_through_json() {
        let mut d = LoopDetector::new(3);
        d.enter("1-1-a", "review");
        let back: LoopDetector = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        let mut s = StallDetector::new();
        s.observe("x");
        let back: StallDetector =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert!(back.clone().observe("x"));
    }
}
