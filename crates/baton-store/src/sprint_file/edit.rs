//! Minimal edits of a loaded sprint file.
//!
//! A change replaces one entry's status token (keeping its quote style), its trailing comment's
//! baton marker and note, and `last_updated`; every other byte stays. The edited text is built in
//! one pass from sorted splices. The entry is found through the model's key index, and the spans
//! of untouched entries are not rewritten: the growth of each splice is recorded once for the
//! entries after it (`shift::Shifts`), so an edit costs the same whether the sprint holds ten
//! stories or ten thousand (bar the copy of the text).

use super::scan::{ScannedEntry, Slot, ValueSpan};
use super::{SprintDoc, entry_of};
use baton_core::stamp::Stamp;
use baton_core::status::Status;
use std::ops::Range;

/// One status change to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The key.
    pub key: String,
    /// The new status (extended states are projected unless written literally).
    pub to: Status,
    /// Reason shown in the `# baton: needs-intervention (…)` marker.
    pub reason: Option<String>,
    /// A note kept as a comment on the line.
    pub note: Option<String>,
}

/// How extended states are written.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditOptions {
    /// Write extended statuses literally instead of projection + marker comment.
    pub write_extended: bool,
}

/// Why an edit could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The key is not in `development_status`.
    #[error("`{key}` is not in `development_status` of `{path}`")]
    NotFound {
        /// The key.
        key: String,
        /// The file.
        path: String,
    },
    /// The key appears more than once.
    #[error(
        "`{key}` appears {count} times in `{path}`; remove the duplicates first (`baton status --validate`)"
    )]
    Duplicate {
        /// The key.
        key: String,
        /// How many times.
        count: usize,
        /// The file.
        path: String,
    },
    /// Two changes for the same key in one edit.
    #[error("two changes for `{key}` in one edit")]
    Conflicting {
        /// The key.
        key: String,
    },
    /// The entry has no status to keep under a `needs-intervention` marker.
    #[error("`{key}` has no status to keep while it needs intervention")]
    NoStatus {
        /// The key.
        key: String,
    },
    /// A block-struct entry without a `status:` child.
    #[error("`{key}` is a block value without a `status:` line; add `status: backlog` under it")]
    NoStatusSlot {
        /// The key.
        key: String,
    },
    /// The edited text would not read back (should not happen; nothing was changed).
    #[error("the edit of `{path}` would not read back ({detail}); nothing was changed")]
    Reparse {
        /// The file.
        path: String,
        /// The loader's message.
        detail: String,
    },
}

struct Splice {
    region: Range<usize>,
    text: String,
    target: Target,
    /// How far before the region the slot's insertion point (right after `key:`) lies.
    lead: usize,
}

enum Target {
    Entry(usize, Slot),
    Field(usize, Slot),
}

/// Longest note or reason kept in a comment, in characters (the rest is cut with `…`).
pub const MAX_COMMENT_CHARS: usize = 500;

/// `text` made safe for a one-line YAML comment that baton reads back: line breaks and tabs
/// become spaces; characters YAML does not allow in a stream (C0 and C1 controls, DEL, U+FFFE,
/// U+FFFF, surrogate-free non-characters) and the Unicode line separators and BOM are written as
/// `\u{…}` escapes; the words `baton:` are neutralised (`baton -`) so a note cannot forge baton's
/// own marker; spaces are collapsed and the text is cut at [`MAX_COMMENT_CHARS`].
pub fn comment_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_COMMENT_CHARS * 4));
    let mut count = 0;
    for ch in text.chars() {
        if count == MAX_COMMENT_CHARS {
            out.push('…');
            break;
        }
        let piece: String = match ch {
            '\n' | '\r' | '\t' | '\u{85}' | '\u{2028}' | '\u{2029}' => " ".to_owned(),
            c if c.is_control() || is_noncharacter(c) || c == '\u{feff}' => {
                format!("\\u{{{:x}}}", u32::from(c))
            }
            c => c.to_string(),
        };
        if piece == " " && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        out.push_str(&piece);
        count += 1;
    }
    let out = out.trim_end().to_owned();
    neutralise_marker(&out)
}

fn is_noncharacter(c: char) -> bool {
    let u = u32::from(c);
    (0xFDD0..=0xFDEF).contains(&u) || (u & 0xFFFE) == 0xFFFE
}

