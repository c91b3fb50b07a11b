//! A line scanner for `sprint-status.yaml` that records where every value lives.
//!
//! BMad sprint files are simple block YAML: top-level scalars, a `development_status` mapping of
//! `key: status  # comment` lines (or struct values, flow `{status: …}` or block), and an optional
//! `action_items` list. The scanner finds, for each entry, the byte span of its status token and
//! of its trailing comment, so an edit can replace exactly those bytes. It does not decide whether
//! the file is valid YAML: the loader cross-checks every entry against a real YAML parse and
//! refuses to edit what the two read differently.

use std::ops::Range;

/// A scalar value's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueSpan {
    /// Byte range of the token, quotes included.
    pub range: Range<usize>,
    /// The quote character, if quoted.
    pub quote: Option<char>,
    /// The value without quotes.
    pub text: String,
}

/// Where a status lives and what surrounds it on its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The status token, if there is one.
    pub value: Option<ValueSpan>,
    /// Where a missing value would be inserted (right after `key:`).
    pub insert_at: usize,
    /// Byte range of the trailing comment (from `#`), if any.
    pub comment: Option<Range<usize>>,
    /// End of the line's content (before `\r\n` / `\n`).
    pub eol: usize,
}

/// A top-level key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopField {
    /// The key.
    pub name: String,
    /// 1-based line.
    pub line: usize,
    /// Its scalar value on the same line, if any.
    pub slot: Slot,
    /// Byte offset of the start of its line.
    pub line_start: usize,
    /// Whether indented lines follow (a block value).
    pub has_children: bool,
}

/// One `development_status` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedEntry {
    /// The key (unquoted).
    pub key: String,
    /// 1-based line of the key.
    pub line: usize,
    /// Where its status is (for block structs: the `status:` child line).
    pub slot: Slot,
    /// Whether the value is a struct (flow or block).
    pub structured: bool,
}

/// The scan of a whole file.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Top-level keys in file order.
    pub fields: Vec<TopField>,
    /// Line of `development_status:`.
    pub dev_line: Option<usize>,
    /// Entries in file order (duplicates included).
    pub entries: Vec<ScannedEntry>,
}

/// A line the scanner cannot place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

struct Line<'a> {
    no: usize,
    start: usize,
    text: &'a str,
}

fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut start = 0;
    let mut no = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        no += 1;
        let rest = &text[start..];
        let len = rest.find('\n').unwrap_or(rest.len());
        let mut body = &rest[..len];
        if let Some(stripped) = body.strip_suffix('\r') {
            body = stripped;
        }
        let line = Line {
            no,
            start,
            text: body,
        };
        start += (len + 1).min(rest.len());
        Some(line)
    })
}

fn indent(s: &str) -> usize {
    s.len() - s.trim_start_matches(' ').len()
}

