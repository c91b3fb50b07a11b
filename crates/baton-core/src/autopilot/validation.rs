//! Reading a validation out of a skill's turn, so the autopilot can loop on it without a human.
//!
//! BMad's workflows report validation in three shapes, and a project may add its own:
//!
//! - **verdict**: a `Verdict: PASS` / `Verdict: FAIL` line (bold or not), with the issues as the
//!   bullet or numbered lines after it;
//! - **errors**: lines that open with `ERROR:`, `Error:`, `✗` or `❌`, one issue each;
//! - **checklist**: markdown checkboxes, an unchecked `- [ ] item` is an issue (two boxes at
//!   least, so a lone task box is not a checklist);
//! - **custom**: a configured regular expression whose first capture group (or whole match) on a
//!   line is an issue.
//!
//! An issue tagged `[blocking]` or `[critical]` counts as a blocking error and one tagged
//! `[major]` as a major issue, for BMad Builder's party thresholds ([`super::party::gate`]).
//! Text inside code fences is never read.

use regex::Regex;
use std::sync::LazyLock;

/// The shape a validation was reported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A pass/fail verdict line.
    Verdict,
    /// Error lines.
    Errors,
    /// A checklist.
    Checklist,
    /// A configured pattern.
    Custom,
}

impl Kind {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Verdict => "verdict",
            Kind::Errors => "errors",
            Kind::Checklist => "checklist",
            Kind::Custom => "custom",
        }
    }
}

/// A validation read from a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validation {
    /// Its shape.
    pub kind: Kind,
    /// Whether it passed (no issues, and no failing verdict).
    pub passed: bool,
    /// The issues, as written (tags removed).
    pub issues: Vec<String>,
    /// Issues tagged blocking or critical.
    pub blocking: u32,
    /// Issues tagged major.
    pub major: u32,
}

#[allow(clippy::expect_used)]
static VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\W*verdict\W*:\W*(pass(?:ed)?|fail(?:ed)?)\b").expect("a valid pattern")
});
#[allow(clippy::expect_used)]
static ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(.+?)\s*$").expect("a valid pattern")
});
#[allow(clippy::expect_used)]
static ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:[-*]\s+)?(?:ERROR:|Error:|✗|❌)\s*(.+?)\s*$").expect("a valid pattern")
});
#[allow(clippy::expect_used)]
static BOX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*[-*]\s+\[([ xX])\]\s+(.+?)\s*$").expect("a valid pattern"));
#[allow(clippy::expect_used)]
static TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*\**\[(blocking|critical|major|minor|low|medium|high)\]\**\s*")
        .expect("a valid pattern")
});

/// The lines of `text` outside code fences.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push(line);
        }
    }
    out
}

fn tally(kind: Kind, raw: Vec<String>, failed_verdict: bool) -> Validation {
    let (mut blocking, mut major) = (0, 0);
    let issues: Vec<String> = raw
        .into_iter()
        .map(|i| match TAG.captures(&i) {
            Some(c) => {
                match c[1].to_lowercase().as_str() {
                    "blocking" | "critical" => blocking += 1,
                    "major" => major += 1,
                    _ => {}
                }
                TAG.replace(&i, "").trim().to_owned()
            }
            None => i.trim().to_owned(),
        })
        .filter(|i| !i.is_empty())
        .collect();
    Validation {
        kind,
        passed: issues.is_empty() && !failed_verdict,
        issues,
        blocking,
        major,
    }
}

/// The validation `text` reports, if it reports one; `custom` patterns are tried last.
pub fn read(text: &str, custom: &[Regex]) -> Option<Validation> {
    let lines = prose(text);
    if let Some(at) = lines.iter().position(|l| VERDICT.is_match(l)) {
        let failed = VERDICT
            .captures(lines[at])
            .is_some_and(|c| c[1].to_lowercase().starts_with("fail"));
        let issues = lines[at + 1..]
            .iter()
            .filter_map(|l| ITEM.captures(l).map(|c| c[1].to_owned()))
            .collect();
        return Some(tally(Kind::Verdict, issues, failed));
    }
    let errors: Vec<String> = lines
        .iter()
        .filter_map(|l| ERROR.captures(l).map(|c| c[1].to_owned()))
        .collect();
    if !errors.is_empty() {
        return Some(tally(Kind::Errors, errors, false));
    }
    let boxes: Vec<(bool, String)> = lines
        .iter()
        .filter_map(|l| BOX.captures(l).map(|c| (&c[1] != " ", c[2].to_owned())))
        .collect();
    if boxes.len() >= 2 {
        let open = boxes.into_iter().filter(|(done, _)| !done).map(|(_, i)| i);
        return Some(tally(Kind::Checklist, open.collect(), false));
    }
    let mut found = Vec::new();
    for l in &lines {
        for re in custom {
            if let Some(c) = re.captures(l) {
                let m = c.get(1).or_else(|| c.get(0)).map(|m| m.as_str().to_owned());
                found.extend(m);
            }
        }
    }
    (!found.is_empty()).then(|| tally(Kind::Custom, found, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shape_is_read_with_its_issues() {
        let v = read(
            "Checked.\n**Verdict:** FAIL\n\n- [blocking] No NFR section\n- [major] FR3 untestable\n- typo",
            &[],
        )
        .unwrap();
        assert_eq!(v.kind, Kind::Verdict);
        assert!(!v.passed);
        assert_eq!(v.issues, ["No NFR section", "FR3 untestable", "typo"]);
        assert_eq!((v.blocking, v.major), (1, 1));
        let v = read("Verdict: PASS", &[]).unwrap();
        assert!(v.passed && v.issues.is_empty());
        // A failing verdict with no issues listed still fails.
        assert!(!read("verdict: failed", &[]).unwrap().passed);

        let v = read("ERROR: missing epic 2\n❌ story 1.3 has no AC\nok", &[]).unwrap();
        assert_eq!(v.kind, Kind::Errors);
        assert_eq!(v.issues, ["missing epic 2", "story 1.3 has no AC"]);

        let v = read(
            "- [x] FRs covered\n- [ ] NFRs covered\n- [ ] UX covered",
            &[],
        )
        .unwrap();
        assert_eq!(v.kind, Kind::Checklist);
        assert_eq!(v.issues, ["NFRs covered", "UX covered"]);
        let v = read("- [x] a\n- [X] b", &[]).unwrap();
        assert!(v.passed);

        let custom = [Regex::new(r"^GAP (.+)$").unwrap()];
        let v = read("GAP pricing\nGAP auth", &custom).unwrap();
        assert_eq!(v.kind, Kind::Custom);
        assert_eq!(v.issues, ["pricing", "auth"]);
    }

    #[test]
    fn prose_fences_and_lone_boxes_are_not_validations() {
        assert_eq!(read("All good, here is the plan.\n- step one", &[]), None);
        assert_eq!(read("```\nVerdict: FAIL\nERROR: x\n```", &[]), None);
        assert_eq!(read("- [ ] one task", &[]), None);
        assert_eq!(read("GAP x", &[]), None);
    }
}