/// Replaces every `baton:` (any letter case) by `baton -`.
fn neutralise_marker(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("baton:") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(i) = lower[at..].find("baton:") {
        out.push_str(&text[at..at + i + 5]);
        out.push_str(" -");
        at += i + 6;
    }
    out.push_str(&text[at..]);
    out
}

fn quoted(quote: Option<char>, s: &str) -> String {
    match quote {
        Some(q) => format!("{q}{s}{q}"),
        None => s.to_owned(),
    }
}

/// Splits a trailing comment (`# …`) into the user's part and baton's marker.
fn user_part(comment: &str) -> &str {
    let body = comment.trim_start_matches('#').trim();
    if body.starts_with("baton: ") {
        return "";
    }
    match body.find(" # baton: ") {
        Some(i) => body[..i].trim_end(),
        None => body,
    }
}

/// Rebuilds a value and its comment on one line; returns the splice and the new slot (relative).
fn rewrite(
    text: &str,
    slot: &Slot,
    token: &str,
    comment: Option<String>,
) -> (Range<usize>, String, Slot) {
    let (start, value_end, quote, lead) = match &slot.value {
        Some(v) => (v.range.start, v.range.end, v.quote, ""),
        None => (slot.insert_at, slot.insert_at, None, " "),
    };
    let old_middle = &text[value_end..slot.comment.as_ref().map_or(slot.eol, |c| c.start)];
    let middle = match (&slot.comment, &comment) {
        (Some(_), Some(_)) => old_middle.to_owned(),
        (None, Some(_)) => format!("{}  ", old_middle.trim_end()),
        (Some(_), None) => old_middle.trim_end().to_owned(),
        (None, None) => old_middle.to_owned(),
    };
    let token = quoted(quote, token);
    let mut out = String::with_capacity(lead.len() + token.len() + middle.len() + 64);
    out.push_str(lead);
    out.push_str(&token);
    out.push_str(&middle);
    let value_start = lead.len();
    let comment_range = comment.as_ref().map(|c| {
        let s = out.len();
        out.push_str(c);
        s..s + c.len()
    });
    let value_text = token.trim_matches(|c| Some(c) == quote).to_owned();
    let new_slot = Slot {
        value: Some(ValueSpan {
            range: value_start..value_start + token.len(),
            quote,
            text: value_text,
        }),
        insert_at: slot.insert_at,
        comment: comment_range,
        eol: out.len(),
    };
    (start..slot.eol, out, new_slot)
}

pub(super) fn offset_slot(slot: &mut Slot, f: impl Fn(usize) -> usize) {
    if let Some(v) = &mut slot.value {
        v.range = f(v.range.start)..f(v.range.end);
    }
    if let Some(c) = &mut slot.comment {
        *c = f(c.start)..f(c.end);
    }
    slot.insert_at = f(slot.insert_at);
    slot.eol = f(slot.eol);
}

