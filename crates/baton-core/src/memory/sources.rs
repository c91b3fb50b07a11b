//! Lessons read out of what the work leaves behind: a retrospective's action items and lessons,
//! a review finding a fix round resolved, a person's decision, and the entries of a BMad
//! `.memlog.md` (the format BMad's `memlog.py` writes: a frontmatter block, then one
//! `- (type by who) text` line per entry). Each becomes a [`Draft`]; what is not a lesson is left
//! out: an idea, a question or an event of a memlog, an action item that says there is none
//! (`None — owner: scrum master`, `n/a`, `-`), and a finding the next review only words
//! differently ([`reworded`]).

use super::{Draft, Kind, Scope, Source, normalise};
use crate::verdict::Finding;

/// The action items and lessons of a retrospective document, as pattern memories.
///
/// They are the list items under a heading that names action items, lessons or takeaways
/// (any level, any case), up to the next heading of the same or a higher level. Each item's text
/// is taken as written, checkboxes and emphasis markers removed.
pub fn retro_drafts(markdown: &str, unit: &str) -> Vec<Draft> {
    let mut out = Vec::new();
    let mut inside: Option<usize> = None;
    let mut fence = false;
    for raw in markdown.lines() {
        let line = raw.trim_end();
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        if let Some(level) = heading_level(line) {
            let title = line[level..].trim().to_lowercase();
            if let Some(open) = inside
                && level > open
            {
                continue;
            }
            inside = ["action item", "lesson", "takeaway", "learned", "learnt"]
                .iter()
                .any(|w| title.contains(w))
                .then_some(level);
            continue;
        }
        if inside.is_none() {
            continue;
        }
        let Some(item) = list_item(line) else {
            continue;
        };
        let text = clean(item);
        if text.is_empty() || says_none(&text) {
            continue;
        }
        let mut d = Draft::new(Kind::Pattern, Source::Retrospective, text);
        d.unit = Some(unit.to_owned());
        out.push(d);
    }
    out
}

/// Whether an item only says there is nothing (`None`, `n/a`, `-`, `none — owner: scrum
/// master`, `Nothing (owner: SM)`): what follows a dash, a parenthesis or an `owner:` is who
/// would have owned it, not a lesson.
pub fn says_none(item: &str) -> bool {
    let lower = item.to_lowercase();
    let mut head = lower.as_str();
    for cut in [" — ", " – ", " - ", "—", "–", "(", "owner:", ";", ","] {
        if let Some(i) = head.find(cut)
            && i > 0
        {
            head = &head[..i];
        }
    }
    let head = head
        .trim()
        .trim_matches(|c: char| c.is_whitespace() || ".:!*_`\"'".contains(c));
    matches!(
        head,
        "" | "-"
            | "—"
            | "–"
            | "none"
            | "n/a"
            | "na"
            | "nil"
            | "nothing"
            | "no action items"
            | "no action item"
            | "no actions"
            | "none identified"
            | "none needed"
            | "none required"
            | "not applicable"
    )
}

fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    (1..=6)
        .contains(&hashes)
        .then_some(hashes)
        .filter(|&n| line[n..].starts_with(' ') || line.len() == n)
}

fn list_item(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if let Some(rest) = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| t.strip_prefix("+ "))
    {
        return Some(rest);
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let rest = &t[digits..];
        return rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") "));
    }
    None
}

fn clean(item: &str) -> String {
    let item = item
        .trim()
        .trim_start_matches("[ ]")
        .trim_start_matches("[x]")
        .trim_start_matches("[X]")
        .trim();
    item.replace("**", "").replace("__", "").trim().to_owned()
}

