//! Review verdicts: parsed from the reviewer's answer, never guessed.
//!
//! The reviewer ends its answer with a fenced block whose info string is `baton-review` (the
//! older `superteam-json` is accepted too) holding
//! `{passed, findings: [{severity, file, line?, issue, suggestion?}], must_fix?, summary?}`
//! (DESIGN.md, "Review verdict"; the format is taught in `baton-agent/agents/reviewer.md`).
//! [`parse_review`] turns that answer into [`Verdict::Pass`], [`Verdict::Fail`] or
//! [`Verdict::Inconclusive`]: anything it cannot read with certainty (no block, bad JSON, a
//! missing field, an unknown severity, a pass that contradicts its own findings) is inconclusive
//! and names the problem, so the engine escalates instead of acting on a guess.
//!
//! [`Review::to_markdown`] renders a round of findings in BMad's 6.2.1+ `### Review Findings`
//! dialect (BMAD-FORMAT.md §3) for the story file.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Info strings that mark the verdict block (compared trimmed and case-insensitively).
pub const BLOCK_INFO: &[&str] = &["baton-review", "superteam-json"];

/// How serious a finding is. Ordered most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A task marked done but not done; data loss; a security hole; the build broken.
    Critical,
    /// An acceptance criterion missing or partial; a bug on a normal path.
    High,
    /// An unhandled edge case, missing tests, a File List gap.
    Medium,
    /// Style, naming, comments, docs. Never blocks.
    Low,
}

impl Severity {
    /// Every severity, most severe first.
    pub const ALL: [Severity; 4] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
    ];

    /// The lowercase name used in the verdict block.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }

    /// Parses a name case-insensitively, ignoring surrounding whitespace.
    pub fn parse(s: &str) -> Option<Severity> {
        let s = s.trim();
        Severity::ALL
            .into_iter()
            .find(|sev| sev.as_str().eq_ignore_ascii_case(s))
    }

    /// Whether a finding of this severity blocks a pass (critical, high, medium).
    pub fn is_blocking(self) -> bool {
        !matches!(self, Severity::Low)
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding of a review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// How serious it is.
    pub severity: Severity,
    /// The file it concerns, relative to the repository root (may be empty for a finding about
    /// the change as a whole).
    pub file: String,
    /// The line, when the reviewer could point to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// What is wrong.
    pub issue: String,
    /// How to fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// A well-formed review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    /// The reviewer's own verdict (consistent with the findings, or the review is inconclusive).
    pub passed: bool,
    /// Every finding, in the reviewer's order.
    pub findings: Vec<Finding>,
    /// One line per blocking finding, for the developer.
    #[serde(default)]
    pub must_fix: Vec<String>,
    /// The reviewer's summary.
    #[serde(default)]
    pub summary: String,
}

/// The outcome of reading a reviewer's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// The review passed: no blocking finding.
    Pass(Review),
    /// The review asks for changes.
    Fail(Review),
    /// The answer could not be read with certainty; the engine escalates.
    Inconclusive {
        /// What was wrong with the answer.
        reason: String,
    },
}

impl Verdict {
    /// The review, unless inconclusive.
    pub fn review(&self) -> Option<&Review> {
        match self {
            Verdict::Pass(r) | Verdict::Fail(r) => Some(r),
            Verdict::Inconclusive { .. } => None,
        }
    }

    fn inconclusive(reason: impl Into<String>) -> Verdict {
        Verdict::Inconclusive {
            reason: reason.into(),
        }
    }
}

