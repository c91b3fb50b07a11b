//! The deterministic cross-reference check of a plan: what the PRD requires, what the
//! architecture decides and what the epics' stories cite and promise, held against each other.
//!
//! No model is involved. Findings: functional requirements no story covers (orphans, high; medium
//! when an epic claims them — its own text or the FR coverage map — but none of its stories does);
//! stories citing a requirement or decision that is defined nowhere (high); epics without stories
//! (medium); stories without acceptance criteria (medium); architecture decisions no story
//! references (low); non-functional requirements no story cites (low); headings that look like an
//! epic or story but do not parse (low). Each finding names the file and line to fix, and the list
//! is sorted by severity, then file, then line.

use super::docs::{Architecture, Epics, Prd, ReqId, ReqKind};
use serde::Serialize;
use std::collections::BTreeSet;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Blocks a plan from passing the readiness gate.
    High,
    /// Should be fixed before stories are built.
    Medium,
    /// Worth a look.
    Low,
}

impl Severity {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// A functional requirement no story cites.
    OrphanRequirement,
    /// A non-functional requirement no story cites.
    UncitedNonFunctional,
    /// A story cites an identifier the PRD or architecture does not define.
    DanglingReference,
    /// An architecture decision no story references.
    UnreferencedDecision,
    /// A story without acceptance criteria.
    NoAcceptanceCriteria,
    /// An epic without stories.
    EmptyEpic,
    /// A heading that looks like an epic or story but does not parse.
    MalformedHeading,
}

/// One problem, located.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// What it is.
    pub kind: FindingKind,
    /// The file to fix.
    pub file: String,
    /// The 1-based line to look at.
    pub line: usize,
    /// One sentence.
    pub message: String,
}

/// Cross-references a plan. The PRD and architecture are optional (a quick spec has neither);
/// citations of a kind whose defining document is absent are not judged.
pub fn check(prd: Option<&Prd>, arch: Option<&Architecture>, epics: &Epics) -> Vec<Finding> {
    let mut out = Vec::new();
    let cited: BTreeSet<ReqId> = epics
        .stories()
        .flat_map(|(_, s)| s.cites.iter().map(|(id, _)| *id))
        .collect();
    if let Some(prd) = prd {
        for r in &prd.requirements {
            if cited.contains(&r.id) {
                continue;
            }
            let claimed = epics
                .epics
                .iter()
                .any(|e| e.cites.iter().any(|(id, _)| *id == r.id))
                || epics.coverage.iter().any(|(id, _, _)| *id == r.id);
            let (severity, kind, what) = match r.id.kind {
                ReqKind::Fr if claimed => (
                    Severity::Medium,
                    FindingKind::OrphanRequirement,
                    "is claimed by an epic (or the FR coverage map) but cited by no story",
                ),
                ReqKind::Fr => (
                    Severity::High,
                    FindingKind::OrphanRequirement,
                    "is covered by no story",
                ),
                _ => (
                    Severity::Low,
                    FindingKind::UncitedNonFunctional,
                    "is cited by no story",
                ),
            };
            out.push(Finding {
                severity,
                kind,
                file: prd.path.clone(),
                line: r.line,
                message: format!("{} {what}", r.id),
            });
        }
    }
    if let Some(arch) = arch {
        for d in &arch.decisions {
            if !cited.contains(&d.id) {
                out.push(Finding {
                    severity: Severity::Low,
                    kind: FindingKind::UnreferencedDecision,
                    file: arch.path.clone(),
                    line: d.line,
                    message: format!(
                        "{} is referenced by no story (an unaddressed decision)",
                        d.id
                    ),
                });
            }
        }
    }
    for (epic, story) in epics.stories() {
        let mut seen = BTreeSet::new();
        for (id, line) in &story.cites {
            let defined = match id.kind {
                ReqKind::Fr | ReqKind::Nfr => {
                    prd.map(|p| p.requirements.iter().any(|r| r.id == *id))
                }
                ReqKind::Adr => arch.map(|a| a.decisions.iter().any(|d| d.id == *id)),
            };
            if defined == Some(false) && seen.insert(*id) {
                let source = if id.kind == ReqKind::Adr {
                    "the architecture"
                } else {
                    "the PRD"
                };
                out.push(Finding {
                    severity: Severity::High,
                    kind: FindingKind::DanglingReference,
                    file: story.file.clone(),
                    line: *line,
                    message: format!(
                        "story {} cites {id}, which {source} does not define",
                        story.number
                    ),
                });
            }
        }
        if story.criteria == 0 {
            out.push(Finding {
                severity: Severity::Medium,
                kind: FindingKind::NoAcceptanceCriteria,
                file: story.file.clone(),
                line: story.line,
                message: format!(
                    "story {} ({}) of epic {} has no acceptance criteria",
                    story.number, story.title, epic.number
                ),
            });
        }
    }
    for epic in &epics.epics {
        if epic.stories.is_empty() {
            out.push(Finding {
                severity: Severity::Medium,
                kind: FindingKind::EmptyEpic,
                file: epic.file.clone(),
                line: epic.line,
                message: format!("epic {} ({}) has no stories", epic.number, epic.title),
            });
        }
    }
    for (file, line, text) in &epics.malformed {
        out.push(Finding {
            severity: Severity::Low,
            kind: FindingKind::MalformedHeading,
            file: file.clone(),
            line: *line,
            message: format!(
                "`{text}` looks like an epic or story heading but is not `Epic N: title` / `Story N.M: title`"
            ),
        });
    }
    out.sort_by(|a, b| {
        (a.severity, &a.file, a.line, &a.message).cmp(&(b.severity, &b.file, b.line, &b.message))
    });
    out
}

