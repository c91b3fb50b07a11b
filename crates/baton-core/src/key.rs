//! Sprint keys and their classification.
//!
//! `development_status` keys follow BMAD-FORMAT.md §2.2: `epic-N`, `epic-N-retrospective`, and
//! stories `N-M[a-z]?-slug`. Everything else is an opaque key: kept verbatim, reported, never
//! deleted. A key that starts like a story or an epic but breaks the grammar is *malformed*, which
//! validation reports as an error.

use serde::Serialize;
use std::cmp::Ordering;
use std::fmt;

/// What a `development_status` key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum KeyKind {
    /// `epic-N`.
    Epic {
        /// The epic number.
        epic: u32,
    },
    /// `N-M[a-z]?-slug`.
    Story {
        /// The epic number.
        epic: u32,
        /// The story number within the epic.
        story: u32,
        /// Optional letter suffix (`2-6a-…`).
        suffix: Option<char>,
    },
    /// `epic-N-retrospective`.
    Retrospective {
        /// The epic number.
        epic: u32,
    },
    /// A key baton does not interpret (containers, retro items, lettered epics): kept as is.
    Opaque,
    /// A key that looks like an epic or a story but breaks the grammar.
    Malformed,
}

impl KeyKind {
    /// The epic this key belongs to, if any.
    pub fn epic(&self) -> Option<u32> {
        match *self {
            KeyKind::Epic { epic }
            | KeyKind::Story { epic, .. }
            | KeyKind::Retrospective { epic } => Some(epic),
            KeyKind::Opaque | KeyKind::Malformed => None,
        }
    }

    /// A short lowercase name for messages and JSON.
    pub fn name(&self) -> &'static str {
        match self {
            KeyKind::Epic { .. } => "epic",
            KeyKind::Story { .. } => "story",
            KeyKind::Retrospective { .. } => "retrospective",
            KeyKind::Opaque => "opaque",
            KeyKind::Malformed => "malformed",
        }
    }

    /// Sort order of stories: (epic, story, suffix). `None` for anything else.
    pub fn story_order(&self) -> Option<(u32, u32, u32)> {
        match *self {
            KeyKind::Story {
                epic,
                story,
                suffix,
            } => Some((
                epic,
                story,
                suffix.map_or(0, |c| u32::from(c) - u32::from('a') + 1),
            )),
            _ => None,
        }
    }
}

/// A `development_status` key with its classification.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    text: String,
    kind: KeyKind,
}

impl Key {
    /// Classifies `text` (BMAD-FORMAT.md R3: retrospective first, then epic, else story).
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let kind = classify(&text);
        Key { text, kind }
    }

    /// The key as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its classification.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.text.cmp(&other.text)
    }
}

fn number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn slug_ok(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c == '-' || c == '_' || c == '.' || c.is_alphanumeric() && !c.is_uppercase())
}

/// Classifies a key per BMAD-FORMAT.md §2.2 and R3.
pub fn classify(text: &str) -> KeyKind {
    if let Some(rest) = text.strip_prefix("epic-") {
        if let Some(n) = rest.strip_suffix("-retrospective").and_then(number) {
            return KeyKind::Retrospective { epic: n };
        }
        if let Some(n) = number(rest) {
            return KeyKind::Epic { epic: n };
        }
        // Lettered or phased epics (`epic-1a`, `epic-0-p2`) and retro items
        // (`epic-1-retro-item-2-slug`) live in the wild: keep them opaque.
        let head = rest.split('-').next().unwrap_or_default();
        let digits = head.trim_end_matches(|c: char| c.is_ascii_lowercase());
        if number(digits).is_some() && slug_ok(rest) {
            return KeyKind::Opaque;
        }
        return KeyKind::Malformed;
    }
    if text.starts_with(|c: char| c.is_ascii_digit()) {
        return classify_story(text).unwrap_or(KeyKind::Malformed);
    }
    if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return KeyKind::Malformed;
    }
    KeyKind::Opaque
}

fn classify_story(text: &str) -> Option<KeyKind> {
    let mut parts = text.splitn(3, '-');
    let epic = number(parts.next()?)?;
    let middle = parts.next()?;
    let slug = parts.next()?;
    let (digits, suffix) = match middle.char_indices().last() {
        Some((i, c)) if c.is_ascii_lowercase() => (&middle[..i], Some(c)),
        _ => (middle, None),
    };
    let story = number(digits)?;
    if !slug_ok(slug) {
        return None;
    }
    Some(KeyKind::Story {
        epic,
        story,
        suffix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_every_documented_shape() {
        let cases = [
            ("epic-1", KeyKind::Epic { epic: 1 }),
            ("epic-12-retrospective", KeyKind::Retrospective { epic: 12 }),
            (
                "1-2-user-auth",
                KeyKind::Story {
                    epic: 1,
                    story: 2,
                    suffix: None,
                },
            ),
            (
                "2-6a-split-story",
                KeyKind::Story {
                    epic: 2,
                    story: 6,
                    suffix: Some('a'),
                },
            ),
            ("epic-1a", KeyKind::Opaque),
            ("epic-0-p2", KeyKind::Opaque),
            ("epic-1-retro-item-2-fix-ci", KeyKind::Opaque),
            ("sprint-03", KeyKind::Opaque),
            ("backlog-ideas", KeyKind::Opaque),
            ("1-2", KeyKind::Malformed),
            ("1-x-foo", KeyKind::Malformed),
            ("1-2-Foo", KeyKind::Malformed),
            ("epic-", KeyKind::Malformed),
            ("epic-one", KeyKind::Malformed),
            ("has space", KeyKind::Malformed),
        ];
        for (text, want) in cases {
            assert_eq!(classify(text), want, "{text}");
        }
    }

    #[test]
    fn story_order_sorts_suffix_after_plain() {
        let a = classify("2-6-a").story_order();
        let b = classify("2-6a-b").story_order();
        let c = classify("2-7-c").story_order();
        assert!(a < b && b < c);
    }
}