impl Review {
    /// The number of blocking findings (critical, high and medium).
    pub fn blocking(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity.is_blocking())
            .count()
    }

    /// Renders this round as the body of a BMad 6.2.1+ `### Review Findings` section: a heading
    /// line `Round <n>: …` (no date, so the output is deterministic), then one checkbox item per
    /// finding. Blocking findings become open `[Review][Patch]` items (most severe first, the
    /// reviewer's order within a severity); low ones become ticked `[Review][Defer]` items marked
    /// `— deferred`. Text is folded onto one line so a finding never breaks the list.
    pub fn to_markdown(&self, round: u32) -> String {
        let blocking = self.blocking();
        let deferred = self.findings.len() - blocking;
        let outcome = if self.passed {
            "passed"
        } else {
            "changes requested"
        };
        let mut out =
            format!("Round {round}: {outcome} ({blocking} to patch, {deferred} deferred)");
        let summary = one_line(&self.summary);
        if !summary.is_empty() {
            out.push_str(" — ");
            out.push_str(&summary);
        }
        out.push('\n');
        let mut ordered: Vec<&Finding> = self.findings.iter().collect();
        ordered.sort_by_key(|f| f.severity);
        if !ordered.is_empty() {
            out.push('\n');
        }
        for f in ordered {
            let issue = one_line(&f.issue);
            let location = location(f);
            if f.severity.is_blocking() {
                out.push_str("- [ ] [Review][Patch] ");
                out.push_str(&issue);
                if let Some(s) = f.suggestion.as_deref().map(one_line)
                    && !s.is_empty()
                {
                    out.push_str(" — ");
                    out.push_str(&s);
                }
                out.push_str(&location);
            } else {
                out.push_str("- [x] [Review][Defer] ");
                out.push_str(&issue);
                out.push_str(&location);
                out.push_str(" — deferred");
            }
            out.push('\n');
        }
        out
    }
}

/// ` [file:line]`, ` [file]` or nothing.
fn location(f: &Finding) -> String {
    let file = one_line(&f.file);
    match (file.is_empty(), f.line) {
        (true, _) => String::new(),
        (false, Some(line)) => format!(" [{file}:{line}]"),
        (false, None) => format!(" [{file}]"),
    }
}

/// Collapses every run of whitespace (newlines included) into one space.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads the reviewer's answer. See the module docs for the rules.
pub fn parse_review(answer: &str) -> Verdict {
    let Some(body) = last_verdict_block(answer) else {
        return Verdict::inconclusive("no `baton-review` block");
    };
    let value: Value = match serde_json::from_str(&body) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::inconclusive(format!("`baton-review` block is not valid JSON: {e}"));
        }
    };
    let review = match review_from(&value) {
        Ok(r) => r,
        Err(reason) => return Verdict::inconclusive(reason),
    };
    let blocking = review.blocking();
    match (review.passed, blocking) {
        (true, 0) => Verdict::Pass(review),
        (true, 1) => Verdict::inconclusive("passed is true but 1 blocking finding"),
        (true, n) => Verdict::inconclusive(format!("passed is true but {n} blocking findings")),
        (false, _) => Verdict::Fail(review),
    }
}

/// A fence that opened a block: its character and length.
struct Fence {
    ch: char,
    len: usize,
}

/// If `line` opens a fenced block, the fence and its trimmed info string.
fn opening(line: &str) -> Option<(Fence, &str)> {
    let t = line.trim_start();
    let ch = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = t.chars().take_while(|&c| c == ch).count();
    if len < 3 {
        return None;
    }
    // The fence characters are ASCII, so `len` is also a byte offset.
    let info = t.get(len..)?.trim();
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((Fence { ch, len }, info))
}

/// Whether `line` closes a block opened by `fence`.
fn closes(line: &str, fence: &Fence) -> bool {
    let t = line.trim();
    t.chars().count() >= fence.len && t.chars().all(|c| c == fence.ch)
}

/// The body of the last top-level fenced block whose info string names a verdict block.
///
/// Fences follow CommonMark: 3 or more backticks or tildes; a block closes on a line of the same
/// character at least as long; an unclosed block runs to the end. Indentation is tolerated on
/// both fences. Fences inside another block are its content, so a quoted example never counts.
fn last_verdict_block(answer: &str) -> Option<String> {
    let mut found = None;
    let mut open: Option<(Fence, bool, Vec<&str>)> = None;
    for line in answer.lines() {
        match open.take() {
            None => {
                if let Some((fence, info)) = opening(line) {
                    let wanted = BLOCK_INFO.iter().any(|w| w.eq_ignore_ascii_case(info));
                    open = Some((fence, wanted, Vec::new()));
                }
            }
            Some((fence, wanted, mut body)) => {
                if closes(line, &fence) {
                    if wanted {
                        found = Some(body.join("\n"));
                    }
                } else {
                    body.push(line);
                    open = Some((fence, wanted, body));
                }
            }
        }
    }
    if let Some((_, true, body)) = open {
        found = Some(body.join("\n"));
    }
    found
}