/// Whether any finding is high severity (the readiness verdict is then at best CONCERNS).
pub fn has_high(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::High)
}

#[cfg(test)]
mod tests {
    use super::super::docs::{parse_architecture, parse_epics, parse_prd};
    use super::*;

    const PRD: &str = "# PRD\n\n## Functional Requirements\n\n- FR1: count words\n- FR2: count lines\n\n## Non-Functional Requirements\n\n- NFR1: fast\n";
    const ARCH: &str = "# Architecture\n\n## Decisions\n\n### ADR-001: pure functions\n";
    const ALIGNED: &str = "## Epic 1: Counting\n\n### Story 1.1: Words\n\nFR1, ADR-001, NFR1\n\n**Given** a\n**When** b\n**Then** c\n\n### Story 1.2: Lines\n\nFR2\n\n**Given** a\n**Then** c\n";

    fn run(prd: &str, arch: &str, epics: &str) -> Vec<(Severity, FindingKind, String, usize)> {
        let p = parse_prd("prd.md", prd);
        let a = parse_architecture("architecture.md", arch);
        let e = parse_epics("epics.md", epics);
        check(Some(&p), Some(&a), &e)
            .into_iter()
            .map(|f| (f.severity, f.kind, f.file, f.line))
            .collect()
    }

    #[test]
    fn an_aligned_plan_has_no_findings() {
        assert_eq!(run(PRD, ARCH, ALIGNED), []);
    }

    #[test]
    fn each_problem_is_found_with_file_and_line() {
        use FindingKind::*;
        use Severity::*;
        type Want = Vec<(Severity, FindingKind, &'static str, usize)>;
        let cases: &[(&str, &str, Want)] = &[
            (
                "orphan FR2",
                "## Epic 1: A\n### Story 1.1: W\nFR1 ADR-001 NFR1\n**Given** a\n",
                vec![(High, OrphanRequirement, "prd.md", 6)],
            ),
            (
                "dangling FR9",
                "## Epic 1: A\n### Story 1.1: W\nFR1 FR2 ADR-001 NFR1\nAlso FR9.\n**Given** a\n",
                vec![(High, DanglingReference, "epics.md", 4)],
            ),
            (
                "unreferenced ADR",
                "## Epic 1: A\n### Story 1.1: W\nFR1 FR2 NFR1\n**Given** a\n",
                vec![(Low, UnreferencedDecision, "architecture.md", 5)],
            ),
            (
                "no criteria",
                "## Epic 1: A\n### Story 1.1: W\nFR1 FR2 ADR-001 NFR1\n",
                vec![(Medium, NoAcceptanceCriteria, "epics.md", 2)],
            ),
            (
                "empty epic",
                "## Epic 1: A\n### Story 1.1: W\nFR1 FR2 ADR-001 NFR1\n**Given** a\n## Epic 2: B\n",
                vec![(Medium, EmptyEpic, "epics.md", 5)],
            ),
            (
                "FR2 claimed only by the epic",
                "## Epic 1: A\n**FRs covered:** FR1, FR2\n### Story 1.1: W\nFR1 ADR-001 NFR1\n**Given** a\n",
                vec![(Medium, OrphanRequirement, "prd.md", 6)],
            ),
            (
                "uncited NFR",
                "## Epic 1: A\n### Story 1.1: W\nFR1 FR2 ADR-001\n**Given** a\n",
                vec![(Low, UncitedNonFunctional, "prd.md", 10)],
            ),
        ];
        for (name, epics, want) in cases {
            let want: Vec<_> = want
                .iter()
                .map(|(s, k, f, l)| (*s, *k, (*f).to_owned(), *l))
                .collect();
            assert_eq!(run(PRD, ARCH, epics), want, "{name}");
        }
    }

    #[test]
    fn findings_sort_by_severity() {
        let found = run(PRD, ARCH, "## Epic 1: A\n### Story 1.1: W\nFR9\n");
        let sev: Vec<_> = found.iter().map(|f| f.0).collect();
        let mut sorted = sev.clone();
        sorted.sort();
        assert_eq!(sev, sorted);
        assert_eq!(sev.first(), Some(&Severity::High));
        assert_eq!(sev.last(), Some(&Severity::Low));
    }

    #[test]
    fn absent_documents_are_not_judged() {
        let e = parse_epics(
            "epics.md",
            "## Epic 1: A\n### Story 1.1: W\nFR9 ADR-007\n**Given** a\n",
        );
        assert_eq!(check(None, None, &e), []);
        assert!(!has_high(&check(None, None, &e)));
    }

    #[test]
    fn coverage_written_as_ranges_is_coverage() {
        let prd = "- FR1: a\n- FR2: b\n- FR3: c\n- FR4: d\n- NFR1: fast\n- NFR2: small\n";
        let epics = "## Requirements Inventory\n\nFR1-FR2: Counting — COMPLETE\n\n\
                     ## Epic 1: A\n**FRs covered:** FR3\u{2013}FR4, NFR1-NFR2\n\
                     ### Story 1.1: W\n**Given** a\n";
        let found = check(
            Some(&parse_prd("prd.md", prd)),
            None,
            &parse_epics("epics.md", epics),
        );
        assert!(
            found.iter().all(|f| f.severity != Severity::High),
            "{found:#?}"
        );
        // Without the ranges, all four are covered by no story.
        let bare = "## Epic 1: A\n### Story 1.1: W\n**Given** a\n";
        let high = check(
            Some(&parse_prd("prd.md", prd)),
            None,
            &parse_epics("epics.md", bare),
        )
        .into_iter()
        .filter(|f| f.message.ends_with("is covered by no story"))
        .count();
        assert_eq!(high, 4);
    }
}