fn is_blank_or_comment(s: &str) -> bool {
    let t = s.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// Splits `key: rest` at the mapping colon; returns (key, offset of rest within `s`).
fn split_key(s: &str) -> Option<(String, usize)> {
    let bytes = s.as_bytes();
    let (key, after) = match bytes.first()? {
        q @ (b'"' | b'\'') => {
            let close = s[1..].find(*q as char)? + 1;
            (s[1..close].to_owned(), close + 1)
        }
        _ => {
            let mut i = 0;
            loop {
                let c = *bytes.get(i)?;
                if c == b':' && matches!(bytes.get(i + 1), None | Some(b' ' | b'\t')) {
                    break;
                }
                if c == b'#' && i > 0 && bytes[i - 1] == b' ' {
                    return None;
                }
                i += 1;
            }
            (s[..i].trim_end().to_owned(), i)
        }
    };
    if bytes.get(after) != Some(&b':') {
        return None;
    }
    Some((key, after + 1))
}

/// Parses the value part of a line (`rest` starts right after the colon at byte `base`).
fn slot_of(line: &str, base: usize, rest_off: usize) -> Slot {
    let rest = &line[rest_off..];
    let lead = rest.len() - rest.trim_start().len();
    let vstart = rest_off + lead;
    let eol = base + line.len();
    let v = &line[vstart..];
    let comment_from = |from: usize| -> Option<Range<usize>> {
        let tail = &line[from..];
        let mut prev_space = from == 0 || line.as_bytes()[from - 1] == b' ';
        for (i, c) in tail.char_indices() {
            if c == '#' && prev_space {
                return Some(base + from + i..eol);
            }
            prev_space = c == ' ' || c == '\t';
        }
        None
    };
    if v.is_empty() || v.starts_with('#') {
        return Slot {
            value: None,
            insert_at: base + rest_off,
            comment: comment_from(vstart),
            eol,
        };
    }
    let (range, quote, text) = match v.as_bytes()[0] {
        q @ (b'"' | b'\'') => match v[1..].find(q as char) {
            Some(close) => (
                vstart..vstart + close + 2,
                Some(q as char),
                v[1..close + 1].to_owned(),
            ),
            None => (vstart..line.len(), None, v.to_owned()),
        },
        _ => {
            let end = comment_from(vstart).map_or(line.len(), |c| c.start - base);
            let token = line[vstart..end].trim_end();
            (vstart..vstart + token.len(), None, token.to_owned())
        }
    };
    let after = range.end;
    Slot {
        value: Some(ValueSpan {
            range: base + range.start..base + range.end,
            quote,
            text,
        }),
        insert_at: base + rest_off,
        comment: comment_from(after),
        eol,
    }
}

/// Finds `status: x` inside a flow map `{status: x, size: M}` on `line` starting at `open`.
fn flow_status(line: &str, base: usize, open: usize) -> Option<Slot> {
    let close = matching_brace(line, open)?;
    let inner_start = open + 1;
    let mut pos = inner_start;
    for part in line[inner_start..close].split(',') {
        let trimmed = part.trim_start();
        let off = pos + (part.len() - trimmed.len());
        if let Some((k, rest)) = split_key(trimmed)
            && k == "status"
        {
            let part_end = pos + part.len();
            let mut s = slot_of(&line[..part_end], base, off + rest);
            s.comment = slot_of(line, base, close + 1).comment;
            s.eol = base + line.len();
            if let Some(v) = &mut s.value {
                let t = v.text.trim_end().to_owned();
                v.range.end = v.range.start + t.len() + usize::from(v.quote.is_some()) * 2;
                if v.quote.is_none() {
                    v.text = t;
                }
            }
            return Some(s);
        }
        pos += part.len() + 1;
    }
    None
}

/// The `}` closing the flow map opened at `open` on this line (quotes and nesting respected).
fn matching_brace(line: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices().skip_while(|(i, _)| *i < open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '{' | '[') => depth += 1,
            (None, '}' | ']') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (c == '}').then_some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Scans a whole file; fails on the first line it cannot place.
pub fn scan(text: &str) -> Result<Scan, ScanError> {
    let (scan, mut errors) = scan_all(text);
    if errors.is_empty() {
        Ok(scan)
    } else {
        Err(errors.swap_remove(0))
    }
}

/// Scans a whole file, going on past the lines it cannot place: returns what it read and one
/// error per such line (in file order), so a validator can report every one of them.
pub fn scan_all(text: &str) -> (Scan, Vec<ScanError>) {
    let mut out = Scan::default();
    let mut errors = Vec::new();
    let mut in_dev = false;
    let mut entry_indent: Option<usize> = None;
    let mut open_struct: Option<usize> = None; // index of entry whose block children follow
    let mut child_indent: Option<usize> = None; // indentation of that entry's direct children
    let mut wrapped = false; // the open entry's value sat on the line after its key
    let mut explicit: Option<(String, usize)> = None; // `? key` waiting for its `: value`
    for line in lines(text) {
        let t = line.text;
        if is_blank_or_comment(t) {
            continue;
        }
        let ind = indent(t);
        let mut fail = |message: String| {
            errors.push(ScanError {
                line: line.no,
                message,
            })
        };
        if t.starts_with('\t') {
            fail("tab used for indentation; YAML needs spaces".into());
            continue;
        }
        if ind == 0 {
            in_dev = false;
            open_struct = None;
            if t.starts_with('-') || t.starts_with("---") || t.starts_with("...") {
                continue;
            }
            let Some((name, rest)) = split_key(t) else {
                fail(format!("expected `key: value`, found `{}`", t.trim()));
                continue;
            };
            let slot = slot_of(t, line.start, rest);
            if name == "development_status" {
                out.dev_line = Some(line.no);
                entry_indent = None;
                match &slot.value {
                    None => in_dev = true,
                    // An empty plan written in flow style by another tool.
                    Some(v) if v.quote.is_none() && v.text.replace(' ', "") == "{}" => {}
                    Some(_) => fail("`development_status` must be a block mapping (one `key: status` per line), not an inline value".into()),
                }
                continue;
            }
            out.fields.push(TopField {
                name,
                line: line.no,
                slot,
                line_start: line.start,
                has_children: false,
            });
            continue;
        }
        if !in_dev {
            // Nested content of another top-level key (action_items, unknown maps).
            if let Some(f) = out.fields.last_mut() {
                f.has_children = true;
            }
            continue;
        }
        let want = *entry_indent.get_or_insert(ind);
        if ind < want {
            fail(format!(
                "indentation of {ind} spaces does not match the {want} of the entries above"
            ));
            continue;
        }
        let body = &t[ind..];
        if ind > want {
            let Some(idx) = open_struct else {
                fail("unexpected deeper indentation: a status value cannot span lines".into());
                continue;
            };
            if wrapped {
                fail(format!(
                    "the value of `{}` continues over several lines; put it on one line",
                    out.entries[idx].key
                ));
                continue;
            }
            let first_child = child_indent.is_none();
            let direct = *child_indent.get_or_insert(ind) == ind;
            let child_key = split_key(body);
            if first_child && child_key.is_none() && !body.starts_with(['-', '?', '{', '[']) {
                // `key:` with its value on the next line, as YAML emitters write keys that
                // reach the line width (PyYAML wraps at 80 columns).
                out.entries[idx].slot = slot_of(t, line.start, ind);
                wrapped = true;
                continue;
            }
            // A child line of a block-struct entry: look for `status:`.
            out.entries[idx].structured = true;
            if direct
                && let Some((k, rest)) = child_key
                && k == "status"
                && out.entries[idx].slot.value.is_none()
            {
                out.entries[idx].slot = slot_of(t, line.start, ind + rest);
            }
            continue;
        }
        open_struct = None;
        child_indent = None;
        wrapped = false;
        if let Some(k) = body.strip_prefix("? ") {
            // An explicit key (`? long-key` then `: value`), written for very long keys.
            let k = k.split(" #").next().unwrap_or(k).trim();
            let k = k
                .strip_prefix('"')
                .and_then(|r| r.strip_suffix('"'))
                .or_else(|| k.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
                .unwrap_or(k);
            explicit = Some((k.to_owned(), line.no));
            continue;
        }
        if body == ":" || body.starts_with(": ") {
            let Some((key, key_line)) = explicit.take() else {
                fail("a `: value` line without a `? key` line above it".into());
                continue;
            };
            out.entries.push(ScannedEntry {
                key,
                line: key_line,
                slot: slot_of(t, line.start, ind + 1),
                structured: false,
            });
            continue;
        }
        if let Some((key, key_line)) = explicit.take() {
            fail(format!(
                "the explicit key `{key}` on line {key_line} has no `: value` line"
            ));
        }
        if body.starts_with('-') {
            fail("`development_status` must be a mapping, found a list item".into());
            continue;
        }
        let Some((key, rest)) = split_key(body) else {
            fail(format!("expected `key: status`, found `{}`", body.trim()));
            continue;
        };
        let mut slot = slot_of(t, line.start, ind + rest);
        let mut structured = false;
        match &slot.value {
            Some(v) if v.quote.is_none() && v.text.starts_with('{') => {
                structured = true;
                let open = v.range.start - line.start;
                slot = flow_status(t, line.start, open).unwrap_or(Slot {
                    value: None,
                    insert_at: slot.insert_at,
                    comment: None,
                    eol: slot.eol,
                });
            }
            None => open_struct = Some(out.entries.len()),
            _ => {}
        }
        out.entries.push(ScannedEntry {
            key,
            line: line.no,
            slot,
            structured,
        });
    }
    if let Some((key, key_line)) = explicit {
        errors.push(ScanError {
            line: key_line,
            message: format!("the explicit key `{key}` has no `: value` line"),
        });
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, e: &ScannedEntry) -> String {
        e.slot
            .value
            .as_ref()
            .map(|v| text[v.range.clone()].to_owned())
            .unwrap_or_default()
    }

    #[test]
    fn finds_plain_quoted_commented_and_struct_values() {
        let text = "# header\ngenerated: 01-02-2026 10:00\nproject: demo\n\ndevelopment_status:\n  epic-1: in-progress  # started\n  1-1-a: \"done\"\n  1-2-b: {status: review, size: M}  # big\n  1-3-c:\n    status: backlog # nested\n    size: S\n  1-4-d: ready-for-dev\n";
        let s = scan(text).unwrap();
        assert_eq!(s.dev_line, Some(5));
        let got: Vec<(String, String)> = s
            .entries
            .iter()
            .map(|e| (e.key.clone(), value(text, e)))
            .collect();
        assert_eq!(
            got,
            [
                ("epic-1", "in-progress"),
                ("1-1-a", "\"done\""),
                ("1-2-b", "review"),
                ("1-3-c", "backlog"),
                ("1-4-d", "ready-for-dev"),
            ]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        let c = s.entries[0].slot.comment.clone().unwrap();
        assert_eq!(&text[c], "# started");
        let c = s.entries[2].slot.comment.clone().unwrap();
        assert_eq!(&text[c], "# big");
        assert!(s.entries[2].structured && s.entries[3].structured && !s.entries[4].structured);
        assert_eq!(s.fields.len(), 2);
    }

    #[test]
    fn crlf_lines_keep_their_carriage_return_out_of_values() {
        let text = "development_status:\r\n  1-1-a: done\r\n";
        let s = scan(text).unwrap();
        assert_eq!(value(text, &s.entries[0]), "done");
    }

    #[test]
    fn reports_lines_it_cannot_place() {
        let err = scan("development_status:\n    1-1-a: done\n  1-2-b: done\n").unwrap_err();
        assert_eq!(err.line, 3);
        let err = scan("development_status:\n  - a\n").unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn wrapped_and_explicit_keys_and_an_empty_flow_plan() {
        let long = "9-12-a-story-whose-key-is-long-enough-that-an-emitter-wraps-its-value";
        let text = format!(
            "development_status:\n  epic-9: in-progress\n  {long}:\n    review  # wrapped\n  ? {long}-x\n  : done\n  9-13-b: backlog\n"
        );
        let s = scan(&text).unwrap();
        let got: Vec<(&str, String, usize)> = s
            .entries
            .iter()
            .map(|e| (e.key.as_str(), value(&text, e), e.line))
            .collect();
        let long_x = format!("{long}-x");
        assert_eq!(
            got,
            [
                ("epic-9", "in-progress".to_owned(), 2),
                (long, "review".to_owned(), 3),
                (long_x.as_str(), "done".to_owned(), 5),
                ("9-13-b", "backlog".to_owned(), 7),
            ]
        );
        assert!(!s.entries[1].structured);
        assert_eq!(
            &text[s.entries[1].slot.comment.clone().unwrap()],
            "# wrapped"
        );
        let empty = scan("project: x\ndevelopment_status: {}\n").unwrap();
        assert_eq!(empty.dev_line, Some(2));
        assert!(empty.entries.is_empty());
    }

    #[test]
    fn scan_all_reports_every_bad_line() {
        let text = "development_status:\n  epic-1: backlog\n  - x\n  1-1-a: done\n  just words\n  1-2-b:\n    in\n    progress\n";
        let (s, errors) = scan_all(text);
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [3, 5, 8]);
        assert_eq!(s.entries.len(), 3);
    }

    #[test]
    fn hash_inside_a_token_is_not_a_comment() {
        let text = "development_status:\n  1-1-a: done#not-comment # real\n";
        let s = scan(text).unwrap();
        assert_eq!(value(text, &s.entries[0]), "done#not-comment");
    }
}
