//! The BMad story file's status ledger: its `Status:` line, title and File List.
//!
//! This module owns reading and rewriting the story-side status of a BMad story file
//! (`{implementation_artifacts}/{N}-{M}-{slug}.md`, BMAD-FORMAT.md §3 and R6): the bare
//! `Status: <value>` line under the `# Story N.M: Title` heading, which BMad workflows rewrite and
//! which must stay equal to `development_status[key]` in `sprint-status.yaml`. Real story files
//! also write it as `**Status:** x`, `## Status: x`, `> **Status:** x`, a `## Status` heading
//! with the value on the next line, or a frontmatter `status:` key ([`StatusForm`]); every form
//! is read, and an edit changes only the value where it is (or inserts the line where the
//! template puts it when there is none), so every other byte of the story — frontmatter, tasks,
//! Dev Agent Record — is kept. It also finds a story's file in the story directory or one of its
//! subfolders ([`find`], or [`find_indexed`] without listing the folder on every call: see
//! [`lookup`]), and reads the title and the `### File List` of the Dev Agent Record.
//! Files are written with [`crate::atomic::replace_unsynced`] (the sprint file is the durable
//! copy of a status).

use std::fs;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::atomic::{WriteError, replace_unsynced};
use crate::frontmatter::body_offset;

pub mod lookup;
pub use lookup::{StoryIndex, find_indexed};

/// The story's `Status:` line: where it is and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLine {
    /// 1-based line number in the file (frontmatter lines included).
    pub line: usize,
    /// The value, trimmed and without decoration (`**review**` reads as `review`); may be empty.
    pub value: String,
}

/// How a story file writes its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StatusForm {
    /// `Status: x` or `**Status:** x` on a line of its own (the BMad template).
    Line,
    /// `## Status: x`: a heading holding the value.
    Heading,
    /// `> **Status:** x`: inside a block quote.
    Quote,
    /// A `## Status` heading with the value on the next non-blank line.
    HeadingNextLine,
    /// A `status:` key in the YAML frontmatter.
    Frontmatter,
}

/// An error reading or writing a story file, naming it.
#[derive(Debug, thiserror::Error)]
pub enum StoryFileError {
    /// The story file does not exist.
    #[error("story file `{}` does not exist", path.display())]
    Missing {
        /// The story file.
        path: PathBuf,
    },
    /// The story file could not be read (or is not UTF-8).
    #[error("cannot read story file `{}`: {source}", path.display())]
    Read {
        /// The story file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The story file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// One line of the body: its 1-based file line number, byte offsets and content without ending.
struct Line<'a> {
    no: usize,
    start: usize,
    /// Offset just past the line ending (or the end of the text).
    end: usize,
    content: &'a str,
    /// Whether the line is inside (or opens/closes) a fenced code block.
    fenced: bool,
}

fn body_lines(text: &str) -> Vec<Line<'_>> {
    let body = body_offset(text);
    let mut no = text[..body].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut pos = body;
    let mut in_fence = false;
    while pos < text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let raw = &text[pos..end];
        let content = raw.strip_suffix('\n').unwrap_or(raw);
        let content = content.strip_suffix('\r').unwrap_or(content);
        let trimmed = content.trim_start();
        let fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if fence {
            in_fence = !in_fence;
        }
        out.push(Line {
            no,
            start: pos,
            end,
            content,
            fenced: fence || in_fence,
        });
        no += 1;
        pos = end;
    }
    out
}

/// `(level, title)` of an ATX heading line (`## Title`).
fn heading(content: &str) -> Option<(usize, &str)> {
    let trimmed = content.trim_start_matches(' ');
    if content.len() - trimmed.len() > 3 {
        return None;
    }
    let level = trimmed.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim_end()))
}

/// The byte range within `content` of `content[start..end]` without surrounding spaces and
/// markdown decoration (`**x**`, `` `x` ``, `_x_`).
fn undecorate(content: &str, mut start: usize, mut end: usize) -> Range<usize> {
    loop {
        let value = &content[start..end];
        let trimmed_start = value.trim_start();
        start += value.len() - trimmed_start.len();
        end = start + trimmed_start.trim_end().len();
        let value = &content[start..end];
        let wrapped = ["**", "__", "`", "*", "_"]
            .into_iter()
            .find(|w| value.len() > 2 * w.len() && value.starts_with(w) && value.ends_with(w));
        match wrapped {
            Some(w) => {
                start += w.len();
                end -= w.len();
            }
            None => break,
        }
    }
    start..end
}

