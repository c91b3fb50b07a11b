//! Markdown sections, for `read_file`: a document's headings, the section each one opens, and an
//! outline listing them with their sizes.
//!
//! Agents read planning documents of tens of kilobytes to use two sections of them, and every
//! byte they read is sent again on each later turn. BMad's own documents cite sections
//! (`[Source: docs/architecture.md#Data Model]`), so `read_file` can return just one, and list a
//! document's headings first so the agent can choose.
//!
//! Headings are read as CommonMark reads them, as far as real documents need: ATX headings (`#`
//! to `######` after at most three spaces, an optional closing run of `#`s) and setext headings
//! (a paragraph underlined with `=` or `-`). Lines inside fenced code blocks (``` or `~~~`, any
//! longer run, info strings allowed, closed by a run at least as long and indented at most three
//! columns more than the opening), HTML comments and YAML
//! front matter are never headings, so a `# comment` in a shell example or a `---` closing the
//! front matter opens nothing. Headings inside list items and block quotes (`> ## Verdict`) are
//! not sections: they belong to the list or the quote. A section runs from its heading's first
//! line to the next heading of the same or a higher level: it holds its nested subsections. On
//! the documents of the pinned `bmad-method` package these are exactly the headings
//! `mdast-util-from-markdown`, the CommonMark parser the package ships, finds (a test checks it).
//!
//! A heading is named by its text. When several headings have the same text, the first is named
//! by the text alone and the later ones `Text (2)`, `Text (3)`… as the outline lists them. A
//! query matches, in this order: a heading's text or name (case and runs of spaces ignored), its
//! GitHub anchor (`data-model` for `Data Model`), its text without a leading number (`Data Model`
//! for `3. Data Model`), and finally the start of exactly one heading, as text or as an anchor
//! (`Story 2.1` for `Story 2.1: Login`, `project-structure` for `Project Structure &
//! Boundaries`). Within a tier the first heading in the document wins.

use std::ops::Range;

/// One heading and the section it opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1 (`#`, or underlined with `=`) to 6.
    pub level: u8,
    /// Its text, trimmed, without the `#`s (a setext heading's lines joined by spaces).
    pub text: String,
    /// What names it: its text, or `Text (n)` for the n-th heading with the same text.
    pub name: String,
    /// 1-based line of the heading (its first line, for a setext heading).
    pub line: usize,
    /// 1-based last line of its section.
    pub last_line: usize,
    /// The section's bytes in the document, heading included.
    pub bytes: Range<usize>,
}

impl Heading {
    /// Lines of the section, heading included.
    pub fn lines(&self) -> usize {
        self.last_line + 1 - self.line
    }
}

/// A document's headings in order, with its size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    /// Every heading, in document order.
    pub headings: Vec<Heading>,
    /// Lines of the document.
    pub lines: usize,
    /// Bytes of the document.
    pub bytes: usize,
    /// Lines of YAML front matter at the top (`---` to `---`), if any.
    pub front_matter: Option<usize>,
}

/// Why a query named no section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// The query was empty.
    Empty,
    /// No heading matches.
    NotFound,
    /// The query starts several headings with different texts (their indexes).
    Ambiguous(Vec<usize>),
}

/// One line: its bytes in the document (newline included) and its text without `\r\n`.
struct Line<'a> {
    start: usize,
    text: &'a str,
}

fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for raw in text.split_inclusive('\n') {
        let mut t = raw.strip_suffix('\n').unwrap_or(raw);
        t = t.strip_suffix('\r').unwrap_or(t);
        if start == 0 {
            t = t.strip_prefix('\u{feff}').unwrap_or(t);
        }
        out.push(Line { start, text: t });
        start += raw.len();
    }
    out
}

/// Columns of leading indentation (a tab counts 4).
fn indent(line: &str) -> usize {
    let mut n = 0;
    for c in line.chars() {
        match c {
            ' ' => n += 1,
            '\t' => n += 4,
            _ => break,
        }
    }
    n
}