impl SprintDoc {
    /// Applies `changes` and stamps `last_updated` with `now`, in memory only: call
    /// [`SprintDoc::persist`] to write. On error nothing changes.
    pub fn apply(
        &mut self,
        changes: &[Change],
        now: Stamp,
        opts: EditOptions,
    ) -> Result<(), EditError> {
        let path = self.path.display().to_string();
        let mut splices: Vec<Splice> = Vec::with_capacity(changes.len() + 1);
        for ch in changes {
            let Some(idx) = self.sprint.position(&ch.key) else {
                return Err(EditError::NotFound {
                    key: ch.key.clone(),
                    path,
                });
            };
            if let Some(&count) = self.dups.get(&ch.key) {
                return Err(EditError::Duplicate {
                    key: ch.key.clone(),
                    count,
                    path,
                });
            }
            if splices
                .iter()
                .any(|s| matches!(s.target, Target::Entry(i, _) if i == idx))
            {
                return Err(EditError::Conflicting {
                    key: ch.key.clone(),
                });
            }
            let Some(scanned) = self.entry_at(idx) else {
                return Err(EditError::NotFound {
                    key: ch.key.clone(),
                    path,
                });
            };
            let slot = &scanned.slot;
            if scanned.structured && slot.value.is_none() {
                return Err(EditError::NoStatusSlot {
                    key: ch.key.clone(),
                });
            }
            // needs-intervention has no canonical spelling of its own: it always keeps the
            // story's status and says so in the marker, even when extended states are literal.
            let project =
                ch.to.is_extended() && (!opts.write_extended || ch.to == Status::NeedsIntervention);
            let token = if project {
                match ch.to.projection() {
                    Some(p) => p.as_str().to_owned(),
                    None => slot.value.as_ref().map(|v| v.text.clone()).ok_or_else(|| {
                        EditError::NoStatus {
                            key: ch.key.clone(),
                        }
                    })?,
                }
            } else {
                ch.to.as_str().to_owned()
            };
            let old_user = slot
                .comment
                .as_ref()
                .map(|c| user_part(&self.text[c.clone()]).to_owned())
                .unwrap_or_default();
            let note = ch
                .note
                .as_deref()
                .map(comment_text)
                .filter(|n| !n.is_empty());
            let user = match (note, old_user.is_empty()) {
                (Some(n), true) => n,
                (Some(n), false) => format!("{old_user}; {n}"),
                (None, _) => old_user,
            };
            let marker = project.then(|| {
                match ch
                    .reason
                    .as_deref()
                    .map(comment_text)
                    .filter(|r| !r.is_empty())
                {
                    Some(r) => format!("baton: {} ({r})", ch.to),
                    None => format!("baton: {}", ch.to),
                }
            });
            let comment = match (user.is_empty(), marker) {
                (true, None) => None,
                (false, None) => Some(format!("# {user}")),
                (true, Some(m)) => Some(format!("# {m}")),
                (false, Some(m)) => Some(format!("# {user} # {m}")),
            };
            let (region, text, new_slot) = rewrite(&self.text, slot, &token, comment);
            splices.push(Splice {
                lead: region.start - slot.insert_at,
                region,
                text,
                target: Target::Entry(idx, new_slot),
            });
        }

        let stamp = now.to_string();
        let mut rescan = false;
        match self
            .scan
            .fields
            .iter()
            .position(|f| f.name == "last_updated")
        {
            Some(fi) if !stampable(&self.scan.fields[fi]) => {
                // A block, anchored or tagged value: rewriting it could change the YAML's
                // meaning, so it is left as it is.
            }
            Some(fi) => {
                let slot = &self.scan.fields[fi].slot;
                let comment = slot
                    .comment
                    .as_ref()
                    .map(|c| self.text[c.clone()].to_owned());
                let (region, text, new_slot) = rewrite(&self.text, slot, &stamp, comment);
                splices.push(Splice {
                    lead: region.start - slot.insert_at,
                    region,
                    text,
                    target: Target::Field(fi, new_slot),
                });
            }
            None => rescan = true,
        }

        splices.sort_by_key(|s| s.region.start);
        // Built in the buffer of the text before last (a fresh allocation of a large file's size
        // costs page faults on every edit).
        let mut out = std::mem::take(&mut self.spare);
        out.clear();
        out.reserve(self.text.len() + 256);
        let mut at = 0;
        for s in &splices {
            out.push_str(&self.text[at..s.region.start]);
            out.push_str(&s.text);
            at = s.region.end;
        }
        out.push_str(&self.text[at..]);

        if rescan {
            out = insert_last_updated(&out, &stamp, self.scan.dev_line);
            let disk = self.disk;
            // Only reachable once per file (the field is then present); a full parse is fine.
            let mut doc = SprintDoc::parse(&self.path, out).map_err(|e| EditError::Reparse {
                path: path.clone(),
                detail: e.to_string(),
            })?;
            doc.disk = disk;
            *self = doc;
            return Ok(());
        }

        // Shift every untouched span by the growth of the splices before it.
        let ends: Vec<(usize, isize)> = {
            let mut acc = 0isize;
            splices
                .iter()
                .map(|s| {
                    acc += s.text.len() as isize - s.region.len() as isize;
                    (s.region.end, acc)
                })
                .collect()
        };
        let shift = |o: usize| -> usize {
            let n = ends.partition_point(|(end, _)| *end <= o);
            let delta = if n == 0 { 0 } else { ends[n - 1].1 };
            (o as isize + delta) as usize
        };
        // Where each splice lands in the new text: its start plus the growth of the splices
        // before it (not `shift`, which would count an empty splice's own growth).
        let starts: Vec<usize> = splices
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let before = if i == 0 { 0 } else { ends[i - 1].1 };
                (s.region.start as isize + before) as usize
            })
            .collect();
        for f in &mut self.scan.fields {
            offset_slot(&mut f.slot, shift);
            f.line_start = shift(f.line_start);
        }
        let len = self.scan.entries.len();
        if self.ordered {
            // Each splice moves the entries after it: found by position for an entry's splice,
            // by bisection (in the old text's offsets) for a field's. Record them all first.
            let moves: Vec<(usize, isize)> = splices
                .iter()
                .map(|s| {
                    let growth = s.text.len() as isize - s.region.len() as isize;
                    let from = match s.target {
                        Target::Entry(idx, _) => idx + 1,
                        Target::Field(..) => self.entries_from(s.region.end),
                    };
                    (from, growth)
                })
                .collect();
            for (from, growth) in moves {
                self.shifts.add_from(len, from, growth);
            }
        } else {
            // Entries out of file order (not seen in practice): shift every span, exactly.
            // No growth is ever recorded in `shifts` then, so the spans are kept exact.
            for e in &mut self.scan.entries {
                offset_slot(&mut e.slot, shift);
            }
        }
        self.verify |= changes
            .iter()
            .any(|c| c.note.is_some() || c.reason.is_some());
        self.expected_len = out.len();
        self.spare = std::mem::replace(&mut self.text, out);
        self.spare.clear();
        for (s, base) in splices.into_iter().zip(starts) {
            match s.target {
                Target::Entry(idx, mut slot) => {
                    offset_slot(&mut slot, |o| o + base);
                    slot.insert_at = base - s.lead;
                    let delta = self.shifts.at(idx);
                    let Some(scanned) = self.scan.entries.get_mut(idx) else {
                        continue;
                    };
                    scanned.slot = slot.clone();
                    offset_slot(&mut scanned.slot, |o| o.wrapping_add_signed(-delta));
                    let resolved = ScannedEntry {
                        slot,
                        ..scanned.clone()
                    };
                    let entry = entry_of(&self.text, &resolved);
                    if let Some(m) = self.sprint.entry_mut(idx) {
                        *m = entry;
                    }
                }
                Target::Field(fi, mut slot) => {
                    offset_slot(&mut slot, |o| o + base);
                    slot.insert_at = base - s.lead;
                    let value = slot.value.as_ref().map(|v| v.text.clone());
                    self.scan.fields[fi].slot = slot;
                    let name = self.scan.fields[fi].name.clone();
                    if let Some(f) = self.sprint.fields.iter_mut().find(|f| f.name == name) {
                        f.value = value;
                    }
                }
            }
        }
        Ok(())
    }
}