/// The byte range (within `content`) of the value of a `Status:` line, without decoration, and
/// the line's form. Accepts a block-quote prefix (`> `) and a heading prefix (`## `).
fn status_value(content: &str) -> Option<(Range<usize>, StatusForm)> {
    let mut lead = content.len() - content.trim_start().len();
    let mut form = StatusForm::Line;
    if content[lead..].starts_with('>') {
        lead += 1;
        lead += content[lead..].len() - content[lead..].trim_start().len();
        form = StatusForm::Quote;
    }
    let hashes = content[lead..].bytes().take_while(|&b| b == b'#').count();
    if (1..=6).contains(&hashes) && content[lead + hashes..].starts_with([' ', '\t']) {
        lead += hashes;
        lead += content[lead..].len() - content[lead..].trim_start().len();
        form = StatusForm::Heading;
    }
    let rest = &content[lead..];
    let label = [
        "Status:",
        "**Status:**",
        "**Status**:",
        "*Status:*",
        "__Status:__",
    ]
    .into_iter()
    .find(|l| rest.starts_with(l))?;
    let start = lead + label.len();
    let mut end = content.len();
    if let Some(comment) = content[start..].find("<!--") {
        end = start + comment;
    }
    if form == StatusForm::Heading {
        // A closing `##` sequence is not part of the value.
        let trimmed = content[start..end].trim_end();
        let closing = trimmed.trim_end_matches('#');
        if closing.len() < trimmed.len() && (closing.is_empty() || closing.ends_with(' ')) {
            end = start + closing.len();
        }
    }
    Some((undecorate(content, start, end), form))
}

/// The value in a frontmatter `status:` line, if the line is one.
fn frontmatter_status(content: &str) -> Option<Range<usize>> {
    let rest = content.strip_prefix("status:")?;
    let start = content.len() - rest.len();
    let mut end = content.len();
    if let Some(i) = rest.find(" #") {
        end = start + i;
    }
    let r = undecorate(content, start, end);
    let v = &content[r.clone()];
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return Some(r.start + 1..r.end - 1);
        }
    }
    Some(r)
}

/// `(1-based line, byte range of the value in text, form)` of every place the story states its
/// status: the first status line of the body (before `## Dev Agent Record`) and a frontmatter
/// `status:` key, in that order.
fn locate_all(text: &str) -> Vec<(usize, Range<usize>, StatusForm)> {
    let mut out = Vec::new();
    let lines = body_lines(text);
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        i += 1;
        if line.fenced {
            continue;
        }
        let h = heading(line.content);
        if let Some((2, title)) = h
            && title.eq_ignore_ascii_case("Dev Agent Record")
        {
            break;
        }
        if let Some((range, form)) = status_value(line.content) {
            out.push((
                line.no,
                line.start + range.start..line.start + range.end,
                form,
            ));
            break;
        }
        if let Some((_, title)) = h
            && title.trim_end_matches(':').eq_ignore_ascii_case("Status")
        {
            // `## Status` with the value on the next non-blank line.
            let next = lines[i..]
                .iter()
                .find(|l| !l.content.trim().is_empty())
                .filter(|l| !l.fenced && heading(l.content).is_none());
            if let Some(l) = next {
                let body = l.content;
                let mut from = body.len() - body.trim_start().len();
                if body[from..].starts_with("- ") || body[from..].starts_with("* ") {
                    from += 2;
                }
                let mut end = body.len();
                if let Some(c) = body[from..].find("<!--") {
                    end = from + c;
                }
                let r = undecorate(body, from, end);
                // A status is a word or a few (`Ready for Review`), not a paragraph: prose under
                // the heading is left alone rather than replaced.
                let v = &body[r.clone()];
                if v.len() <= 40 && v.matches(' ').count() <= 3 && !v.ends_with('.') {
                    out.push((
                        l.no,
                        l.start + r.start..l.start + r.end,
                        StatusForm::HeadingNextLine,
                    ));
                }
            }
            break;
        }
    }
    let fm_end = body_offset(text);
    if fm_end > 0 && text.starts_with("---") {
        let mut pos = 0;
        let mut no = 1;
        while pos < fm_end {
            let end = text[pos..fm_end].find('\n').map_or(fm_end, |i| pos + i + 1);
            let raw = &text[pos..end];
            let content = raw.strip_suffix('\n').unwrap_or(raw);
            let content = content.strip_suffix('\r').unwrap_or(content);
            if let Some(r) = frontmatter_status(content) {
                out.push((no, pos + r.start..pos + r.end, StatusForm::Frontmatter));
                break;
            }
            pos = end;
            no += 1;
        }
    }
    out
}