/// The problem–solution memory of a review finding a fix round resolved in `story`: scoped to
/// the finding's file, stronger for a blocking finding, and the same lesson (one memory made
/// stronger) when the same problem in the same file is found again in another story, whatever fix
/// is suggested. A finding about no file in particular teaches nothing file-bound: `None`.
pub fn finding_draft(finding: &Finding, story: &str) -> Option<Draft> {
    let file = finding.file.trim().trim_start_matches("./");
    if file.is_empty() {
        return None;
    }
    let issue = one_line(&finding.issue);
    let text = match finding.suggestion.as_deref().map(one_line) {
        Some(fix) if !fix.is_empty() => format!("Problem in {file}: {issue} Solution: {fix}"),
        _ => format!("Problem in {file}: {issue} A fix round resolved it."),
    };
    let mut d = Draft::new(Kind::ProblemSolution, Source::ReviewFinding, text);
    d.importance = if finding.severity.is_blocking() { 8 } else { 7 };
    d.unit = Some(story.to_owned());
    d.scope = Scope::files(vec![file.to_owned()]);
    d.same_as = Some(format!("finding|{file}|{}", normalise(&finding.issue)));
    Some(d)
}

/// Whether `now`, from the next review of the same story, is the low finding `before` in other
/// words: the same file, and the same line or mostly the same words (numbers and names such as
/// `issue-2` must not differ). Such a finding was not resolved, however its text changed. A
/// finding above low is the fix round's business and is judged by its text alone.
pub fn reworded(before: &Finding, now: &Finding) -> bool {
    use crate::verdict::Severity;
    let file = |f: &Finding| f.file.trim().trim_start_matches("./").to_owned();
    if before.severity != Severity::Low
        || now.severity != Severity::Low
        || file(before) != file(now)
    {
        return false;
    }
    if before.line.is_some() && before.line == now.line {
        return true;
    }
    let (a, b) = (content_words(&before.issue), content_words(&now.issue));
    let numbered = |text: &str| -> Vec<String> {
        text.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
            .map(str::to_owned)
            .collect()
    };
    let (na, nb) = (numbered(&before.issue), numbered(&now.issue));
    if !na.is_empty() && !nb.is_empty() && !na.iter().any(|w| nb.contains(w)) {
        return false;
    }
    let shared = a.intersection(&b).count();
    let smaller = a.len().min(b.len());
    smaller > 0 && shared * 5 >= smaller * 3
}

/// The words of a finding that carry its meaning, cut to their first six letters so that
/// `closed` and `closing` are one word.
fn content_words(text: &str) -> std::collections::BTreeSet<String> {
    const STOP: &[&str] = &[
        "the", "and", "for", "this", "that", "with", "not", "are", "was", "but", "its", "should",
        "could", "would", "from", "into", "than", "then", "when", "which", "there", "their",
        "have", "has", "does", "doesn", "isn", "can", "may", "might", "will", "any", "all", "one",
        "also", "here", "been", "being", "only", "very",
    ];
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && !STOP.contains(w))
        .map(|w| w.chars().take(6).collect())
        .collect()
}

fn one_line(s: &str) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.ends_with(['.', '!', '?']) || joined.is_empty() {
        joined
    } else {
        format!("{joined}.")
    }
}

/// The decision memory of a person's answer to an escalation with its reason: the choice and
/// why, nothing else. The question can be a whole checkpoint of a skill (pages of a draft): it is
/// the journal's record, not the lesson.
pub fn answer_decision(unit: Option<&str>, chosen: &str, why: &str) -> Draft {
    let chosen = chosen.split_whitespace().collect::<Vec<_>>().join(" ");
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut d = Draft::new(
        Kind::Decision,
        Source::Escalation,
        format!("Chose \"{chosen}\" because: {why}"),
    );
    d.unit = unit.map(str::to_owned);
    d
}

/// The preference a person showed by choosing another option than the recommended one, at
/// `importance`; scoped to the story's epic when the unit is a story (`3` of `3-1-login`).
pub fn override_preference(
    unit: Option<&str>,
    title: &str,
    chosen: &str,
    recommended: &str,
    importance: u8,
) -> Draft {
    let mut d = Draft::new(
        Kind::Preference,
        Source::HumanFeedback,
        format!(
            "When asked \"{title}\", the person chose \"{chosen}\" over the recommended \"{recommended}\"."
        ),
    );
    d.importance = importance;
    d.unit = unit.map(str::to_owned);
    d.scope.epic = unit
        .and_then(|k| k.split_once('-'))
        .map(|(e, _)| e)
        .filter(|e| !e.is_empty() && e.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_owned);
    d
}