impl SprintDoc {
    /// The position of the first entry whose spans start at or after byte `offset` of the
    /// current text (requires `ordered`).
    fn entries_from(&self, offset: usize) -> usize {
        let len = self.scan.entries.len();
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let at = self.scan.entries.get(mid).map_or(usize::MAX, |e| {
                e.slot.insert_at.wrapping_add_signed(self.shifts.at(mid))
            });
            if at < offset {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// Whether `last_updated` is a plain or quoted scalar on its own line that can be rewritten.
fn stampable(f: &super::scan::TopField) -> bool {
    if f.has_children {
        return false;
    }
    match &f.slot.value {
        None => true,
        Some(v) => v.quote.is_some() || !v.text.starts_with(['&', '*', '!', '|', '>', '[', '{']),
    }
}

/// Inserts a `last_updated` line before `development_status:` (or at the end).
fn insert_last_updated(text: &str, stamp: &str, dev_line: Option<usize>) -> String {
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let line = format!("last_updated: {stamp}{nl}");
    let at = dev_line.and_then(|n| {
        let mut off = 0;
        for _ in 1..n {
            off += text[off..].find('\n')? + 1;
        }
        Some(off)
    });
    match at {
        Some(off) => format!("{}{line}{}", &text[..off], &text[off..]),
        None if text.is_empty() || text.ends_with('\n') => format!("{text}{line}"),
        None => format!("{text}{nl}{line}"),
    }
}
