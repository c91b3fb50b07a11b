//! Sprint keys and their classification.
//!
//! `development_status` keys follow BMAD-FORMAT.md §2.2: `epic-N`, `epic-N-retrospective`, and
//! stories `N-M[a-z]?-slug`. Projects in the wild also number epics with a letter or a dot
//! (`epic-14c`, `epic-2.5`, stories `10a-1-slug`, `2.5-1-slug`): those are epics like any other
//! ([`EpicId`]). Everything else is an opaque key: kept verbatim, reported, never deleted. A key
//! that starts like a story or an epic but breaks the grammar is *malformed*, which validation
//! reports as an error.

use serde::{Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// An epic's identifier: a number, optionally dotted (`2.5`) and/or lettered (`14c`).
///
/// Plain numbers compare equal to `u32` and serialize as JSON numbers, so code written for
/// `epic-N` keeps working; dotted and lettered ids serialize as strings (`"14c"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EpicId {
    /// The leading number.
    pub number: u32,
    /// The number after a dot (`2.5` → 5).
    pub minor: Option<u32>,
    /// A lowercase letter suffix (`14c` → c).
    pub letter: Option<char>,
}

impl EpicId {
    /// A plain numbered epic.
    pub const fn new(number: u32) -> Self {
        EpicId {
            number,
            minor: None,
            letter: None,
        }
    }

    /// Parses `N`, `N.M`, `Na` or `N.Ma`.
    pub fn parse(s: &str) -> Option<EpicId> {
        let (body, letter) = match s.char_indices().last() {
            Some((i, c)) if c.is_ascii_lowercase() => (&s[..i], Some(c)),
            _ => (s, None),
        };
        let (major, minor) = match body.split_once('.') {
            Some((a, b)) => (a, Some(number(b)?)),
            None => (body, None),
        };
        Some(EpicId {
            number: number(major)?,
            minor,
            letter,
        })
    }

    /// Whether this is a plain number (`epic-N`).
    pub fn is_plain(&self) -> bool {
        self.minor.is_none() && self.letter.is_none()
    }
}

impl From<u32> for EpicId {
    fn from(n: u32) -> Self {
        EpicId::new(n)
    }
}

impl PartialEq<u32> for EpicId {
    fn eq(&self, other: &u32) -> bool {
        self.is_plain() && self.number == *other
    }
}

impl fmt::Display for EpicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number)?;
        if let Some(m) = self.minor {
            write!(f, ".{m}")?;
        }
        if let Some(c) = self.letter {
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl Serialize for EpicId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_plain() {
            s.serialize_u32(self.number)
        } else {
            s.collect_str(self)
        }
    }
}

/// What a `development_status` key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum KeyKind {
    /// `epic-N`.
    Epic {
        /// The epic.
        epic: EpicId,
    },
    /// `N-M[a-z]?-slug`.
    Story {
        /// The epic.
        epic: EpicId,
        /// The story number within the epic.
        story: u32,
        /// Optional letter suffix (`2-6a-…`).
        suffix: Option<char>,
    },
    /// `epic-N-retrospective`.
    Retrospective {
        /// The epic.
        epic: EpicId,
    },
    /// A key baton does not interpret (containers, retro items, phased epics): kept as is.
    Opaque,
    /// A key that looks like an epic or a story but breaks the grammar.
    Malformed,
}

impl KeyKind {
    /// The epic this key belongs to, if any.
    pub fn epic(&self) -> Option<EpicId> {
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
    pub fn story_order(&self) -> Option<(EpicId, u32, u32)> {
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
        if let Some(n) = rest.strip_suffix("-retrospective").and_then(EpicId::parse) {
            return KeyKind::Retrospective { epic: n };
        }
        if let Some(n) = EpicId::parse(rest) {
            return KeyKind::Epic { epic: n };
        }
        // Phased epics (`epic-0-p2`) and retro items (`epic-1-retro-item-2-slug`) live in the
        // wild: keep them opaque.
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
    let epic = EpicId::parse(parts.next()?)?;
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
        let id = |s: &str| EpicId::parse(s).unwrap();
        let cases = [
            ("epic-1", KeyKind::Epic { epic: id("1") }),
            (
                "epic-12-retrospective",
                KeyKind::Retrospective { epic: id("12") },
            ),
            (
                "1-2-user-auth",
                KeyKind::Story {
                    epic: id("1"),
                    story: 2,
                    suffix: None,
                },
            ),
            (
                "2-6a-split-story",
                KeyKind::Story {
                    epic: id("2"),
                    story: 6,
                    suffix: Some('a'),
                },
            ),
            ("epic-1a", KeyKind::Epic { epic: id("1a") }),
            ("epic-14c", KeyKind::Epic { epic: id("14c") }),
            ("epic-2.5", KeyKind::Epic { epic: id("2.5") }),
            (
                "epic-2.5-retrospective",
                KeyKind::Retrospective { epic: id("2.5") },
            ),
            (
                "10a-1-lettered-epic-story",
                KeyKind::Story {
                    epic: id("10a"),
                    story: 1,
                    suffix: None,
                },
            ),
            (
                "2.5-3b-dotted",
                KeyKind::Story {
                    epic: id("2.5"),
                    story: 3,
                    suffix: Some('b'),
                },
            ),
            ("epic-2.", KeyKind::Malformed),
            ("2.-1-x", KeyKind::Malformed),
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
    fn epic_ids_compare_with_numbers_and_serialize_plainly() {
        let plain = EpicId::parse("3").unwrap();
        assert_eq!(plain, 3u32);
        assert_eq!(plain, EpicId::from(3));
        let lettered = EpicId::parse("3c").unwrap();
        assert!(lettered != 3u32);
        assert_eq!(lettered.to_string(), "3c");
        assert_eq!(EpicId::parse("2.5").unwrap().to_string(), "2.5");
        assert_eq!(serde_json::to_string(&plain).unwrap(), "3");
        assert_eq!(serde_json::to_string(&lettered).unwrap(), "\"3c\"");
        let mut ids: Vec<EpicId> = ["3", "2.5", "2", "10a", "2a"]
            .iter()
            .map(|s| EpicId::parse(s).unwrap())
            .collect();
        ids.sort();
        let shown: Vec<String> = ids.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["2", "2a", "2.5", "3", "10a"]);
    }

    #[test]
    fn story_order_sorts_suffix_after_plain() {
        let a = classify("2-6-a").story_order();
        let b = classify("2-6a-b").story_order();
        let c = classify("2-7-c").story_order();
        assert!(a < b && b < c);
    }
}
