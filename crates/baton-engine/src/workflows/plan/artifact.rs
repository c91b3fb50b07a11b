//! Checking a planning agent's answer before it is saved as the artifact: the document itself,
//! not a conversation about it.
//!
//! A real model follows its system prompt and may answer "Sure! I have drafted the PRD…" or end
//! with "Let me know if…". Such an answer is not written: it must open with the document's `#`
//! title, hold every second-level section of its template (placeholder headings such as
//! `## Epic 1: <title>` excepted), and end without a conversational line. The reason a check
//! fails is given back to the agent for its one retry.

/// Lines that open a conversation rather than a document, lowercased.
const CHATTY: &[&str] = &[
    "sure",
    "certainly",
    "of course",
    "absolutely",
    "great",
    "here is",
    "here's",
    "here are",
    "below is",
    "i have",
    "i've",
    "i will",
    "i'll",
    "i hope",
    "let me know",
    "would you like",
    "feel free",
    "shall i",
    "should i",
    "do you want",
    "if you'd like",
    "if you would like",
    "if you want",
    "paths written",
    "steps complete",
    "please review",
    "please confirm",
    "[c] continue",
];

fn chatty(line: &str) -> bool {
    let l = line
        .trim()
        .trim_start_matches(['*', '_', '>', ' '])
        .to_lowercase();
    CHATTY.iter().any(|c| {
        l.starts_with(c)
            && l[c.len()..]
                .chars()
                .next()
                .is_none_or(|ch| !ch.is_alphanumeric())
    })
}

fn normal(heading: &str) -> String {
    heading
        .trim()
        .trim_matches(['*', '_', ' '])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The template's required sections: its `## ` headings without placeholders.
pub fn required_sections(template: &str) -> Vec<String> {
    template
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(str::trim)
        .filter(|h| !h.contains(['<', '{', '[']))
        .filter(|h| {
            let l = h.to_lowercase();
            !["epic ", "story "].iter().any(|w| {
                l.strip_prefix(w)
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit() || c == 'n'))
            })
        })
        .map(str::to_owned)
        .collect()
}

/// Why an agent's answer is not the document its template asks for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotTheDocument {
    /// Nothing but blank lines.
    #[error("the answer is empty")]
    Empty,
    /// The first line is not the document's `#` title (shown up to 80 characters).
    #[error("it opens with `{0}` instead of the document's `#` title")]
    Opens(String),
    /// The template's `##` sections the answer lacks.
    #[error("it lacks the template's {} {}", sections_word(.0), section_list(.0))]
    Lacks(Vec<String>),
    /// The last prose line reads as a message to the reader (shown up to 80 characters).
    #[error("it ends with `{0}`, a message rather than part of the document")]
    Ends(String),
}

fn sections_word(sections: &[String]) -> &'static str {
    if sections.len() == 1 {
        "section"
    } else {
        "sections"
    }
}

fn section_list(sections: &[String]) -> String {
    sections
        .iter()
        .map(|s| format!("`## {s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks `body` (the answer without fences or frontmatter) against `template`; the reason it is
/// not the document otherwise.
pub fn check(template: &str, body: &str) -> Result<(), NotTheDocument> {
    let mut lines = body
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty());
    let Some(first) = lines.next() else {
        return Err(NotTheDocument::Empty);
    };
    if !first.starts_with("# ") {
        return Err(NotTheDocument::Opens(first.chars().take(80).collect()));
    }
    let mut in_fence = false;
    let mut headings = Vec::new();
    let mut last_prose = None;
    for l in body.lines() {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || t.is_empty() {
            continue;
        }
        if let Some(h) = t.strip_prefix("## ").or_else(|| t.strip_prefix("### ")) {
            headings.push(normal(h));
        }
        last_prose = Some(t);
    }
    let missing: Vec<String> = required_sections(template)
        .into_iter()
        .filter(|s| {
            let want = normal(s);
            !headings.iter().any(|h| h.starts_with(&want))
        })
        .collect();
    if !missing.is_empty() {
        return Err(NotTheDocument::Lacks(missing));
    }
    let structure =
        |l: &str| l.starts_with(['#', '|']) || ["- ", "* ", "+ "].iter().any(|m| l.starts_with(m));
    if let Some(last) = last_prose
        && !structure(last)
        && chatty(last)
    {
        return Err(NotTheDocument::Ends(last.chars().take(80).collect()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "# PRD: {project}\n\n## Goals\n\nx\n\n## Functional Requirements\n\n- FR1\n\n## Epic 1: <title>\n\n## Out of Scope\n";

    #[test]
    fn a_document_with_every_section_passes() {
        let body = "# PRD: tally\n\n## Goals\n\nCount.\n\n## Functional Requirements\n\n- FR1: count\n\n## Out of Scope (v1)\n\nNothing.\n";
        assert_eq!(check(TEMPLATE, body), Ok(()));
    }

    #[test]
    fn a_chatty_preamble_or_epilogue_and_missing_sections_are_named() {
        let pre = "Sure! I have drafted the PRD.\n\n# PRD: tally\n\n## Goals\n## Functional Requirements\n## Out of Scope\n";
        assert!(
            check(TEMPLATE, pre)
                .is_err_and(|e| e.to_string().contains("opens with `Sure! I have drafted"))
        );
        let post = "# PRD: tally\n\n## Goals\n## Functional Requirements\n## Out of Scope\n\nNone.\n\nLet me know if you want changes!\n";
        assert!(
            check(TEMPLATE, post).is_err_and(|e| e.to_string().contains("ends with `Let me know"))
        );
        let paths = "# PRD\n\n## Goals\n## Functional Requirements\n## Out of Scope\n\n**Paths written:** prd.md, steps complete.\n";
        assert!(check(TEMPLATE, paths).is_err_and(|e| e.to_string().contains("ends with")));
        let short = "# PRD: tally\n\n## Goals\n\nCount.\n";
        assert_eq!(
            check(TEMPLATE, short).map_err(|e| e.to_string()),
            Err(
                "it lacks the template's sections `## Functional Requirements`, `## Out of Scope`"
                    .to_owned()
            )
        );
        assert_eq!(
            check(TEMPLATE, "\n\n").map_err(|e| e.to_string()),
            Err("the answer is empty".to_owned())
        );
    }

    #[test]
    fn placeholders_are_not_required_and_prose_that_starts_alike_is_fine() {
        assert_eq!(
            required_sections(TEMPLATE),
            ["Goals", "Functional Requirements", "Out of Scope"]
        );
        let body = "# PRD\n\n## Goals\n## Functional Requirements\n## Out of Scope\n\nHereafter the scope is fixed.\n";
        assert_eq!(check(TEMPLATE, body), Ok(()));
    }

    #[test]
    fn every_planning_prompt_asks_for_the_document_as_the_answer() {
        use baton_core::plan::pipeline::PlanStep;
        for step in PlanStep::ALL.iter().filter(|s| s.uses_agent()) {
            let role = step.role();
            let prompt = baton_agent::discovery::BUNDLED
                .iter()
                .find(|(n, _)| *n == role)
                .map(|(_, t)| *t)
                .unwrap_or_else(|| panic!("no bundled {role}"));
            assert!(
                prompt.contains("**Your answer is the document itself**"),
                "{role}"
            );
            for stale in [
                "Paths written",
                "stop at each checkpoint",
                "ask the user to confirm",
                "stepsCompleted: [",
            ] {
                assert!(!prompt.contains(stale), "{role} still says `{stale}`");
            }
        }
    }
}