/// An ATX heading's level and text.
fn atx(line: &str) -> Option<(u8, &str)> {
    if indent(line) > 3 {
        return None;
    }
    let s = line.trim_start();
    let hashes = s.len() - s.trim_start_matches('#').len();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = &s[hashes..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    let content = rest.trim_matches([' ', '\t']);
    // A closing run of `#`s counts only after a space (`# C#` keeps its `#`).
    let open = content.trim_end_matches('#');
    let content = if open.is_empty() {
        ""
    } else if open.len() < content.len() && open.ends_with([' ', '\t']) {
        open.trim_end_matches([' ', '\t'])
    } else {
        content
    };
    Some((hashes as u8, content))
}

/// An open fenced code block: its character, the length of its run and its indentation.
#[derive(Clone, Copy)]
struct Fence {
    mark: char,
    run: usize,
    indent: usize,
}

/// The opening of a fenced code block. Any indentation opens one (a fence in a list item is
/// indented), and the closing run may be indented at most three columns more than the opening,
/// so an indented example fence inside a fence stays inside it.
fn fence_open(line: &str) -> Option<Fence> {
    let t = line.trim_start();
    let mark = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = t.len() - t.trim_start_matches(mark).len();
    // A backtick fence's info string may not hold a backtick (that is inline code).
    (run >= 3 && !(mark == '`' && t[run..].contains('`'))).then_some(Fence {
        mark,
        run,
        indent: indent(line),
    })
}

fn fence_closes(line: &str, open: Fence) -> bool {
    let t = line.trim();
    let run = t.len() - t.trim_start_matches(open.mark).len();
    run >= open.run && t[run..].trim().is_empty() && indent(line) <= open.indent + 3
}

/// A setext underline's level (`=` 1, `-` 2).
fn underline(line: &str) -> Option<u8> {
    if indent(line) > 3 {
        return None;
    }
    let t = line.trim();
    if t.is_empty() {
        None
    } else if t.bytes().all(|b| b == b'=') {
        Some(1)
    } else if t.bytes().all(|b| b == b'-') {
        Some(2)
    } else {
        None
    }
}

/// `***`, `___`, `- - -`: a thematic break.
fn thematic(line: &str) -> bool {
    if indent(line) > 3 {
        return false;
    }
    let marks: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
    marks.len() >= 3 && ['-', '*', '_'].iter().any(|m| marks.iter().all(|c| c == m))
}

/// A line that starts a block other than a paragraph, so a `---` under it is no heading: a list
/// item, a quote, a table row.
fn starts_other_block(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with('>') || t.starts_with('|') {
        return true;
    }
    if ["- ", "* ", "+ "].iter().any(|m| t.starts_with(m)) || ["-", "*", "+"].contains(&t) {
        return true;
    }
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    (1..=9).contains(&digits) && {
        let rest = &t[digits..];
        rest == "." || rest == ")" || rest.starts_with(". ") || rest.starts_with(") ")
    }
}

/// The line index closing front matter that opens the document (`---` … `---` or `...`).
fn front_matter_end(lines: &[Line<'_>]) -> Option<usize> {
    if lines.first()?.text.trim_end() != "---" {
        return None;
    }
    lines
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, l)| matches!(l.text.trim_end(), "---" | "..."))
        .map(|(i, _)| i)
}

/// A paragraph being read, which an underline may turn into a setext heading.
struct Paragraph<'a> {
    start: usize,
    plain: bool,
    lines: Vec<&'a str>,
}

