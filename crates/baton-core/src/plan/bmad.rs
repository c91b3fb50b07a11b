//! BMad's own reading of an epics document for sprint planning, ported rule for rule from
//! `sprint_plan.py parse_epics` (BMad 6.12, `bmm-skills/plan/bmad-sprint-planning/scripts/`), so
//! that `baton sprint-plan` writes the keys, in the order, that BMad's `generate` writes.
//!
//! The rules: the text is split into lines as Python's `str.splitlines` splits them; fenced code
//! blocks (```` ``` ```` or `~~~`, at most three spaces in) are skipped; an epic heading is
//! `#`–`###` "Epic N[:] title", a story heading `##`–`####` "Story N.M[a-z]?[:] title" (both
//! case-insensitive, the title's closing `#`s dropped); a story belongs to the epic its own number
//! names, wherever it is written; its key is `N-M-slug`, the slug lowercase with every run of
//! characters that are not letters, digits or `_` turned into one `-` (combining marks are not
//! letters to Python, so a Devanagari vowel sign splits a word), trimmed, cut at 60 characters,
//! and, when nothing is left, the first 8 hex digits of the title's SHA-256; a key met twice is
//! kept once and the repeat reported; epics come out in numeric order (an Epic 0 written last
//! comes first), stories in the order they are written. Headings that mention an epic or a story
//! but fail the patterns are reported, as BMad warns about them. One difference is deliberate:
//! numbers are read in ASCII digits only (Python would also take other scripts' digits).

use regex::Regex;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::LazyLock;

// The patterns are literals checked by the tests below; a failure to compile cannot happen at run
// time, and `never()` keeps the crate free of `expect`.
fn compiled(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|_| never())
}

fn never() -> Regex {
    // An empty alternation that matches nothing.
    Regex::new(r"[^\s\S]").unwrap_or_else(|_| unreachable!("a fixed pattern"))
}

static EPIC_RE: LazyLock<Regex> =
    LazyLock::new(|| compiled(r"(?i)^#{1,3}\s*Epic\s+([0-9]+)\s*:?\s*(.*?)\s*#*\s*$"));
static STORY_RE: LazyLock<Regex> = LazyLock::new(|| {
    compiled(r"(?i)^#{2,4}\s*Story\s+([0-9]+)\.([0-9]+[a-z]?)\s*:?\s*(.*?)\s*#*\s*$")
});
static SUSPECT_RE: LazyLock<Regex> =
    LazyLock::new(|| compiled(r"(?i)^#{1,4}\s.*\b(?:epic|story)\b"));
static FENCE_RE: LazyLock<Regex> = LazyLock::new(|| compiled(r"^\s{0,3}(?:```|~~~)"));
// Python's `\w` on `str`: letters (L*), numbers (N*) and `_`; marks (M*) are not word characters.
static NON_WORD: LazyLock<Regex> = LazyLock::new(|| compiled(r"[^\p{L}\p{N}_]+"));

/// A story heading: its epic's number, the story number as written after the dot (`6a`) and the
/// title (closing `#`s and blanks dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoryHeading {
    /// The epic number.
    pub epic: u64,
    /// The story part as written (`6a`, `01`).
    pub story: String,
    /// The title.
    pub title: String,
}

impl StoryHeading {
    /// The sprint-status key, `N-M-slug`.
    pub fn key(&self) -> String {
        format!("{}-{}-{}", self.epic, self.story, slug(&self.title))
    }
}

/// Reads `line` as an epic heading: the epic number.
pub fn epic_heading(line: &str) -> Option<u64> {
    EPIC_RE.captures(line)?.get(1)?.as_str().parse().ok()
}

/// Reads `line` as a story heading.
pub fn story_heading(line: &str) -> Option<StoryHeading> {
    let c = STORY_RE.captures(line)?;
    Some(StoryHeading {
        epic: c.get(1)?.as_str().parse().ok()?,
        story: c.get(2)?.as_str().to_owned(),
        title: c.get(3)?.as_str().to_owned(),
    })
}