/// One entry of a BMad memlog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemlogEntry {
    /// Its type (`decision`, `idea`, ...), when it has one.
    pub kind: Option<String>,
    /// Who it came from (`user`), when named.
    pub by: Option<String>,
    /// The entry.
    pub text: String,
}

/// Why a memlog cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemlogError {
    /// It does not start with a frontmatter block.
    #[error("a memlog starts with a `---` frontmatter block")]
    NoFrontmatter,
    /// The frontmatter is never closed.
    #[error("the memlog's frontmatter is not closed by a `---` line")]
    Unterminated,
}

/// The entries of a memlog, in order, read the way BMad's `memlog.py` reads its own file: the
/// frontmatter closes at the first line that is exactly `---`, and an entry is a line starting
/// with `- `, optionally tagged `(type)`, `(type by who)` or `(by who)`.
pub fn memlog_entries(text: &str) -> Result<Vec<MemlogEntry>, MemlogError> {
    let mut lines = text.lines();
    if lines.next() != Some("---") {
        return Err(MemlogError::NoFrontmatter);
    }
    if !lines.by_ref().any(|l| l == "---") {
        return Err(MemlogError::Unterminated);
    }
    Ok(lines
        .filter_map(|l| l.strip_prefix("- "))
        .map(parse_entry)
        .collect())
}

fn parse_entry(line: &str) -> MemlogEntry {
    let plain = MemlogEntry {
        kind: None,
        by: None,
        text: line.trim().to_owned(),
    };
    let Some(rest) = line.strip_prefix('(') else {
        return plain;
    };
    let Some((tag, text)) = rest.split_once(") ") else {
        return plain;
    };
    let (kind, by) = match tag.strip_prefix("by ") {
        Some(who) => (None, Some(who)),
        None => match tag.split_once(" by ") {
            Some((k, who)) => (Some(k), Some(who)),
            None => (Some(tag), None),
        },
    };
    MemlogEntry {
        kind: kind.map(str::to_owned),
        by: by.map(str::to_owned),
        text: text.trim().to_owned(),
    }
}

/// The memories in a memlog's entries: decisions and directions as decisions, insights,
/// lessons and patterns as patterns, preferences as preferences. Ideas, questions, notes and
/// events are the work's record, not lessons, and stay in the memlog.
pub fn memlog_drafts(entries: &[MemlogEntry], unit: &str) -> Vec<Draft> {
    memlog_lessons(entries, unit, "")
        .into_iter()
        .map(|(_, d)| d)
        .collect()
}