/// `(1-based line, byte range of the value in text)` of the story's status.
fn locate_status(text: &str) -> Option<(usize, Range<usize>)> {
    locate_all(text).into_iter().next().map(|(l, r, _)| (l, r))
}

/// How the story file states its status, if it does.
pub fn status_form(text: &str) -> Option<StatusForm> {
    locate_all(text).into_iter().next().map(|(_, _, f)| f)
}

/// The story file of `key` in `dir`: `dir/{key}.md`, else a `{key}.md` in a subfolder (up to
/// three levels down, hidden folders skipped, the shallowest and then alphabetically first wins).
pub fn find(dir: &Path, key: &str) -> Option<PathBuf> {
    let name = format!("{key}.md");
    let direct = dir.join(&name);
    if direct.is_file() {
        return Some(direct);
    }
    let mut level = vec![dir.to_path_buf()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for d in &level {
            let Ok(read) = fs::read_dir(d) else { continue };
            let mut subdirs: Vec<PathBuf> = read
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .collect();
            subdirs.sort();
            next.extend(subdirs);
        }
        for d in &next {
            let candidate = d.join(&name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        level = next;
    }
    None
}

/// Every `*.md` file in `dir` and its subfolders (up to three levels down, hidden folders
/// skipped), by file stem: the story files of a sprint, found in one walk. The shallowest file
/// wins when a stem repeats, as in [`find`].
pub fn index(dir: &Path) -> std::collections::HashMap<String, PathBuf> {
    let mut out = std::collections::HashMap::new();
    let mut level = vec![dir.to_path_buf()];
    for depth in 0..4 {
        let mut next = Vec::new();
        for d in &level {
            let Ok(read) = fs::read_dir(d) else { continue };
            let mut entries: Vec<fs::DirEntry> = read.flatten().collect();
            entries.sort_by_key(fs::DirEntry::path);
            for e in entries {
                let Ok(ft) = e.file_type() else { continue };
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if ft.is_dir() {
                    if depth < 3 && !name.starts_with('.') {
                        next.push(path);
                    }
                } else if let Some(stem) = name.strip_suffix(".md") {
                    out.entry(stem.to_owned()).or_insert(path);
                }
            }
        }
        level = next;
    }
    out
}

/// Reads the status of the story file at `path` (`Ok(None)` when the file states none).
pub fn read_status_at(path: &Path) -> Result<Option<StatusLine>, StoryFileError> {
    let text = read_text(path)?;
    Ok(read_status(&text))
}

fn read_text(path: &Path) -> Result<String, StoryFileError> {
    crate::bounded::read_to_string(path, crate::bounded::DOCUMENT_LIMIT).map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            StoryFileError::Missing {
                path: path.to_path_buf(),
            }
        } else {
            StoryFileError::Read {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

/// The story's status: the first status line of the body (after any frontmatter) in any
/// [`StatusForm`], searched before `## Dev Agent Record` so the line under the title wins over
/// anything further down (lines in code fences are skipped); else a frontmatter `status:`.
pub fn read_status(text: &str) -> Option<StatusLine> {
    let (line, range) = locate_status(text)?;
    Some(StatusLine {
        line,
        value: text[range].to_owned(),
    })
}

fn eol_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if text[..i].ends_with('\r') => "\r\n",
        _ => "\n",
    }
}

/// Returns `text` with the story status set to `new` (trimmed; line breaks become spaces).
///
/// An existing `Status:` line keeps its own spelling, decoration and surrounding bytes; only the
/// value changes. Without one, `Status: <new>` is inserted as in the BMad template: after the
/// `# Story …` heading, separated from it and from what follows by a blank line, or at the top of
/// the body (after any frontmatter) followed by a blank line when there is no H1.
pub fn set_status(text: &str, new: &str) -> String {
    let new = new.trim().replace(['\r', '\n'], " ");
    let found = locate_all(text);
    if !found.is_empty() {
        // Every place that states the status gets the value, each in its own form; ranges are
        // replaced back to front so earlier offsets stay right.
        let mut ranges: Vec<Range<usize>> = found.into_iter().map(|(_, r, _)| r).collect();
        ranges.sort_by_key(|r| std::cmp::Reverse(r.start));
        let mut out = text.to_owned();
        for r in ranges {
            if out[r.clone()] != new {
                out.replace_range(r, &new);
            }
        }
        return out;
    }
    let eol = eol_of(text);
    let lines = body_lines(text);
    let h1 = lines
        .iter()
        .position(|l| !l.fenced && matches!(heading(l.content), Some((1, _))));
    let (at, insert) = match h1 {
        Some(i) => {
            let h1 = &lines[i];
            if h1.end == h1.start + h1.content.len() {
                // The heading is the last line and has no line ending.
                (h1.end, format!("{eol}{eol}Status: {new}{eol}"))
            } else {
                let next_blank = lines
                    .get(i + 1)
                    .is_some_and(|l| l.content.trim().is_empty());
                let after = if next_blank || lines.get(i + 1).is_none() {
                    ""
                } else {
                    eol
                };
                (h1.end, format!("{eol}Status: {new}{eol}{after}"))
            }
        }
        None => (body_offset(text), format!("Status: {new}{eol}{eol}")),
    };
    format!("{}{}{}", &text[..at], insert, &text[at..])
}

/// The story title from its H1: `Title` for `# Story N.M: Title`, else the whole heading text.
pub fn title(text: &str) -> Option<String> {
    let lines = body_lines(text);
    let (_, heading_text) = lines
        .iter()
        .filter(|l| !l.fenced)
        .find_map(|l| heading(l.content).filter(|(level, _)| *level == 1))?;
    let story_title = heading_text
        .get(..6)
        .filter(|p| p.eq_ignore_ascii_case("story "))
        .and_then(|_| heading_text[6..].split_once(':'))
        .filter(|(id, _)| !id.trim().is_empty() && !id.trim().contains(' '))
        .map(|(_, t)| t.trim());
    let out = story_title.unwrap_or(heading_text);
    (!out.is_empty()).then(|| out.to_owned())
}

/// The path of one File List item, or `None` for a group label or empty item.
fn file_item(content: &str) -> Option<String> {
    let item = content.trim_start();
    let item = if let Some(rest) = item
        .strip_prefix("- ")
        .or_else(|| item.strip_prefix("* "))
        .or_else(|| item.strip_prefix("+ "))
    {
        rest
    } else {
        let digits = item.bytes().take_while(u8::is_ascii_digit).count();
        let rest = &item[digits..];
        if digits == 0 {
            return None;
        }
        rest.strip_prefix(". ")
            .or_else(|| rest.strip_prefix(") "))?
    };
    let item = item.trim();
    let item = ["[ ] ", "[x] ", "[X] "]
        .into_iter()
        .find_map(|c| item.strip_prefix(c))
        .unwrap_or(item)
        .trim();
    let path = if let Some(open) = item.find('`') {
        let inner = &item[open + 1..];
        let close = inner.find('`')?;
        inner[..close].trim()
    } else {
        let mut path = item.trim_matches('*').trim();
        for sep in [" (", " — ", " – ", " - ", " -- "] {
            if let Some(i) = path.find(sep) {
                path = &path[..i];
            }
        }
        path.trim()
    };
    if path.is_empty() || path.ends_with(':') {
        return None;
    }
    Some(path.to_owned())
}

fn scan_file_list(lines: &[Line<'_>], need_record: bool) -> Vec<String> {
    let mut in_record = !need_record;
    let mut in_list = false;
    let mut out = Vec::new();
    for line in lines {
        if line.fenced {
            continue;
        }
        if let Some((level, title)) = heading(line.content) {
            if in_list {
                break;
            }
            if level <= 2 {
                in_record = !need_record || title.eq_ignore_ascii_case("Dev Agent Record");
            } else {
                in_list = in_record && title.eq_ignore_ascii_case("File List");
            }
            continue;
        }
        if in_list && let Some(path) = file_item(line.content) {
            out.push(path);
        }
    }
    out
}

/// The items of `### File List` under `## Dev Agent Record`, in order, until the next heading.
///
/// Items are list lines (`- path`, `* path`, `1. path`, checkboxes allowed); a backticked path is
/// taken as is, otherwise a trailing ` (note)` or ` - note` is dropped; group labels ending in
/// `:` are skipped. Without a Dev Agent Record, the first `### File List` anywhere is read.
pub fn file_list(text: &str) -> Vec<String> {
    let lines = body_lines(text);
    let has_record = lines.iter().any(|l| {
        !l.fenced
            && heading(l.content)
                .is_some_and(|(lv, t)| lv == 2 && t.eq_ignore_ascii_case("Dev Agent Record"))
    });
    scan_file_list(&lines, has_record)
}

/// Sets the `Status:` line of the story file at `path` to `new`, writing atomically only if the
/// text changed; returns whether it changed. The write is not flushed: the line mirrors the
/// sprint file, which is durable, and reconciliation rewrites it after a crash.
pub fn sync_status(path: &Path, new: &str) -> Result<bool, StoryFileError> {
    let text = read_text(path)?;
    let updated = set_status(&text, new);
    if updated == text {
        return Ok(false);
    }
    replace_unsynced(path, updated.as_bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fs;

    const STORY: &str = "# Story 1.2: User can log in\n\nStatus: ready-for-dev\n\n<!-- Note: Validation is optional. -->\n\n## Story\n\nAs a user, I want to log in, so that I see my data.\n\n## Acceptance Criteria\n\n1. Given a login form\n\n## Tasks / Subtasks\n\n- [ ] Task 1 (AC: #1)\n  - [ ] Subtask 1.1\n\n## Dev Notes\n\nStatus: not this one\n\n## Dev Agent Record\n\n### Agent Model Used\n\nsome-model\n\n### File List\n\n- src/auth/login.rs\n- `src/auth/mod.rs` (modified)\n* tests/login_test.rs - new\n- **New files:**\n\n### Change Log\n\n- 2025-01-01: created\n";

    #[test]
    fn reads_template_status_line() {
        assert_eq!(
            read_status(STORY),
            Some(StatusLine {
                line: 3,
                value: "ready-for-dev".into()
            })
        );
    }

    #[test]
    fn reads_decorated_and_indented_status() {
        let s = read_status("# Story 1.1: X\n\n  **Status:** **review**  \n").unwrap();
        assert_eq!((s.line, s.value.as_str()), (3, "review"));
        let s = read_status("# S\n**Status**: `done` <!-- synced -->\n").unwrap();
        assert_eq!(s.value, "done");
        let s = read_status("# S\n\nStatus:\n").unwrap();
        assert_eq!(s.value, "");
    }

    #[test]
    fn status_search_respects_frontmatter_fences_and_dev_agent_record() {
        let text = "---\nbaseline_commit: abc\nStatus: fake\n---\n# Story 2.1: T\n\n```\nStatus: in-code\n```\nStatus: in-progress\n";
        let s = read_status(text).unwrap();
        assert_eq!((s.line, s.value.as_str()), (10, "in-progress"));
        let later = "# Story 1.1: T\n\n## Story\n\ntext\n\nStatus: review\n\n## Dev Agent Record\n";
        assert_eq!(read_status(later).unwrap().value, "review");
        let none = "# Story 1.1: T\n\n## Dev Agent Record\n\nStatus: done\n";
        assert_eq!(read_status(none), None);
    }

    #[test]
    fn set_status_rewrites_only_the_value() {
        let out = set_status(STORY, "in-progress");
        assert_eq!(
            out,
            STORY.replacen("Status: ready-for-dev", "Status: in-progress", 1)
        );
        assert_eq!(read_status(&out).unwrap().value, "in-progress");
        assert_eq!(
            set_status(STORY, "ready-for-dev"),
            STORY,
            "same value: no change"
        );
        let bold = "# S\r\n\r\n  **Status:** **review**  \r\nrest";
        assert_eq!(
            set_status(bold, " done\n"),
            "# S\r\n\r\n  **Status:** **done**  \r\nrest"
        );
        let commented = "Status: review <!-- keep -->\n";
        assert_eq!(
            set_status(commented, "done"),
            "Status: done <!-- keep -->\n"
        );
        let empty = "# S\n\nStatus:\n";
        assert_eq!(set_status(empty, "done"), "# S\n\nStatus:done\n");
    }

    #[test]
    fn every_dialect_is_read_and_rewritten_in_its_own_form() {
        let cases: [(&str, StatusForm, &str); 7] = [
            (
                "# Story 1.1: T\n\n## Status: drafted\n\n## Story\n",
                StatusForm::Heading,
                "drafted",
            ),
            (
                "# Story 1.1: T\n\n## Status: **review** ##\n",
                StatusForm::Heading,
                "review",
            ),
            (
                "# Story 1.1: T\n\n> **Status:** ready-for-dev\n> **Epic:** 1\n",
                StatusForm::Quote,
                "ready-for-dev",
            ),
            (
                "# Story 1.1: T\n\n## Status\n\nin-progress\n\n## Story\n",
                StatusForm::HeadingNextLine,
                "in-progress",
            ),
            (
                "# Story 1.1: T\n\n## Status\n**done**\n",
                StatusForm::HeadingNextLine,
                "done",
            ),
            (
                "---\nepic: 1\nstatus: 'review'  # set by dev\n---\n# Story 1.1: T\n\n## Story\n",
                StatusForm::Frontmatter,
                "review",
            ),
            (
                "# Story 1.1: T\n\n**Status:** backlog\n",
                StatusForm::Line,
                "backlog",
            ),
        ];
        for (text, form, value) in cases {
            assert_eq!(status_form(text), Some(form), "{text}");
            assert_eq!(read_status(text).unwrap().value, value, "{text}");
            let out = set_status(text, "in-review-x");
            assert_eq!(out, text.replacen(value, "in-review-x", 1), "{text}");
            assert_eq!(status_form(&out), Some(form));
            assert_eq!(
                out.matches("in-review-x").count(),
                1,
                "no second status line"
            );
        }
    }

    #[test]
    fn prose_under_a_status_heading_is_not_a_status() {
        let text = "# Story 1.1: T\n\n## Status\n\nThis story waits for the API team to agree on a schema.\n";
        assert_eq!(read_status(text), None);
        let out = set_status(text, "review");
        assert_eq!(out.matches("waits for the API team").count(), 1);
        assert_eq!(read_status(&out).unwrap().value, "review");
    }

    #[test]
    fn frontmatter_and_body_statuses_are_both_kept_equal() {
        let text = "---\nstatus: review\n---\n# Story 1.1: T\n\nStatus: review\n";
        let out = set_status(text, "done");
        assert_eq!(
            out,
            "---\nstatus: done\n---\n# Story 1.1: T\n\nStatus: done\n"
        );
    }

    #[test]
    fn find_looks_in_subfolders() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("epic-2").join("stories");
        fs::create_dir_all(&sub).unwrap();
        fs::write(sub.join("2-1-a.md"), "Status: done\n").unwrap();
        fs::create_dir_all(dir.path().join(".hidden")).unwrap();
        fs::write(dir.path().join(".hidden/2-2-b.md"), "x").unwrap();
        assert_eq!(find(dir.path(), "2-1-a"), Some(sub.join("2-1-a.md")));
        assert_eq!(find(dir.path(), "2-2-b"), None);
        let idx = index(dir.path());
        assert_eq!(idx.get("2-1-a"), Some(&sub.join("2-1-a.md")));
        assert!(!idx.contains_key("2-2-b"));
        fs::write(dir.path().join("2-1-a.md"), "Status: review\n").unwrap();
        assert_eq!(find(dir.path(), "2-1-a"), Some(dir.path().join("2-1-a.md")));
        assert_eq!(
            read_status_at(&sub.join("2-1-a.md"))
                .unwrap()
                .unwrap()
                .value,
            "done"
        );
    }

    #[test]
    fn set_status_inserts_after_h1_or_at_top() {
        let no_status = "# Story 1.1: T\n\n## Story\n\nbody\n";
        let out = set_status(no_status, "ready-for-dev");
        assert_eq!(
            out,
            "# Story 1.1: T\n\nStatus: ready-for-dev\n\n## Story\n\nbody\n"
        );
        assert_eq!(read_status(&out).unwrap().line, 3);
        let tight = "# Story 1.1: T\n## Story\n";
        assert_eq!(
            set_status(tight, "done"),
            "# Story 1.1: T\n\nStatus: done\n\n## Story\n"
        );
        assert_eq!(
            set_status("# Story 1.1: T", "done"),
            "# Story 1.1: T\n\nStatus: done\n"
        );
        assert_eq!(
            set_status("# Story 1.1: T\n", "done"),
            "# Story 1.1: T\n\nStatus: done\n"
        );
        let fm = "---\r\nbaseline_commit: NO_VCS\r\n---\r\n## Story\r\n";
        assert_eq!(
            set_status(fm, "review"),
            "---\r\nbaseline_commit: NO_VCS\r\n---\r\nStatus: review\r\n\r\n## Story\r\n"
        );
        assert_eq!(set_status("", "backlog"), "Status: backlog\n\n");
        let with_fm_h1 = "---\nbaseline_commit: abc\n---\n# Story 3.1: X\n\nbody\n";
        let out = set_status(with_fm_h1, "in-progress");
        assert_eq!(
            out,
            "---\nbaseline_commit: abc\n---\n# Story 3.1: X\n\nStatus: in-progress\n\nbody\n"
        );
        assert_eq!(read_status(&out).unwrap().line, 6);
    }

    #[test]
    fn reads_title() {
        assert_eq!(title(STORY).as_deref(), Some("User can log in"));
        assert_eq!(
            title("---\na: 1\n---\n# Story 1.10b: Thing: more\n").as_deref(),
            Some("Thing: more")
        );
        assert_eq!(
            title("# Just a heading\n").as_deref(),
            Some("Just a heading")
        );
        assert_eq!(title("## Story\n"), None);
        assert_eq!(title("#NoSpace\n"), None);
    }

    #[test]
    fn reads_file_list_under_dev_agent_record() {
        assert_eq!(
            file_list(STORY),
            vec![
                "src/auth/login.rs",
                "src/auth/mod.rs",
                "tests/login_test.rs"
            ]
        );
        let fallback = "# S\n\n### File List\n\n1. a.rs\n2) b.rs\n- [x] c.rs\n\n## Next\n- d.rs\n";
        assert_eq!(file_list(fallback), vec!["a.rs", "b.rs", "c.rs"]);
        let other_section = "# S\n## Dev Notes\n### File List\n- wrong.rs\n## Dev Agent Record\n### File List\n- right.rs\n";
        assert_eq!(file_list(other_section), vec!["right.rs"]);
        assert!(file_list("# S\n").is_empty());
    }

    #[test]
    fn sync_status_writes_only_on_change() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("1-2-login.md");
        let err = sync_status(&p, "done").unwrap_err();
        assert!(matches!(err, StoryFileError::Missing { .. }));
        assert!(err.to_string().contains("1-2-login.md"), "{err}");
        fs::write(&p, STORY).unwrap();
        assert!(sync_status(&p, "review").unwrap());
        assert_eq!(
            read_status(&fs::read_to_string(&p).unwrap()).unwrap().value,
            "review"
        );
        let before = fs::metadata(&p).unwrap().modified().unwrap();
        assert!(!sync_status(&p, "review").unwrap());
        assert_eq!(fs::metadata(&p).unwrap().modified().unwrap(), before);
    }

    proptest! {
        #[test]
        fn set_status_keeps_every_other_byte(
            prefix in "[a-zA-Z0-9 #\n]{0,40}",
            suffix in any::<String>(),
            value in "[a-z][a-z-]{0,15}",
        ) {
            let text = format!("# Story 1.1: T\n\nStatus: backlog\n{suffix}");
            let out = set_status(&text, &value);
            prop_assert_eq!(out, format!("# Story 1.1: T\n\nStatus: {value}\n{suffix}"));
            let any_text = format!("{prefix}{suffix}");
            let out = set_status(&any_text, &value);
            prop_assert_eq!(read_status(&out).map(|s| s.value), Some(value.clone()));
        }

        #[test]
        fn readers_never_panic(text in any::<String>()) {
            let _ = read_status(&text);
            let _ = title(&text);
            let _ = file_list(&text);
            let _ = set_status(&text, "done");
        }
    }
}