/// Headings of `text` (level, text, 0-based first line).
fn scan(lines: &[Line<'_>]) -> Vec<(u8, String, usize)> {
    let mut found = Vec::new();
    let first = front_matter_end(lines).map_or(0, |end| end + 1);
    let mut fence: Option<Fence> = None;
    let mut comment = false;
    let mut para: Option<Paragraph<'_>> = None;
    for (i, line) in lines.iter().enumerate().skip(first) {
        let t = line.text;
        if let Some(open) = fence {
            if fence_closes(t, open) {
                fence = None;
            }
            continue;
        }
        if comment {
            comment = !t.contains("-->");
            continue;
        }
        if t.trim().is_empty() {
            para = None;
            continue;
        }
        if let Some(open) = fence_open(t) {
            fence = Some(open);
            para = None;
            continue;
        }
        if let Some(at) = t.find("<!--")
            && t[..at].trim().is_empty()
        {
            comment = !t[at + 4..].contains("-->");
            para = None;
            continue;
        }
        if let Some((level, text)) = atx(t) {
            found.push((level, text.to_owned(), i));
            para = None;
            continue;
        }
        if let Some(level) = underline(t) {
            if let Some(p) = para.take().filter(|p| p.plain) {
                let text = p
                    .lines
                    .iter()
                    .map(|l| l.trim())
                    .collect::<Vec<_>>()
                    .join(" ");
                found.push((level, text, p.start));
                continue;
            }
            if level == 2 {
                // A thematic break (or an empty list item): it ends any paragraph.
                continue;
            }
        }
        if thematic(t) {
            para = None;
            continue;
        }
        match &mut para {
            Some(p) => {
                p.plain &= !starts_other_block(t);
                p.lines.push(t);
            }
            None => {
                para = Some(Paragraph {
                    start: i,
                    plain: indent(t) < 4 && !starts_other_block(t),
                    lines: vec![t],
                });
            }
        }
    }
    found
}

/// Case and runs of white space ignored.
fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// A GitHub-style anchor: lower case, spaces to `-`, punctuation dropped.
fn slug(s: &str) -> String {
    norm(s)
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// `3. Data Model`, `4.2 Data Model` → `Data Model`.
fn unnumbered(s: &str) -> Option<&str> {
    let rest = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    (rest.len() < s.len() && rest.starts_with(' ')).then(|| rest.trim_start())
}

/// Parses `text`'s headings and sections.
pub fn parse(text: &str) -> Outline {
    let lines = split_lines(text);
    let found = scan(&lines);
    let byte_of = |line: usize| lines.get(line).map_or(text.len(), |l| l.start);
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut headings = Vec::with_capacity(found.len());
    for (k, (level, text, start)) in found.iter().enumerate() {
        let end = found[k + 1..]
            .iter()
            .find(|(l, _, _)| l <= level)
            .map_or(lines.len(), |(_, _, s)| *s);
        let n = seen.entry(norm(text)).or_insert(0);
        *n += 1;
        let name = if *n == 1 || text.is_empty() {
            text.clone()
        } else {
            format!("{text} ({n})")
        };
        headings.push(Heading {
            level: *level,
            text: text.clone(),
            name,
            line: start + 1,
            last_line: end.max(start + 1),
            bytes: byte_of(*start)..byte_of(end),
        });
    }
    Outline {
        headings,
        lines: lines.len(),
        bytes: text.len(),
        front_matter: front_matter_end(&lines).map(|end| end + 1),
    }
}

impl Outline {
    /// The heading `query` names (its index), by the rules of the module documentation. Leading
    /// `#`s and surrounding spaces of the query are ignored.
    pub fn find(&self, query: &str) -> Result<usize, Miss> {
        let q = norm(query.trim().trim_start_matches('#'));
        if q.is_empty() {
            return Err(Miss::Empty);
        }
        let named = |h: &Heading| !h.text.is_empty();
        let first = |pred: &dyn Fn(&Heading) -> bool| {
            self.headings.iter().position(|h| named(h) && pred(h))
        };
        if let Some(i) = first(&|h| norm(&h.text) == q)
            .or_else(|| first(&|h| norm(&h.name) == q))
            .or_else(|| first(&|h| slug(&h.text) == slug(&q)))
            .or_else(|| first(&|h| unnumbered(&h.text).is_some_and(|t| norm(t) == q)))
        {
            return Ok(i);
        }
        // A start ends at a word's end: `Story 1.1` starts `Story 1.1: A`, not `Story 1.10: B`;
        // as an anchor, `implementation-patterns` starts `Implementation Patterns & Rules`.
        let starts_word = |text: &str, start: &str| {
            !start.is_empty()
                && text
                    .strip_prefix(start)
                    .and_then(|rest| rest.chars().next())
                    .is_some_and(|c| !c.is_alphanumeric())
        };
        let q_slug = slug(&q);
        let starts: Vec<usize> = (0..self.headings.len())
            .filter(|&i| {
                let text = &self.headings[i].text;
                starts_word(&norm(text), &q) || starts_word(&slug(text), &q_slug)
            })
            .collect();
        match starts.as_slice() {
            [] => Err(Miss::NotFound),
            [i, rest @ ..]
                if rest
                    .iter()
                    .all(|j| norm(&self.headings[*j].text) == norm(&self.headings[*i].text)) =>
            {
                Ok(*i)
            }
            _ => Err(Miss::Ambiguous(starts)),
        }
    }

    /// The headings with the same text as heading `i` (indexes, `i` included), in order.
    pub fn namesakes(&self, i: usize) -> Vec<usize> {
        let Some(h) = self.headings.get(i) else {
            return Vec::new();
        };
        let key = norm(&h.text);
        (0..self.headings.len())
            .filter(|&j| norm(&self.headings[j].text) == key)
            .collect()
    }

    /// Heading `i` and the headings nested in its section.
    pub fn within(&self, i: usize) -> &[Heading] {
        let Some(h) = self.headings.get(i) else {
            return &[];
        };
        let nested = self.headings[i + 1..]
            .iter()
            .take_while(|n| n.line <= h.last_line)
            .count();
        &self.headings[i..=i + nested]
    }

    /// One line per heading: its `#`s, its name, its first line and the size of its section.
    pub fn listing(headings: &[Heading]) -> String {
        let mut out = String::new();
        for h in headings {
            let name = if h.name.is_empty() {
                "(empty heading)"
            } else {
                &h.name
            };
            out.push_str(&format!(
                "{} {name}  [line {}, {} lines, {}]\n",
                "#".repeat(usize::from(h.level)),
                h.line,
                h.lines(),
                size(h.bytes.len())
            ));
        }
        out
    }
}

/// A size for people and models: `812 B`, `2.4 KB`.
pub fn size(bytes: usize) -> String {
    if bytes < 1000 {
        format!("{bytes} B")
    } else {
        format!("{:.1} KB", bytes as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests;
