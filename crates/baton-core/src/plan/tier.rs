//! Suggesting a project tier (0–4) from the idea's wording and the codebase's size.
//!
//! Tiers scale the planning pipeline: 0–1 get a quick spec in place of brief, PRD and
//! architecture; 2 is the default pipeline; 3–4 the full pipeline with a mandatory readiness gate.
//! Keywords vote for a tier: `fix`, `bug`, `typo`, `patch` (and their plurals and tenses) → 0;
//! `small`, `minor`, `tweak` → 1; `platform`, `integration`, `complex system` → 3; `enterprise`,
//! `multi-tenant`, `compliance` → 4. When more than half the matched keywords vote for one tier,
//! that tier wins (high confidence when they all agree, medium otherwise); with no keyword, or no
//! majority, the suggestion is 2 with low confidence. A brownfield codebase of 500 source files or
//! more raises the tier by one (at most 4), and one of 2 000 or more lifts it to at least 3: a big
//! existing system is rarely changed by a quick spec.

use serde::Serialize;

/// Keyword forms and the tier each votes for. Two-word entries match consecutive words.
const KEYWORDS: &[(&str, u8)] = &[
    ("fix", 0),
    ("fixes", 0),
    ("fixed", 0),
    ("fixing", 0),
    ("bug", 0),
    ("bugs", 0),
    ("bugfix", 0),
    ("hotfix", 0),
    ("typo", 0),
    ("typos", 0),
    ("patch", 0),
    ("patches", 0),
    ("small", 1),
    ("minor", 1),
    ("tweak", 1),
    ("platform", 3),
    ("platforms", 3),
    ("integration", 3),
    ("integrations", 3),
    ("complex system", 3),
    ("complex systems", 3),
    ("enterprise", 4),
    ("multi-tenant", 4),
    ("multitenant", 4),
    ("compliance", 4),
];

/// Source files from which a brownfield codebase raises the tier by one.
pub const LARGE_CODEBASE: usize = 500;
/// Source files from which a brownfield codebase lifts the tier to at least 3.
pub const HUGE_CODEBASE: usize = 2000;

/// How sure the suggestion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Every matched keyword agreed.
    High,
    /// A majority agreed.
    Medium,
    /// No keyword, or no majority: the default.
    Low,
}

/// What the project looks like (as `baton init` detects it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Project {
    /// Existing code worth respecting.
    pub brownfield: bool,
    /// How many source files it has.
    pub source_files: usize,
}

/// The suggestion and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TierSuggestion {
    /// 0–4.
    pub tier: u8,
    /// Every signal that decided it: `"fix" → 0`, `brownfield, 812 source files → +1`.
    pub signals: Vec<String>,
    /// How sure.
    pub confidence: Confidence,
}

fn words(idea: &str) -> Vec<String> {
    idea.split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .map(|w| w.trim_matches('-').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Suggests a tier for `idea` in `project`.
pub fn suggest_tier(idea: &str, project: Project) -> TierSuggestion {
    let ws = words(idea);
    let mut votes: Vec<(String, u8)> = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        let pair = ws.get(i + 1).map(|next| format!("{} {next}", ws[i]));
        if let Some((k, t)) = pair
            .as_deref()
            .and_then(|p| KEYWORDS.iter().find(|(k, _)| *k == p))
        {
            votes.push(((*k).to_owned(), *t));
            i += 2;
            continue;
        }
        if let Some((k, t)) = KEYWORDS.iter().find(|(k, _)| *k == ws[i]) {
            votes.push(((*k).to_owned(), *t));
        }
        i += 1;
    }
    let mut signals: Vec<String> = votes
        .iter()
        .map(|(k, t)| format!("\"{k}\" → {t}"))
        .collect();
    let (mut tier, confidence) = if votes.is_empty() {
        signals.push("no sizing keyword → 2 (default)".to_owned());
        (2, Confidence::Low)
    } else {
        let best = (0..=4u8)
            .map(|t| (t, votes.iter().filter(|(_, v)| *v == t).count()))
            .max_by_key(|(_, n)| *n)
            .unwrap_or((2, 0));
        if best.1 * 2 > votes.len() {
            let c = if best.1 == votes.len() {
                Confidence::High
            } else {
                Confidence::Medium
            };
            (best.0, c)
        } else {
            signals.push("keywords disagree with no majority → 2 (default)".to_owned());
            (2, Confidence::Low)
        }
    };
    if project.brownfield && project.source_files >= HUGE_CODEBASE && tier < 3 {
        signals.push(format!(
            "brownfield, {} source files → at least 3",
            project.source_files
        ));
        tier = 3;
    } else if project.brownfield && project.source_files >= LARGE_CODEBASE && tier < 4 {
        signals.push(format!(
            "brownfield, {} source files → +1",
            project.source_files
        ));
        tier += 1;
    }
    TierSuggestion {
        tier,
        signals,
        confidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_table() {
        let green = Project::default();
        let cases: &[(&str, Project, u8, Confidence)] = &[
            ("Fix the typo in the login page", green, 0, Confidence::High),
            ("patch a bug in export", green, 0, Confidence::High),
            ("A small tweak to the footer", green, 1, Confidence::High),
            (
                "An integration platform for shops",
                green,
                3,
                Confidence::High,
            ),
            (
                "Rewrite the complex system of billing",
                green,
                3,
                Confidence::High,
            ),
            (
                "Enterprise compliance reporting",
                green,
                4,
                Confidence::High,
            ),
            ("A todo list app", green, 2, Confidence::Low),
            (
                "fix the bug in the platform integration",
                green,
                2,
                Confidence::Low,
            ),
            (
                "fix bugs and typos in the platform",
                green,
                0,
                Confidence::Medium,
            ),
            (
                "platform integration with a bug",
                green,
                3,
                Confidence::Medium,
            ),
            (
                "fix a typo",
                Project {
                    brownfield: true,
                    source_files: 800,
                },
                1,
                Confidence::High,
            ),
            (
                "A todo list app",
                Project {
                    brownfield: true,
                    source_files: 2500,
                },
                3,
                Confidence::Low,
            ),
            (
                "A todo list app",
                Project {
                    brownfield: true,
                    source_files: 40,
                },
                2,
                Confidence::Low,
            ),
            (
                "enterprise compliance platform",
                Project {
                    brownfield: true,
                    source_files: 900,
                },
                4,
                Confidence::Medium,
            ),
            (
                "A todo list app",
                Project {
                    brownfield: false,
                    source_files: 5000,
                },
                2,
                Confidence::Low,
            ),
        ];
        for (idea, project, tier, confidence) in cases {
            let s = suggest_tier(idea, *project);
            assert_eq!(
                (s.tier, s.confidence),
                (*tier, *confidence),
                "{idea}: {s:?}"
            );
            assert!(!s.signals.is_empty(), "{idea}");
        }
    }

    #[test]
    fn signals_name_the_matched_words() {
        let s = suggest_tier("Fix: the typo!", Project::default());
        assert_eq!(s.signals, ["\"fix\" → 0", "\"typo\" → 0"]);
        let s = suggest_tier(
            "a bug",
            Project {
                brownfield: true,
                source_files: 600,
            },
        );
        assert_eq!(
            s.signals.last().map(String::as_str),
            Some("brownfield, 600 source files → +1")
        );
    }

    #[test]
    fn words_inside_other_words_do_not_match() {
        assert_eq!(
            suggest_tier("prefix debugger patchwork", Project::default()).tier,
            2
        );
    }
}