fn review_from(value: &Value) -> Result<Review, String> {
    let Value::Object(obj) = value else {
        return Err("`baton-review` block is not a JSON object".to_owned());
    };
    let passed = match obj.get("passed") {
        None | Some(Value::Null) => return Err("`passed` is missing".to_owned()),
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`passed` is not true or false".to_owned()),
    };
    let findings = match obj.get("findings") {
        None | Some(Value::Null) => return Err("`findings` is missing".to_owned()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| finding_from(item).map_err(|e| format!("finding {}: {e}", i + 1)))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("`findings` is not an array".to_owned()),
    };
    let must_fix = match obj.get("must_fix") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or("`must_fix` holds something other than text")?,
        Some(_) => return Err("`must_fix` is not an array".to_owned()),
    };
    let summary = optional_text(obj, "summary")?.unwrap_or_default();
    Ok(Review {
        passed,
        findings,
        must_fix,
        summary,
    })
}

fn finding_from(value: &Value) -> Result<Finding, String> {
    let Value::Object(obj) = value else {
        return Err("not a JSON object".to_owned());
    };
    let severity = match obj.get("severity") {
        None | Some(Value::Null) => return Err("`severity` is missing".to_owned()),
        Some(Value::String(s)) => {
            Severity::parse(s).ok_or_else(|| format!("unknown severity `{s}`"))?
        }
        Some(other) => return Err(format!("unknown severity `{other}`")),
    };
    let file = optional_text(obj, "file")?.ok_or("`file` is missing")?;
    let issue = optional_text(obj, "issue")?
        .filter(|s| !s.trim().is_empty())
        .ok_or("`issue` is missing")?;
    let line = match obj.get("line") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(line_number(n).ok_or_else(|| bad_line(n))?),
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s.trim().parse::<u32>().map_err(|_| bad_line(s))?),
        Some(other) => return Err(bad_line(other)),
    };
    let suggestion = optional_text(obj, "suggestion")?.filter(|s| !s.trim().is_empty());
    Ok(Finding {
        severity,
        file,
        line,
        issue,
        suggestion,
    })
}

/// A JSON number that is a whole, non-negative line number (`12` or `12.0`).
fn line_number(n: &serde_json::Number) -> Option<u32> {
    if let Some(u) = n.as_u64() {
        return u32::try_from(u).ok();
    }
    let f = n.as_f64()?;
    if f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f) {
        // Whole and in range: the conversion is exact.
        return Some(f as u32);
    }
    None
}

fn bad_line(shown: impl fmt::Display) -> String {
    format!("`line` is not a line number: {shown}")
}

