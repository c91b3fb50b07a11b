//! The in-memory model of a sprint: header fields and the ordered `development_status` entries.
//!
//! This is what the store hands to the rules. Entries keep their file order (order is the queue),
//! their line numbers (every message names one), the raw value as written, and the extended state
//! mirrored in a `# baton: <state>` trailing comment. Duplicate keys are kept as separate entries
//! so that validation can report every one of them; lookups answer the first.

use crate::key::{EpicId, Key, KeyKind};
use crate::status::{Status, StatusValue};
use std::collections::HashMap;

/// One `development_status` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key.
    pub key: Key,
    /// The status as written in the file (`None` if the entry has no status at all).
    pub raw: Option<String>,
    /// The parsed value, legacy spellings normalised.
    pub value: StatusValue,
    /// The legacy spelling that was normalised, if any.
    pub legacy: Option<&'static str>,
    /// baton's extended state, from the trailing marker (or literal in the file).
    pub extended: Option<Status>,
    /// 1-based line in the file.
    pub line: usize,
    /// Whether the value is a struct (`{status: done, size: M}`).
    pub structured: bool,
}

impl Entry {
    /// The status baton acts on: the extended state when there is one, else the file's.
    pub fn effective(&self) -> StatusValue {
        match self.extended {
            Some(ext) => StatusValue::Known(ext),
            None => self.value.clone(),
        }
    }
}

/// A top-level field of the sprint file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The key.
    pub name: String,
    /// Its scalar value, if it is a scalar.
    pub value: Option<String>,
    /// 1-based line.
    pub line: usize,
}

/// A whole sprint.
#[derive(Debug, Clone, Default)]
pub struct Sprint {
    /// Top-level fields in file order (`generated`, `project`, unknown keys…), excluding
    /// `development_status` and `action_items`.
    pub fields: Vec<Field>,
    /// Line of `development_status:`, if present.
    pub development_status_line: Option<usize>,
    /// Entries in file order, duplicates included.
    pub entries: Vec<Entry>,
    index: HashMap<String, usize>,
}

impl Sprint {
    /// Builds a sprint from its parts.
    pub fn new(
        fields: Vec<Field>,
        development_status_line: Option<usize>,
        entries: Vec<Entry>,
    ) -> Self {
        let mut index = HashMap::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            index.entry(e.key.as_str().to_owned()).or_insert(i);
        }
        Sprint {
            fields,
            development_status_line,
            entries,
            index,
        }
    }

    /// The first entry with this key.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.index.get(key).map(|&i| &self.entries[i])
    }

    /// Position of the first entry with this key.
    pub fn position(&self, key: &str) -> Option<usize> {
        self.index.get(key).copied()
    }

    /// Mutable access by position (the store keeps the model in step with its edits).
    pub fn entry_mut(&mut self, pos: usize) -> Option<&mut Entry> {
        self.entries.get_mut(pos)
    }

    /// A top-level field's scalar value.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.value.as_deref())
    }

    /// The stories of epic `n` (a number or an [`EpicId`]), in file order (first occurrence of
    /// each key).
    pub fn stories_of(&self, n: impl Into<EpicId>) -> impl Iterator<Item = &Entry> {
        let n = n.into();
        self.entries.iter().enumerate().filter_map(move |(i, e)| {
            // Test the kind first: hashing every key of a large sprint costs far more.
            let ours = matches!(e.key.kind(), KeyKind::Story { epic, .. } if epic == n);
            (ours && self.index.get(e.key.as_str()) == Some(&i)).then_some(e)
        })
    }

    /// Unique entries (first occurrence of each key), in file order.
    pub fn unique(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(move |(i, e)| (self.index.get(e.key.as_str()) == Some(&i)).then_some(e))
    }
}