/// BMad's slug of a title: lowercase, each run of non-word characters → `-`, trimmed, at most 60
/// characters; an 8-hex SHA-256 prefix of the title when nothing is left.
pub fn slug(text: &str) -> String {
    let lower = text.to_lowercase();
    let dashed = NON_WORD.replace_all(&lower, "-");
    let trimmed = dashed.trim_matches('-');
    let cut: String = trimmed.chars().take(60).collect();
    let cut = cut.trim_matches('-');
    if cut.is_empty() {
        let d = Sha256::digest(text.as_bytes());
        return d.iter().take(4).map(|b| format!("{b:02x}")).collect();
    }
    cut.to_owned()
}

/// `text` split into lines the way Python's `str.splitlines` splits it: at `\n`, `\r`, `\r\n`,
/// `\v`, `\f`, `\x1c`–`\x1e`, `\u{85}`, `\u{2028}` and `\u{2029}`.
pub fn splitlines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let brk = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !brk {
            continue;
        }
        out.push(&text[start..i]);
        let mut next = i + c.len_utf8();
        if c == '\r'
            && let Some(&(j, '\n')) = chars.peek()
        {
            chars.next();
            next = j + 1;
        }
        start = next;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// A story of the plan: its key and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedStory {
    /// `N-M-slug`.
    pub key: String,
    /// The file, as the caller named it.
    pub file: String,
    /// The heading's 1-based line.
    pub line: usize,
}

/// A story heading whose key was already taken: BMad keeps the first and warns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The key.
    pub key: String,
    /// Where the repeat is.
    pub file: String,
    /// Its line.
    pub line: usize,
    /// Where the key was first written.
    pub first: (String, usize),
}

/// BMad's sprint plan of an epics document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SprintPlan {
    /// Epics in numeric order, each with its stories in the order they are written.
    pub epics: Vec<(u64, Vec<PlannedStory>)>,
    /// Repeated story headings, dropped.
    pub duplicates: Vec<Duplicate>,
    /// Headings that mention an epic or a story but fail the patterns: file, line, text.
    pub unparsed: Vec<(String, usize, String)>,
}

impl SprintPlan {
    /// Every key of the plan in order: `epic-N`, its stories, `epic-N-retrospective`.
    pub fn keys(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (n, stories) in &self.epics {
            out.push(format!("epic-{n}"));
            out.extend(stories.iter().map(|s| s.key.clone()));
            out.push(format!("epic-{n}-retrospective"));
        }
        out
    }
}

