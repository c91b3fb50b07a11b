//! The BMad story file's status ledger: its `Status:` line, title and File List.
//!
//! This module owns reading and rewriting the story-side status of a BMad story file
//! (`{implementation_artifacts}/{N}-{M}-{slug}.md`, BMAD-FORMAT.md §3 and R6): the bare
//! `Status: <value>` line under the `# Story N.M: Title` heading, which BMad workflows rewrite and
//! which must stay equal to `development_status[key]` in `sprint-status.yaml`. Edits change only
//! the value on that line (or insert the line where the template puts it), so every other byte of
//! the story — frontmatter, tasks, Dev Agent Record — is kept. It also reads the title and the
//! `### File List` of the Dev Agent Record. Files are written with
//! [`crate::atomic::replace_durable`].

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::atomic::{WriteError, replace_durable};
use crate::frontmatter::body_offset;

/// The story's `Status:` line: where it is and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLine {
    /// 1-based line number in the file (frontmatter lines included).
    pub line: usize,
    /// The value, trimmed and without decoration (`**review**` reads as `review`); may be empty.
    pub value: String,
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

/// The byte range (within `content`) of the value of a `Status:` line, without decoration.
fn status_value(content: &str) -> Option<Range<usize>> {
    let lead = content.len() - content.trim_start().len();
    let rest = &content[lead..];
    let label = ["Status:", "**Status:**", "**Status**:"]
        .into_iter()
        .find(|l| rest.starts_with(l))?;
    let mut start = lead + label.len();
    let mut end = content.len();
    if let Some(comment) = content[start..].find("<!--") {
        end = start + comment;
    }
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
    Some(start..end)
}

/// `(1-based line, byte range of the value in text)` of the story's `Status:` line.
fn locate_status(text: &str) -> Option<(usize, Range<usize>)> {
    for line in body_lines(text) {
        if line.fenced {
            continue;
        }
        if let Some((2, title)) = heading(line.content)
            && title.eq_ignore_ascii_case("Dev Agent Record")
        {
            return None;
        }
        if let Some(range) = status_value(line.content) {
            return Some((line.no, line.start + range.start..line.start + range.end));
        }
    }
    None
}

/// The first `Status: <value>` line of the story body (after any frontmatter), also accepting
/// `**Status:** <value>` and surrounding spaces; searched before `## Dev Agent Record`, so the
/// line under the title wins over anything further down. Lines in code fences are skipped.
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
    if let Some((_, range)) = locate_status(text) {
        if text[range.clone()] == new {
            return text.to_owned();
        }
        return format!("{}{}{}", &text[..range.start], new, &text[range.end..]);
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
/// text changed; returns whether it changed.
pub fn sync_status(path: &Path, new: &str) -> Result<bool, StoryFileError> {
    let text =
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
        })?;
    let updated = set_status(&text, new);
    if updated == text {
        return Ok(false);
    }
    replace_durable(path, updated.as_bytes())?;
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