/// A field that may be absent or null, and is text when present.
fn optional_text(obj: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{field}` is not text")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn answer(body: &str) -> String {
        format!("Findings for humans...\n\n```baton-review\n{body}\n```\n")
    }

    fn reason(v: Verdict) -> String {
        match v {
            Verdict::Inconclusive { reason } => reason,
            other => panic!("expected inconclusive, got {other:?}"),
        }
    }

    const FAILING: &str = r#"{
  "passed": false,
  "findings": [
    {"severity": "critical", "file": "src/auth/login.rs", "line": 48, "issue": "Task 2 is marked [x] but no lockout code exists", "suggestion": "Implement the lockout counter"},
    {"severity": "High", "file": "src/auth/session.rs", "issue": "File List claims this file but the diff does not change it"},
    {"severity": "low", "file": "src/auth/login.rs", "line": 12, "issue": "login() has no doc comment", "suggestion": "Document the errors"}
  ],
  "must_fix": ["Implement account lockout", "Correct the File List"],
  "summary": "Lockout is claimed but absent."
}"#;

    #[test]
    fn a_passing_review_is_a_pass() {
        let body = r#"{"passed": true, "findings": [{"severity": "low", "file": "a.rs", "issue": "naming"}], "summary": "fine"}"#;
        let Verdict::Pass(r) = parse_review(&answer(body)) else {
            panic!("not a pass")
        };
        assert_eq!(r.blocking(), 0);
        assert_eq!(r.findings.len(), 1);
        assert!(r.must_fix.is_empty());
        assert_eq!(r.summary, "fine");
    }

    #[test]
    fn a_failing_review_is_a_fail_with_its_findings() {
        let Verdict::Fail(r) = parse_review(&answer(FAILING)) else {
            panic!("not a fail")
        };
        assert_eq!(r.blocking(), 2);
        assert_eq!(r.findings[0].severity, Severity::Critical);
        assert_eq!(r.findings[0].line, Some(48));
        assert_eq!(r.findings[1].severity, Severity::High);
        assert_eq!(r.findings[1].line, None);
        assert_eq!(r.findings[1].suggestion, None);
        assert_eq!(r.must_fix.len(), 2);
    }

    #[test]
    fn no_block_is_inconclusive() {
        assert_eq!(
            reason(parse_review("Looks good to me!")),
            "no `baton-review` block"
        );
        // A block with another info string does not count.
        assert_eq!(
            reason(parse_review(
                "```json\n{\"passed\": true, \"findings\": []}\n```"
            )),
            "no `baton-review` block"
        );
        assert_eq!(
            reason(parse_review("```baton-review extra\n{}\n```")),
            "no `baton-review` block"
        );
    }

    #[test]
    fn the_last_block_wins() {
        let text = format!(
            "Example:\n```baton-review\n{{\"passed\": true, \"findings\": []}}\n```\nReal:\n{}",
            answer(FAILING)
        );
        assert!(matches!(parse_review(&text), Verdict::Fail(_)));
        let text = format!(
            "{}\n```baton-review\n{{\"passed\": true, \"findings\": []}}\n```\n",
            answer(FAILING)
        );
        assert!(matches!(parse_review(&text), Verdict::Pass(_)));
    }

    #[test]
    fn a_block_quoted_inside_another_block_does_not_count() {
        let text =
            "````markdown\n```baton-review\n{\"passed\": true, \"findings\": []}\n```\n````\n";
        assert_eq!(reason(parse_review(text)), "no `baton-review` block");
    }

    #[test]
    fn superteam_json_is_accepted_case_insensitively() {
        let text = "```superteam-json\n{\"passed\": true, \"findings\": []}\n```";
        assert!(matches!(parse_review(text), Verdict::Pass(_)));
        let text = "```  Baton-Review  \n{\"passed\": true, \"findings\": []}\n```";
        assert!(matches!(parse_review(text), Verdict::Pass(_)));
    }

    #[test]
    fn tilde_and_long_fences_are_accepted() {
        let text = "~~~baton-review\n{\"passed\": false, \"findings\": []}\n~~~\n";
        assert!(matches!(parse_review(text), Verdict::Fail(_)));
        // A shorter fence inside a longer one is content; CRLF line ends are fine.
        let text =
            "`````baton-review\r\n{\"passed\": true,\r\n\"findings\": []}\r\n```\r\n`````\r\n";
        assert!(matches!(
            reason(parse_review(text)).as_str(),
            r if r.starts_with("`baton-review` block is not valid JSON")
        ));
        let text = "`````baton-review\r\n{\"passed\": true,\r\n\"findings\": []}\r\n`````\r\n";
        assert!(matches!(parse_review(text), Verdict::Pass(_)));
    }

    #[test]
    fn an_unclosed_block_runs_to_the_end() {
        let text = "```baton-review\n{\"passed\": true, \"findings\": []}\n";
        assert!(matches!(parse_review(text), Verdict::Pass(_)));
        let truncated = "```baton-review\n{\"passed\": true, \"find";
        assert!(reason(parse_review(truncated)).contains("not valid JSON"));
    }

    #[test]
    fn malformed_json_is_inconclusive() {
        let r = reason(parse_review(&answer(
            "{\"passed\": true, \"findings\": [],}",
        )));
        assert!(
            r.starts_with("`baton-review` block is not valid JSON: "),
            "{r}"
        );
        assert_eq!(
            reason(parse_review(&answer("[1, 2]"))),
            "`baton-review` block is not a JSON object"
        );
        assert!(reason(parse_review(&answer(""))).contains("not valid JSON"));
    }

    #[test]
    fn missing_or_mistyped_fields_are_inconclusive() {
        let cases = [
            (r#"{"findings": []}"#, "`passed` is missing"),
            (
                r#"{"passed": "yes", "findings": []}"#,
                "`passed` is not true or false",
            ),
            (r#"{"passed": true}"#, "`findings` is missing"),
            (
                r#"{"passed": true, "findings": {}}"#,
                "`findings` is not an array",
            ),
            (
                r#"{"passed": false, "findings": [{"severity": "low", "issue": "x"}]}"#,
                "finding 1: `file` is missing",
            ),
            (
                r#"{"passed": false, "findings": [{"severity": "low", "file": "a", "issue": "x"}, {"severity": "low", "file": "a"}]}"#,
                "finding 2: `issue` is missing",
            ),
            (
                r#"{"passed": false, "findings": [{"severity": "low", "file": "a", "issue": "  "}]}"#,
                "finding 1: `issue` is missing",
            ),
            (
                r#"{"passed": false, "findings": [{"file": "a", "issue": "x"}]}"#,
                "finding 1: `severity` is missing",
            ),
            (
                r#"{"passed": false, "findings": ["x"]}"#,
                "finding 1: not a JSON object",
            ),
            (
                r#"{"passed": false, "findings": [{"severity": "low", "file": "a", "issue": "x", "line": "twelve"}]}"#,
                "finding 1: `line` is not a line number: twelve",
            ),
            (
                r#"{"passed": false, "findings": [{"severity": "low", "file": "a", "issue": "x", "line": -3}]}"#,
                "finding 1: `line` is not a line number: -3",
            ),
            (
                r#"{"passed": false, "findings": [], "must_fix": "all"}"#,
                "`must_fix` is not an array",
            ),
            (
                r#"{"passed": false, "findings": [], "must_fix": [1]}"#,
                "`must_fix` holds something other than text",
            ),
            (
                r#"{"passed": false, "findings": [], "summary": 3}"#,
                "`summary` is not text",
            ),
        ];
        for (body, want) in cases {
            assert_eq!(reason(parse_review(&answer(body))), want, "{body}");
        }
    }

    #[test]
    fn an_unknown_severity_is_inconclusive() {
        let body = r#"{"passed": false, "findings": [{"severity": "blocker", "file": "a.rs", "issue": "x"}]}"#;
        assert_eq!(
            reason(parse_review(&answer(body))),
            "finding 1: unknown severity `blocker`"
        );
        let body =
            r#"{"passed": false, "findings": [{"severity": 2, "file": "a.rs", "issue": "x"}]}"#;
        assert_eq!(
            reason(parse_review(&answer(body))),
            "finding 1: unknown severity `2`"
        );
        for s in ["CRITICAL", " Medium ", "lOw"] {
            assert!(Severity::parse(s).is_some(), "{s}");
        }
    }

    #[test]
    fn a_pass_with_blocking_findings_is_contradictory() {
        let body = r#"{"passed": true, "findings": [
            {"severity": "medium", "file": "a.rs", "issue": "x"},
            {"severity": "high", "file": "b.rs", "issue": "y"},
            {"severity": "low", "file": "c.rs", "issue": "z"}]}"#;
        assert_eq!(
            reason(parse_review(&answer(body))),
            "passed is true but 2 blocking findings"
        );
        let body = r#"{"passed": true, "findings": [{"severity": "critical", "file": "a.rs", "issue": "x"}]}"#;
        assert_eq!(
            reason(parse_review(&answer(body))),
            "passed is true but 1 blocking finding"
        );
    }

    #[test]
    fn line_may_be_a_number_a_numeric_string_or_absent() {
        let body = r#"{"passed": false, "findings": [
            {"severity": "low", "file": "a", "issue": "x", "line": "42"},
            {"severity": "low", "file": "a", "issue": "x", "line": " 7 "},
            {"severity": "low", "file": "a", "issue": "x", "line": 9},
            {"severity": "low", "file": "a", "issue": "x", "line": 10.0},
            {"severity": "low", "file": "a", "issue": "x", "line": null},
            {"severity": "low", "file": "a", "issue": "x", "line": ""},
            {"severity": "low", "file": "a", "issue": "x"}]}"#;
        let Verdict::Fail(r) = parse_review(&answer(body)) else {
            panic!("not a fail")
        };
        let lines: Vec<Option<u32>> = r.findings.iter().map(|f| f.line).collect();
        assert_eq!(
            lines,
            [Some(42), Some(7), Some(9), Some(10), None, None, None]
        );
    }

    #[test]
    fn markdown_rendering_snapshot() {
        let Verdict::Fail(r) = parse_review(&answer(FAILING)) else {
            panic!("not a fail")
        };
        assert_eq!(
            r.to_markdown(2),
            "Round 2: changes requested (2 to patch, 1 deferred) — Lockout is claimed but absent.\n\
             \n\
             - [ ] [Review][Patch] Task 2 is marked [x] but no lockout code exists — Implement the lockout counter [src/auth/login.rs:48]\n\
             - [ ] [Review][Patch] File List claims this file but the diff does not change it [src/auth/session.rs]\n\
             - [x] [Review][Defer] login() has no doc comment [src/auth/login.rs:12] — deferred\n"
        );
    }

    #[test]
    fn markdown_orders_by_severity_and_folds_lines() {
        let r = Review {
            passed: true,
            findings: vec![
                Finding {
                    severity: Severity::Low,
                    file: String::new(),
                    line: None,
                    issue: "two\nlines".into(),
                    suggestion: None,
                },
                Finding {
                    severity: Severity::Medium,
                    file: "m.rs".into(),
                    line: Some(1),
                    issue: "edge".into(),
                    suggestion: Some("  ".into()),
                },
            ],
            must_fix: vec![],
            summary: String::new(),
        };
        assert_eq!(
            r.to_markdown(1),
            "Round 1: passed (1 to patch, 1 deferred)\n\
             \n\
             - [ ] [Review][Patch] edge [m.rs:1]\n\
             - [x] [Review][Defer] two lines — deferred\n"
        );
        let empty = Review {
            passed: true,
            findings: vec![],
            must_fix: vec![],
            summary: "Clean.".into(),
        };
        assert_eq!(
            empty.to_markdown(3),
            "Round 3: passed (0 to patch, 0 deferred) — Clean.\n"
        );
    }

    #[test]
    fn verdicts_serialise_with_a_tag() {
        let v = parse_review("nothing");
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(
            json,
            r#"{"verdict":"inconclusive","reason":"no `baton-review` block"}"#
        );
        let v = parse_review(&answer(FAILING));
        let back: Verdict = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back, v);
    }

    fn fenced_block() -> impl Strategy<Value = String> {
        let fence = (prop_oneof![Just('`'), Just('~')], 2usize..6)
            .prop_map(|(c, n)| c.to_string().repeat(n));
        let info = prop_oneof![
            Just("baton-review".to_owned()),
            Just("superteam-json".to_owned()),
            Just(" BATON-REVIEW ".to_owned()),
            Just("json".to_owned()),
            Just(String::new()),
            "[a-z`~ -]{0,12}",
        ];
        let body = prop_oneof![
            ".*",
            Just(FAILING.to_owned()),
            Just(r#"{"passed": true, "findings": []}"#.to_owned()),
            r#"\{"passed": (true|false|1|null), "findings": \[(\{"severity": "[a-zA-Z]{0,9}", "file": "[a-z./]{0,8}", "line": ("[0-9]{0,12}"|-?[0-9]{1,12}(\.[0-9])?|null), "issue": ".{0,10}"\},?){0,3}\]\}"#,
        ];
        let close = prop_oneof![
            Just(None),
            (prop_oneof![Just('`'), Just('~')], 2usize..6)
                .prop_map(|(c, n)| Some(c.to_string().repeat(n))),
        ];
        (fence, info, body, close).prop_map(|(fence, info, body, close)| {
            let mut s = format!("{fence}{info}\n{body}\n");
            if let Some(c) = close {
                s.push_str(&c);
                s.push('\n');
            }
            s
        })
    }

    proptest! {
        #[test]
        fn parse_review_never_panics_on_text(text in any::<String>()) {
            let _ = parse_review(&text);
        }

        #[test]
        fn parse_review_never_panics_on_fenced_blocks(
            parts in prop::collection::vec(prop_oneof![".{0,40}", fenced_block()], 0..6)
        ) {
            let text = parts.join("\n");
            if let Some(r) = parse_review(&text).review() {
                let _ = r.to_markdown(1);
            }
        }
    }
}