/// [`memlog_drafts`], each with its origin: the memlog `file`, the entry's type and its text
/// (case and spacing ignored). Importing an entry is done once per origin, so importing the same
/// memlog again changes nothing, and a new entry appended to it is the only one imported.
pub fn memlog_lessons(entries: &[MemlogEntry], unit: &str, file: &str) -> Vec<(String, Draft)> {
    entries
        .iter()
        .filter_map(|e| {
            let kind = match e.kind.as_deref()? {
                "decision" | "direction" => Kind::Decision,
                "insight" | "lesson" | "pattern" | "learning" => Kind::Pattern,
                "preference" => Kind::Preference,
                _ => return None,
            };
            let mut d = Draft::new(kind, Source::Memlog, e.text.clone());
            d.unit = Some(unit.to_owned());
            let origin = format!(
                "memlog|{file}|{}|{}",
                e.kind.as_deref().unwrap_or_default(),
                normalise(&e.text)
            );
            Some((origin, d))
        })
        .filter(|(_, d)| !d.text.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Severity;

    const RETRO: &str = "# Epic 1 retrospective\n\n## What went well\n- tests first\n\n\
        ## What did not\n- flaky clock\n\n## Action Items\n\n- [ ] **Inject the clock** in every \
        time-dependent test (owner: dev)\n1. Run migrations before seeding (owner: sm)\n\
        ### Detail\n- a sub-item counts too\n\n```md\n- not an item\n```\n## Next\n- ignored\n";

    #[test]
    fn retrospective_action_items_become_patterns() {
        let d = retro_drafts(RETRO, "epic-1-retrospective");
        let texts: Vec<&str> = d.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "Inject the clock in every time-dependent test (owner: dev)",
                "Run migrations before seeding (owner: sm)",
                "a sub-item counts too",
            ]
        );
        assert!(d.iter().all(|d| d.kind == Kind::Pattern
            && d.source == Source::Retrospective
            && d.scope == Scope::project()
            && d.unit.as_deref() == Some("epic-1-retrospective")));
    }

    #[test]
    fn lessons_headings_count_and_other_sections_do_not() {
        let d = retro_drafts(
            "## Lessons learned\n* keep PRs small\n## Risks\n- none\n",
            "r",
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].text, "keep PRs small");
        assert!(retro_drafts("## What went well\n- all\n", "r").is_empty());
    }

    fn finding(file: &str, severity: Severity, suggestion: Option<&str>) -> Finding {
        Finding {
            severity,
            file: file.into(),
            line: Some(3),
            issue: "The pool  is never closed".into(),
            suggestion: suggestion.map(str::to_owned),
        }
    }

    #[test]
    fn a_resolved_finding_is_a_problem_and_its_solution_for_its_file() {
        let d = finding_draft(
            &finding("./src/db.rs", Severity::High, Some("close it in Drop")),
            "1-1-a",
        )
        .unwrap();
        assert_eq!(d.kind, Kind::ProblemSolution);
        assert_eq!(d.importance, 8);
        assert_eq!(d.scope, Scope::files(vec!["src/db.rs".into()]));
        assert_eq!(
            d.text,
            "Problem in src/db.rs: The pool is never closed. Solution: close it in Drop."
        );
        let again = finding_draft(&finding("src/db.rs", Severity::Low, None), "2-1-b").unwrap();
        assert_eq!(again.importance, 7);
        assert_eq!(
            d.key(),
            again.key(),
            "the same problem in the same file is one lesson"
        );
        assert!(finding_draft(&finding(" ", Severity::High, None), "1-1-a").is_none());
    }

    #[test]
    fn answers_teach_a_decision_and_an_override_a_preference_in_its_epic() {
        let d = answer_decision(Some("2-1-a"), "accept", "tracked");
        assert_eq!((d.kind, d.source), (Kind::Decision, Source::Escalation));
        assert_eq!(d.text, "Chose \"accept\" because: tracked");
        let p = override_preference(Some("2-1-a"), "max rounds", "accept", "another round", 3);
        assert_eq!((p.kind, p.importance), (Kind::Preference, 3));
        assert_eq!(p.scope.epic.as_deref(), Some("2"));
        assert!(p.text.ends_with("over the recommended \"another round\"."));
        let plan = override_preference(Some("sdd:PLAN.md#3"), "t", "a", "b", 6);
        assert_eq!(plan.scope.epic, None);
    }

    const MEMLOG: &str = "---\ntopic: Onboarding\nupdated: 2026-06-07T14:22\n---\n\n\
        - (note) user picked techniques\n- (idea by user) skip the signup wall\n\
        - (insight) real data, pre-categorized, calms people\n- (decision) lead with one account\n\
        - (direction by coach) optimize for the anxious first-timer\n- (by coach) plain entry\n\
        - (event) session complete\n- untagged entry\n";

    #[test]
    fn memlog_entries_are_read_as_bmads_script_writes_them() {
        let e = memlog_entries(MEMLOG).unwrap();
        assert_eq!(e.len(), 8);
        assert_eq!(
            e[1],
            MemlogEntry {
                kind: Some("idea".into()),
                by: Some("user".into()),
                text: "skip the signup wall".into()
            }
        );
        assert_eq!(
            (e[5].kind.as_deref(), e[5].by.as_deref()),
            (None, Some("coach"))
        );
        assert_eq!(e[7].text, "untagged entry");
        assert_eq!(memlog_entries("no"), Err(MemlogError::NoFrontmatter));
        assert_eq!(
            memlog_entries("---\na: b\n"),
            Err(MemlogError::Unterminated)
        );
    }

    #[test]
    fn only_lessons_of_a_memlog_become_memories() {
        let d = memlog_drafts(&memlog_entries(MEMLOG).unwrap(), "bmad-brainstorming");
        let got: Vec<(Kind, &str)> = d.iter().map(|d| (d.kind, d.text.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (Kind::Pattern, "real data, pre-categorized, calms people"),
                (Kind::Decision, "lead with one account"),
                (Kind::Decision, "optimize for the anxious first-timer"),
            ]
        );
    }

    #[test]
    fn action_items_that_say_there_are_none_are_not_lessons() {
        for item in [
            "none — owner: scrum master",
            "None",
            "n/a",
            "N/A (owner: SM)",
            "-",
            "**None** - owner: Bob (Scrum Master)",
            "Nothing.",
            "No action items",
        ] {
            assert!(says_none(item), "{item}");
            let retro = format!("## Action Items\n\n- {item}\n- Inject the clock (owner: dev)\n");
            let d = retro_drafts(&retro, "epic-1-retrospective");
            assert_eq!(d.len(), 1, "{item}: {d:?}");
        }
        for item in [
            "Nonetheless test the clock",
            "None of the mocks may touch the network",
            "Add a NaN check",
        ] {
            assert!(!says_none(item), "{item}");
        }
    }

    #[test]
    fn a_finding_in_other_words_is_the_same_finding() {
        let f = |file: &str, line: Option<u32>, severity: Severity, issue: &str| Finding {
            severity,
            file: file.into(),
            line,
            issue: issue.into(),
            suggestion: None,
        };
        let low = Severity::Low;
        let before = f(
            "src/db.rs",
            Some(12),
            low,
            "The variable name `tmp` is unclear",
        );
        // The same line of a low finding, whatever the words.
        let moved = f(
            "./src/db.rs",
            Some(12),
            low,
            "Rename `tmp` to say what it holds",
        );
        assert!(reworded(&before, &moved));
        // Mostly the same words, the line moved.
        let words = f("src/db.rs", Some(20), low, "Unclear variable name tmp");
        assert!(reworded(&before, &words));
        // Another file, another number, another problem, or a finding above low, is not.
        let elsewhere = f(
            "src/web.rs",
            Some(12),
            low,
            "The variable name `tmp` is unclear",
        );
        assert!(!reworded(&before, &elsewhere));
        let one = f(
            "src/db.rs",
            None,
            low,
            "round 1 finds a new problem (issue-1x)",
        );
        let two = f(
            "src/db.rs",
            None,
            low,
            "round 2 finds a new problem (issue-2x)",
        );
        assert!(!reworded(&one, &two));
        let other = f("src/db.rs", Some(30), low, "Timeout is hard-coded");
        assert!(!reworded(&before, &other));
        let high = f(
            "src/db.rs",
            Some(4),
            Severity::High,
            "The pool is never closed",
        );
        let again = f(
            "src/db.rs",
            Some(4),
            Severity::High,
            "Pool never gets closed",
        );
        assert!(!reworded(&high, &again));
    }

    #[test]
    fn memlog_lessons_carry_their_file_and_entry_as_origin() {
        let e = memlog_entries(MEMLOG).unwrap();
        let a = memlog_lessons(&e, "bmad-brainstorming", "_bmad-output/b/.memlog.md");
        let b = memlog_lessons(&e, "bmad-brainstorming", "_bmad-output/b/.memlog.md");
        let other = memlog_lessons(&e, "bmad-brainstorming", "_bmad-output/c/.memlog.md");
        assert_eq!(a.len(), 3);
        assert_eq!(a, b);
        assert_ne!(a[0].0, other[0].0, "another memlog is another origin");
        assert_eq!(
            a[1].0,
            "memlog|_bmad-output/b/.memlog.md|decision|lead with one account"
        );
    }
}