/// Reads the epic files in the order given (each `(name, text)`), as `sprint_plan.py generate`
/// does with its `--epic-file` arguments.
pub fn parse(files: &[(String, String)]) -> SprintPlan {
    let mut epics: BTreeMap<u64, Vec<PlannedStory>> = BTreeMap::new();
    let mut plan = SprintPlan::default();
    for (file, text) in files {
        let mut in_fence = false;
        for (i, line) in splitlines(text).into_iter().enumerate() {
            let lineno = i + 1;
            if FENCE_RE.is_match(line) {
                in_fence = !in_fence;
                continue;
            }
            if in_fence {
                continue;
            }
            if let Some(n) = epic_heading(line) {
                epics.entry(n).or_default();
                continue;
            }
            if let Some(h) = story_heading(line) {
                let key = h.key();
                let stories = epics.entry(h.epic).or_default();
                if let Some(first) = stories.iter().find(|s| s.key == key) {
                    plan.duplicates.push(Duplicate {
                        key,
                        file: file.clone(),
                        line: lineno,
                        first: (first.file.clone(), first.line),
                    });
                } else {
                    stories.push(PlannedStory {
                        key,
                        file: file.clone(),
                        line: lineno,
                    });
                }
                continue;
            }
            if SUSPECT_RE.is_match(line) {
                plan.unparsed
                    .push((file.clone(), lineno, line.trim().to_owned()));
            }
        }
    }
    plan.epics = epics.into_iter().collect();
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> SprintPlan {
        parse(&[("epics.md".to_owned(), text.to_owned())])
    }

    #[test]
    fn every_pattern_compiles() {
        for re in [&*EPIC_RE, &*STORY_RE, &*SUSPECT_RE, &*FENCE_RE, &*NON_WORD] {
            assert_ne!(re.as_str(), never().as_str());
        }
    }

    #[test]
    fn slugs_are_pythons() {
        // Values printed by BMad 6.12's `_slug` under CPython 3.11.
        assert_eq!(slug("User Authentication"), "user-authentication");
        assert_eq!(slug("Café au lait"), "café-au-lait");
        // Devanagari vowel signs and the virama are marks, not word characters, to Python.
        assert_eq!(slug("हिन्दी पाठ"), "ह-न-द-प-ठ");
        assert_eq!(slug("বাংলা"), "ব-ল");
        assert_eq!(slug("தமிழ்"), "தம-ழ");
        assert_eq!(slug("→ ★ ←"), "8b2abc1b");
        assert_eq!(slug("Ⓐ circled"), "circled");
        assert_eq!(slug("İstanbul ΟΔΟΣ"), "i-stanbul-οδος");
        assert_eq!(slug(""), "e3b0c442");
        assert_eq!(slug(&"a".repeat(80)).len(), 60);
        assert_eq!(slug(&format!("{}-b", "a".repeat(59))), "a".repeat(59));
    }

    #[test]
    fn headings_follow_bmads_patterns() {
        let h = story_heading("### Story 2.6a: C# ##").unwrap_or_else(|| unreachable!());
        assert_eq!(
            (h.epic, h.story.as_str(), h.title.as_str()),
            (2, "6a", "C#")
        );
        let title = |l: &str| story_heading(l).map(|h| h.title);
        assert_eq!(title("### Story 1.1: C#").as_deref(), Some("C"));
        assert_eq!(title("### Story 1.1: ###").as_deref(), Some(""));
        assert_eq!(
            story_heading("###Story 1.01 Login").map(|h| h.key()),
            Some("1-01-login".to_owned())
        );
        assert_eq!(story_heading("##### Story 1.1: deep"), None);
        assert_eq!(story_heading("### Story 1: no dot"), None);
        assert_eq!(epic_heading("# EPIC 007: Zero ##"), Some(7));
        assert_eq!(epic_heading("#### Epic 1: too deep"), None);
        assert_eq!(epic_heading("## Epic 14c: lettered"), Some(14));
    }

    #[test]
    fn epics_by_number_stories_by_their_own_number_duplicates_once() {
        let p = one(
            "## Epic 2: B\n### Story 2.1: Two\n### Story 1.2: Stray\n```\n### Story 2.9: fenced\n```\n\
             ### Story 2.1: Two\n## Epic 0: Zero\n#### story about nothing\n",
        );
        assert_eq!(
            p.keys(),
            [
                "epic-0",
                "epic-0-retrospective",
                "epic-1",
                "1-2-stray",
                "epic-1-retrospective",
                "epic-2",
                "2-1-two",
                "epic-2-retrospective"
            ]
        );
        assert_eq!(p.duplicates.len(), 1);
        assert_eq!(p.duplicates[0].line, 7);
        assert_eq!(p.duplicates[0].first, ("epics.md".to_owned(), 2));
        assert_eq!(p.unparsed.len(), 1);
    }

    #[test]
    fn lines_split_as_python_splits_them() {
        assert_eq!(splitlines("a\r\nb\rc\u{2028}d\n"), ["a", "b", "c", "d"]);
        assert_eq!(splitlines("a\n\nb"), ["a", "", "b"]);
        assert!(splitlines("").is_empty());
    }
}
