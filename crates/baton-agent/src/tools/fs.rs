//! File tools: `read_file`, `write_file`, `edit_file`, `list_files` and `grep`.
//!
//! Every path an agent names goes through [`Sandbox::resolve`] here, even though the guard has
//! already checked it (defence in depth), and the tools then work on the resolved, symlink-free
//! path. Listing and searching walk the root with `std::fs` without following symlinked
//! directories, skip `.git/`, `target/`, `node_modules/` and `.baton/` at any depth, and leave out
//! files the sandbox would refuse (deny patterns, symlinks leading outside). Output is bounded:
//! every cut is marked in the text so the model knows it saw only part.

use super::{BoxFuture, Tool, ToolContext, ToolResult, sections, str_arg};
use crate::sandbox::{Access, Refusal, Sandbox};
use baton_llm::ToolSpec;
use globset::{GlobBuilder, GlobMatcher};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Text returned by `read_file` at most, in bytes; the rest is cut with a marker.
pub const READ_LIMIT_BYTES: usize = 100_000;
/// Files larger than this are not read (use `grep` or `offset_line` on smaller files).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Directories never walked by `list_files` and `grep`, at any depth (and `.git` in any case).
pub const SKIPPED_DIRS: [&str; 4] = [".git", "target", "node_modules", ".baton"];
/// Bytes inspected for a NUL byte to tell binary files from text.
const BINARY_SNIFF_BYTES: usize = 8000;
/// Default and largest number of paths `list_files` returns.
const LIST_DEFAULT: usize = 500;
const LIST_MAX: usize = 5000;
/// Default and largest number of matches `grep` returns.
const GREP_DEFAULT: usize = 200;
const GREP_MAX: usize = 2000;
/// Longest matching line shown by `grep`, in characters.
const GREP_LINE_CHARS: usize = 300;
/// Directory entries visited at most by one walk (a guard against huge trees).
const WALK_MAX_ENTRIES: usize = 200_000;

/// The file tools, in the order they are described to the model.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFile),
        Arc::new(WriteFile),
        Arc::new(EditFile),
        Arc::new(ListFiles),
        Arc::new(Grep),
    ]
}

/// `read_file {path, section?, outline?, offset_line?, max_lines?}`: a text file, lines of it,
/// one section of a Markdown document, or the document's outline.
pub struct ReadFile;
/// `write_file {path, content}`: creates or replaces a file (and its parent directories).
pub struct WriteFile;
/// `edit_file {path, old_string, new_string}`: replaces one exact, unique occurrence.
pub struct EditFile;
/// `list_files {pattern?, max?}`: project files matching a glob, sorted.
pub struct ListFiles;
/// `grep {pattern, path_glob?, max_matches?}`: lines matching a regex, as `path:line: text`.
pub struct Grep;

fn refused(r: Refusal) -> ToolResult {
    ToolResult::error(r.to_string())
}

/// Reads an optional non-negative integer argument (numbers, or numeric strings as models
/// sometimes send).
fn opt_usize(args: &Value, name: &str) -> Result<Option<usize>, ToolResult> {
    let bad = || ToolResult::error(format!("argument `{name}` must be a non-negative integer"));
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                Ok(Some(usize::try_from(u).unwrap_or(usize::MAX)))
            } else {
                match n.as_f64() {
                    Some(f) if f >= 0.0 && f.fract() == 0.0 => Ok(Some(f as usize)),
                    _ => Err(bad()),
                }
            }
        }
        Some(Value::String(s)) => s.trim().parse::<usize>().map(Some).map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

fn opt_str<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, ToolResult> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(ToolResult::error(format!(
            "argument `{name}` must be a string"
        ))),
    }
}

/// Whether the bytes look binary (a NUL byte near the start).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// The largest index `<= i` that is a char boundary of `s`.
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Reads a text file the sandbox resolved, with the same refusals for all tools. Invalid UTF-8
/// is shown with replacement characters (for reading only: see [`read_exact_text`]).
async fn read_text(abs: &Path, shown: &str) -> Result<String, ToolResult> {
    Ok(
        match String::from_utf8(read_text_bytes(abs, shown).await?) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        },
    )
}

/// Reads a text file for an edit: its bytes must be valid UTF-8, because writing back a lossy
/// decoding would replace every invalid byte of the file with U+FFFD.
async fn read_exact_text(abs: &Path, shown: &str) -> Result<String, ToolResult> {
    String::from_utf8(read_text_bytes(abs, shown).await?).map_err(|e| {
        ToolResult::error(format!(
            "`{shown}` is not valid UTF-8 (first invalid byte at offset {}); edit_file would              corrupt it. Rewrite it whole with write_file, or leave it as it is",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The bytes of a text file the sandbox resolved, with the same refusals for all tools.
async fn read_text_bytes(abs: &Path, shown: &str) -> Result<Vec<u8>, ToolResult> {
    let meta = match tokio::fs::metadata(abs).await {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolResult::error(format!("`{shown}` does not exist")));
        }
        Err(e) => return Err(ToolResult::error(format!("cannot read `{shown}`: {e}"))),
    };
    if meta.is_dir() {
        return Err(ToolResult::error(format!(
            "`{shown}` is a directory; use list_files to see its files"
        )));
    }
    if !meta.is_file() {
        return Err(ToolResult::error(format!(
            "`{shown}` is not a regular file"
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ToolResult::error(format!(
            "`{shown}` is too large to read ({} bytes, limit {MAX_FILE_BYTES}); use grep to find \
             what you need",
            meta.len()
        )));
    }
    let bytes = tokio::fs::read(abs)
        .await
        .map_err(|e| ToolResult::error(format!("cannot read `{shown}`: {e}")))?;
    if looks_binary(&bytes) {
        return Err(ToolResult::error(format!(
            "`{shown}` looks like a binary file ({} bytes); not shown",
            bytes.len()
        )));
    }
    Ok(bytes)
}

fn path_schema(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

const PATH_DESCRIPTION: &str =
    "Path relative to the project root (no `..`; absolute paths only inside the project).";

impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".to_owned(),
            description: format!(
                "Read a text file of the project, or one section of a Markdown document. For a \
                 long document (architecture, PRD, epics), call it first with `outline: true` to \
                 list its headings with their line numbers and sizes, then read only the \
                 sections you need with `section`. A reference written as BMad writes them, \
                 `docs/architecture.md#Data Model`, works as the `path` as it is. Output is cut \
                 after about {} KB with a marker saying how to continue (offset_line). Binary \
                 files are refused.",
                READ_LIMIT_BYTES / 1000
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": path_schema(
                        "Path relative to the project root (no `..`; absolute paths only inside \
                         the project). It may end in `#Heading` (`docs/architecture.md#Data \
                         Model`): then only that section is read, as with `section`. A file \
                         whose name really contains `#` is read whole."
                    ),
                    "section": {
                        "type": "string",
                        "description": "A heading of the document: its text without the `#`s, \
                                        any letter case (a repeated heading as the outline \
                                        lists it, `Decision (2)`). Returns that heading's line \
                                        through the end of its nested subsections. A heading \
                                        that does not exist is an error listing the headings."
                    },
                    "outline": {
                        "type": "boolean",
                        "description": "true: list the document's headings (level, line, size \
                                        of each section) instead of its text; with `section`, \
                                        only the headings inside that section."
                    },
                    "offset_line": {
                        "type": "integer", "minimum": 1,
                        "description": "First line to return (1-based, default 1), counted in \
                                        what is returned: the file, the section (its heading is \
                                        line 1) or the outline."
                    },
                    "max_lines": {
                        "type": "integer", "minimum": 1,
                        "description": "Most lines to return (default: as many as fit)."
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn writes(&self) -> bool {
        false
    }

    fn path_args(&self) -> &'static [&'static str] {
        &["path"]
    }

    fn path_alternatives<'v>(&self, value: &'v str) -> Vec<&'v str> {
        section_splits(value).map(|(file, _)| file).collect()
    }

    fn call<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match read_file(args, ctx).await {
                Ok(r) | Err(r) => r,
            }
        })
    }
}

/// The ways to read `path` as `file#Heading`, in order: split at each `#` that has a file
/// name before it.
fn section_splits(path: &str) -> impl Iterator<Item = (&str, &str)> {
    path.match_indices('#')
        .map(|(i, _)| (&path[..i], &path[i + 1..]))
        .filter(|(file, _)| !file.is_empty() && !file.ends_with('/'))
}

/// Whether something is at the resolved path `abs` (an unreadable entry counts: reading it then
/// says why it cannot be read).
fn exists(abs: &Path) -> bool {
    match std::fs::symlink_metadata(abs) {
        Ok(_) => true,
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

/// The file `path` names and the heading its `#` suffix names, if any. A file with the whole
/// name wins; otherwise the first `file#Heading` reading whose file exists. Every path opened is
/// resolved by the sandbox, so a suffix never reaches a file the whole path could not.
fn locate<'p>(sandbox: &Sandbox, path: &'p str) -> Result<(PathBuf, Option<&'p str>), ToolResult> {
    let whole = sandbox.resolve(path, Access::Read).map_err(refused)?;
    if exists(&whole) || !path.contains('#') {
        return Ok((whole, None));
    }
    let mut longest = None;
    for (file, heading) in section_splits(path) {
        let abs = sandbox.resolve(file, Access::Read).map_err(refused)?;
        if exists(&abs) {
            return Ok((abs, Some(heading)));
        }
        longest = Some(file);
    }
    Err(ToolResult::error(match longest {
        Some(file) => format!("`{path}` does not exist, and neither does `{file}`"),
        None => format!("`{path}` does not exist"),
    }))
}

/// Reads an optional boolean argument (`true`, or the string `"true"` as models sometimes send).
fn opt_bool(args: &Value, name: &str) -> Result<Option<bool>, ToolResult> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(_) => Err(ToolResult::error(format!(
            "argument `{name}` must be true or false"
        ))),
    }
}

async fn read_file(args: &Value, ctx: &ToolContext) -> Result<ToolResult, ToolResult> {
    let path = str_arg(args, "path")?;
    let offset = opt_usize(args, "offset_line")?.unwrap_or(1).max(1);
    let max_lines = opt_usize(args, "max_lines")?;
    if max_lines == Some(0) {
        return Err(ToolResult::error("argument `max_lines` must be at least 1"));
    }
    let section = opt_str(args, "section")?;
    let outline = opt_bool(args, "outline")?.unwrap_or(false);
    let (abs, suffix) = locate(&ctx.sandbox, path)?;
    let shown = ctx.sandbox.relative(&abs);
    // The `section` argument and the path's `#` suffix may both name the section, if the same.
    let queries: Vec<&str> = [section, suffix]
        .into_iter()
        .flatten()
        .filter(|q| !q.trim().is_empty())
        .collect();
    let text = read_text(&abs, &shown).await?;
    if queries.is_empty() && !outline {
        if text.is_empty() {
            return Ok(ToolResult::ok(format!("[`{shown}` is empty]")));
        }
        return Ok(ToolResult::ok(select_lines(
            &text,
            offset,
            max_lines,
            &Paged::File,
        )?));
    }
    let doc = sections::parse(&text);
    let mut found = None;
    for query in queries {
        let i = doc
            .find(query)
            .map_err(|miss| no_section(&doc, &shown, query, miss))?;
        if found.is_some_and(|f| f != i) {
            return Err(ToolResult::error(format!(
                "`{path}` and `section` name different sections; name one"
            )));
        }
        found = Some(i);
    }
    match found {
        Some(i) if !outline => Ok(ToolResult::ok(read_section(
            &text, &doc, i, &shown, offset, max_lines,
        )?)),
        _ => Ok(ToolResult::ok(select_lines(
            &outline_text(&doc, &shown, found),
            offset,
            max_lines,
            &Paged::Outline,
        )?)),
    }
}

/// The section of heading `i`, paged; a note after it names the other headings with the same
/// text, if any.
fn read_section(
    text: &str,
    doc: &sections::Outline,
    i: usize,
    shown: &str,
    offset: usize,
    max_lines: Option<usize>,
) -> Result<String, ToolResult> {
    let Some(heading) = doc.headings.get(i) else {
        return Err(ToolResult::error(format!("`{shown}` has no such section")));
    };
    let body = text.get(heading.bytes.clone()).unwrap_or_default();
    let mut out = select_lines(body, offset, max_lines, &Paged::Section(&heading.name))?;
    let others: Vec<String> = doc
        .namesakes(i)
        .into_iter()
        .filter(|&j| j != i)
        .filter_map(|j| doc.headings.get(j))
        .map(|h| format!("`{}` (line {})", h.name, h.line))
        .collect();
    if !others.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "[… this is `{}` (line {}) of `{shown}`; other headings with the same text: {} …]",
            heading.name,
            heading.line,
            others.join(", ")
        ));
    }
    Ok(out)
}

/// Headings listed at most in the error for a missing section (the outline lists them all).
const MISS_LIST_MAX: usize = 300;

/// The outline of a document, or of the section of heading `within`.
fn outline_text(doc: &sections::Outline, shown: &str, within: Option<usize>) -> String {
    const HOW: &str = "Read a section with `section` set to its heading as listed; sizes include \
                       nested subsections.";
    if doc.headings.is_empty() {
        return format!(
            "`{shown}` has no Markdown headings ({} lines, {}); read it without `section` or \
             `outline`",
            doc.lines,
            sections::size(doc.bytes)
        );
    }
    match within.and_then(|i| doc.headings.get(i).map(|h| (i, h))) {
        Some((i, h)) => {
            let nested = doc.within(i);
            format!(
                "Outline of `{}` in `{shown}`: lines {}–{}, {}, {} headings. {HOW}\n{}",
                h.name,
                h.line,
                h.last_line,
                sections::size(h.bytes.len()),
                nested.len(),
                sections::Outline::listing(nested)
            )
        }
        None => {
            let front = doc
                .front_matter
                .map(|n| format!(" (front matter: lines 1–{n})"))
                .unwrap_or_default();
            format!(
                "Outline of `{shown}`: {} lines, {}, {} headings{front}. {HOW}\n{}",
                doc.lines,
                sections::size(doc.bytes),
                doc.headings.len(),
                sections::Outline::listing(&doc.headings)
            )
        }
    }
}

/// The error for a section `query` that names no heading of `doc`: what went wrong and the
/// headings to choose from.
fn no_section(
    doc: &sections::Outline,
    shown: &str,
    query: &str,
    miss: sections::Miss,
) -> ToolResult {
    if doc.headings.is_empty() {
        return ToolResult::error(format!(
            "`{shown}` has no Markdown headings, so it has no section `{query}`; read it without \
             `section`"
        ));
    }
    let (what, listed): (String, Vec<sections::Heading>) = match miss {
        sections::Miss::Empty => ("the section name is empty".to_owned(), doc.headings.clone()),
        sections::Miss::NotFound => (
            format!("`{shown}` has no heading `{query}`"),
            doc.headings.clone(),
        ),
        sections::Miss::Ambiguous(at) => (
            format!("`{query}` starts {} headings of `{shown}`", at.len()),
            at.iter()
                .filter_map(|&i| doc.headings.get(i).cloned())
                .collect(),
        ),
    };
    let total = listed.len();
    let shown_list = &listed[..total.min(MISS_LIST_MAX)];
    let mut out = format!(
        "{what}. Pass one of these headings as `section`, as written here ({} of {total}; \
         level, line, size):\n{}",
        shown_list.len(),
        sections::Outline::listing(shown_list)
    );
    if total > MISS_LIST_MAX {
        out.push_str(&format!(
            "[… {} more headings: read_file with `outline: true` lists them all …]",
            total - MISS_LIST_MAX
        ));
    }
    ToolResult::error(out)
}

/// What [`select_lines`] pages through, for its messages.
enum Paged<'a> {
    File,
    Section(&'a str),
    Outline,
}

impl Paged<'_> {
    fn what(&self) -> String {
        match self {
            Paged::File => "the file".to_owned(),
            Paged::Section(name) => format!("the section `{name}`"),
            Paged::Outline => "the outline".to_owned(),
        }
    }

    fn how(&self) -> &'static str {
        match self {
            Paged::File => "",
            Paged::Section(_) => "the same section and ",
            Paged::Outline => "`outline: true` and ",
        }
    }
}

/// Lines `offset..` of `text` (1-based), at most `max_lines` and [`READ_LIMIT_BYTES`], with a
/// marker when anything was left out after them.
fn select_lines(
    text: &str,
    offset: usize,
    max_lines: Option<usize>,
    paged: &Paged<'_>,
) -> Result<String, ToolResult> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    if offset > total {
        return Err(ToolResult::error(format!(
            "offset_line {offset} is past the end: {} has {total} lines",
            paged.what()
        )));
    }
    let wanted = max_lines.unwrap_or(usize::MAX);
    let mut out = String::new();
    let mut last = offset - 1; // last line number included
    for line in lines.iter().skip(offset - 1).take(wanted) {
        if out.len() + line.len() > READ_LIMIT_BYTES {
            if out.is_empty() {
                // One line longer than the limit: show its start.
                let cut = floor_boundary(line, READ_LIMIT_BYTES);
                out.push_str(&line[..cut]);
                out.push_str(&format!(
                    "\n[… truncated: line {offset} is {} bytes long; only its first {cut} bytes \
                     are shown …]",
                    line.len()
                ));
                return Ok(out);
            }
            break;
        }
        out.push_str(line);
        last += 1;
    }
    if last < total {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        let of = match paged {
            Paged::File => String::new(),
            other => format!(" of {}", other.what()),
        };
        out.push_str(&format!(
            "[… truncated: showing lines {offset}–{last} of {total}{of}; continue with {}offset_line={} \
             …]",
            paged.how(),
            last + 1
        ));
    }
    Ok(out)
}

impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".to_owned(),
            description: "Create a file or replace its whole content. Missing parent directories \
                          are created. Prefer edit_file for small changes to existing files."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": path_schema(PATH_DESCRIPTION),
                    "content": {"type": "string", "description": "The complete new content."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn writes(&self) -> bool {
        true
    }

    fn path_args(&self) -> &'static [&'static str] {
        &["path"]
    }

    fn writes_only_its_paths(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match write_file(args, ctx).await {
                Ok(r) | Err(r) => r,
            }
        })
    }
}

/// Replaces `abs` with `bytes` through a temporary file beside it and a rename, keeping the
/// file's permissions: a run killed at any instant leaves the old content or the new, never an
/// empty or half-written file (a truncated story file would lose its `Status:` line, and the
/// resumed agent's rewrite would then be refused as a status change). A temporary file a kill
/// leaves behind is named `.<name>.baton-tmp-…`, which commits exclude and recovery removes.
async fn write_whole(abs: &Path, bytes: &[u8], shown: &str) -> Result<(), ToolResult> {
    let path = abs.to_path_buf();
    let bytes = bytes.to_vec();
    let written =
        tokio::task::spawn_blocking(move || baton_store::atomic::replace_unsynced(&path, &bytes))
            .await;
    match written {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(ToolResult::error(format!(
            "cannot write `{shown}`: {}",
            e.source
        ))),
        Err(e) => Err(ToolResult::error(format!("cannot write `{shown}`: {e}"))),
    }
}

/// The error for a compaction marker sent back as text to write.
fn compacted_marker(argument: &str) -> ToolResult {
    ToolResult::error(format!(
        "{argument} is a marker of text compacted out of the conversation, not text to write; \
         read the file if you need what it held, then send the full text"
    ))
}

async fn write_file(args: &Value, ctx: &ToolContext) -> Result<ToolResult, ToolResult> {
    let path = str_arg(args, "path")?;
    let content = str_arg(args, "content")?;
    if crate::compaction::written::is_marker(content) {
        return Err(compacted_marker("content"));
    }
    let abs = ctx.sandbox.resolve(path, Access::Write).map_err(refused)?;
    let shown = ctx.sandbox.relative(&abs);
    if let Some(parent) = abs.parent() {
        tokio::fs::create_dir_all(parent).await.map_err(|e| {
            ToolResult::error(format!("cannot create the directory of `{shown}`: {e}"))
        })?;
    }
    let existed = tokio::fs::symlink_metadata(&abs).await.is_ok();
    if ctx.sandbox.is_story_file(&abs) {
        let before = if existed {
            Some(read_text(&abs, &shown).await?)
        } else {
            None
        };
        ctx.sandbox
            .check_content(&abs, before.as_deref(), content)
            .map_err(refused)?;
    }
    write_whole(&abs, content.as_bytes(), &shown).await?;
    Ok(ToolResult::ok(format!(
        "wrote {} bytes to `{shown}` ({})",
        content.len(),
        if existed { "replaced" } else { "new file" }
    )))
}

impl Tool for EditFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".to_owned(),
            description: "Replace one exact occurrence of old_string with new_string in a file. \
                          old_string must appear exactly once (include surrounding lines to make \
                          it unique); whitespace and indentation must match exactly."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": path_schema(PATH_DESCRIPTION),
                    "old_string": {
                        "type": "string",
                        "description": "Exact text to replace; must occur exactly once."
                    },
                    "new_string": {"type": "string", "description": "Replacement text."}
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
        }
    }

    fn writes(&self) -> bool {
        true
    }

    fn path_args(&self) -> &'static [&'static str] {
        &["path"]
    }

    fn writes_only_its_paths(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match edit_file(args, ctx).await {
                Ok(r) | Err(r) => r,
            }
        })
    }
}

async fn edit_file(args: &Value, ctx: &ToolContext) -> Result<ToolResult, ToolResult> {
    let path = str_arg(args, "path")?;
    let old = str_arg(args, "old_string")?;
    let new = str_arg(args, "new_string")?;
    if old.is_empty() {
        return Err(ToolResult::error(
            "old_string is empty; use write_file to create a file",
        ));
    }
    if old == new {
        return Err(ToolResult::error(
            "old_string and new_string are identical; nothing to change",
        ));
    }
    if crate::compaction::written::is_marker(new) {
        return Err(compacted_marker("new_string"));
    }
    let abs = ctx.sandbox.resolve(path, Access::Write).map_err(refused)?;
    let shown = ctx.sandbox.relative(&abs);
    let text = read_exact_text(&abs, &shown).await?;
    let count = text.matches(old).count();
    match count {
        0 => {
            return Err(ToolResult::error(format!(
                "old_string not found in `{shown}` (0 matches); read the file and copy the text \
                 exactly"
            )));
        }
        1 => {}
        n => {
            return Err(ToolResult::error(format!(
                "old_string is not unique in `{shown}`: {n} matches; include more surrounding \
                 text so it matches exactly once"
            )));
        }
    }
    let edited = text.replacen(old, new, 1);
    ctx.sandbox
        .check_content(&abs, Some(&text), &edited)
        .map_err(refused)?;
    write_whole(&abs, edited.as_bytes(), &shown).await?;
    Ok(ToolResult::ok(format!(
        "edited `{shown}`: replaced 1 occurrence ({} → {} lines)",
        old.lines().count().max(1),
        new.lines().count()
    )))
}

/// A glob on root-relative paths. A pattern without `/` also matches file names anywhere
/// (`*.rs` finds every Rust file), as in `.gitignore`.
struct PathFilter {
    matcher: GlobMatcher,
    by_name: bool,
}

impl PathFilter {
    fn new(pattern: &str) -> Result<PathFilter, ToolResult> {
        let pattern = pattern.trim_start_matches("./").trim_start_matches('/');
        let pattern = if pattern.is_empty() { "**/*" } else { pattern };
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolResult::error(format!("invalid glob `{pattern}`: {e}")))?
            .compile_matcher();
        Ok(PathFilter {
            matcher,
            by_name: !pattern.contains('/'),
        })
    }

    fn is_match(&self, rel: &str) -> bool {
        self.matcher.is_match(rel)
            || (self.by_name && self.matcher.is_match(rel.rsplit('/').next().unwrap_or(rel)))
    }
}

/// Visits the files of the project in name order (`visit(relative, absolute)` returns whether to
/// go on). Returns whether the walk stopped at [`WALK_MAX_ENTRIES`].
fn walk(sandbox: &Sandbox, mut visit: impl FnMut(&str, &Path) -> bool) -> bool {
    let mut stack: Vec<(String, PathBuf)> = vec![(String::new(), sandbox.root().to_path_buf())];
    let mut seen = 0usize;
    while let Some((rel_dir, dir)) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        let mut subdirs = Vec::new();
        for entry in entries {
            seen += 1;
            if seen > WALK_MAX_ENTRIES {
                return true;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if rel_dir.is_empty() {
                name.clone()
            } else {
                format!("{rel_dir}/{name}")
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_str()) && !Sandbox::is_git_dir(&name) {
                    subdirs.push((rel, entry.path()));
                }
            } else if kind.is_symlink() {
                // Listed only when it leads to a readable file inside; never descended into.
                if let Ok(target) = sandbox.resolve(&rel, Access::Read)
                    && target.is_file()
                    && !visit(&rel, &target)
                {
                    return false;
                }
            } else if kind.is_file()
                && sandbox.denied_by(&rel).is_none()
                && !visit(&rel, &entry.path())
            {
                return false;
            }
        }
        // Depth first, in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    false
}

impl Tool for ListFiles {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_files".to_owned(),
            description: format!(
                "List project files matching a glob, sorted (`src/**/*.rs`; a pattern without `/` \
                 such as `*.toml` matches file names at any depth). Skips {} and secret files.",
                SKIPPED_DIRS.map(|d| format!("{d}/")).join(", ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "Glob on paths relative to the project root (default `**/*`)."
                    },
                    "max": {
                        "type": "integer", "minimum": 1, "maximum": LIST_MAX,
                        "description": format!("Most paths to return (default {LIST_DEFAULT}).")
                    }
                },
                "required": [],
                "additionalProperties": false
            }),
        }
    }

    fn writes(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match list_files(args, ctx).await {
                Ok(r) | Err(r) => r,
            }
        })
    }
}

async fn list_files(args: &Value, ctx: &ToolContext) -> Result<ToolResult, ToolResult> {
    let pattern = opt_str(args, "pattern")?.unwrap_or("**/*").to_owned();
    let max = opt_usize(args, "max")?
        .unwrap_or(LIST_DEFAULT)
        .clamp(1, LIST_MAX);
    let filter = PathFilter::new(&pattern)?;
    let sandbox = ctx.sandbox.clone();
    let (mut found, stopped) = tokio::task::spawn_blocking(move || {
        let mut found = Vec::new();
        let stopped = walk(&sandbox, |rel, _| {
            if filter.is_match(rel) {
                found.push(rel.to_owned());
            }
            true
        });
        (found, stopped)
    })
    .await
    .map_err(|e| ToolResult::error(format!("list_files failed: {e}")))?;
    if found.is_empty() {
        return Ok(ToolResult::ok(format!("no files match `{pattern}`")));
    }
    found.sort();
    let total = found.len();
    found.truncate(max);
    let mut out = found.join("\n");
    if total > max {
        out.push_str(&format!(
            "\n[… {} more files not shown ({total} in all); narrow the pattern …]",
            total - max
        ));
    }
    if stopped {
        out.push_str(&format!(
            "\n[… listing stopped after {WALK_MAX_ENTRIES} entries; narrow the pattern …]"
        ));
    }
    Ok(ToolResult::ok(out))
}

impl Tool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".to_owned(),
            description: format!(
                "Search project files for a regular expression (Rust regex syntax); prints \
                 `path:line: text`. Skips {}, binary and secret files.",
                SKIPPED_DIRS.map(|d| format!("{d}/")).join(", ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression."},
                    "path_glob": {
                        "type": "string",
                        "description": "Only search files matching this glob (e.g. `src/**/*.rs` or `*.py`)."
                    },
                    "max_matches": {
                        "type": "integer", "minimum": 1, "maximum": GREP_MAX,
                        "description": format!("Most matching lines to return (default {GREP_DEFAULT}).")
                    }
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn writes(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match grep(args, ctx).await {
                Ok(r) | Err(r) => r,
            }
        })
    }
}

async fn grep(args: &Value, ctx: &ToolContext) -> Result<ToolResult, ToolResult> {
    let pattern = str_arg(args, "pattern")?.to_owned();
    let glob = opt_str(args, "path_glob")?.map(str::to_owned);
    let max = opt_usize(args, "max_matches")?
        .unwrap_or(GREP_DEFAULT)
        .clamp(1, GREP_MAX);
    let regex = regex::RegexBuilder::new(&pattern)
        .size_limit(10 * 1024 * 1024)
        .build()
        .map_err(|e| ToolResult::error(format!("invalid regex `{pattern}`: {e}")))?;
    let filter = glob.as_deref().map(PathFilter::new).transpose()?;
    let sandbox = ctx.sandbox.clone();
    let (lines, more) = tokio::task::spawn_blocking(move || {
        let mut lines: Vec<String> = Vec::new();
        let mut more = false;
        walk(&sandbox, |rel, abs| {
            if filter.as_ref().is_some_and(|f| !f.is_match(rel)) {
                return true;
            }
            if std::fs::metadata(abs).map_or(true, |m| m.len() > MAX_FILE_BYTES) {
                return true;
            }
            let Ok(bytes) = baton_store::bounded::read(abs, MAX_FILE_BYTES) else {
                return true;
            };
            if looks_binary(&bytes) {
                return true;
            }
            let text = String::from_utf8_lossy(&bytes);
            for (i, line) in text.lines().enumerate() {
                if regex.is_match(line) {
                    if lines.len() == max {
                        more = true;
                        return false;
                    }
                    let line = line.trim_end_matches('\r');
                    let shown = match line.char_indices().nth(GREP_LINE_CHARS) {
                        Some((cut, _)) => format!("{}…", &line[..cut]),
                        None => line.to_owned(),
                    };
                    lines.push(format!("{rel}:{}: {shown}", i + 1));
                }
            }
            true
        });
        (lines, more)
    })
    .await
    .map_err(|e| ToolResult::error(format!("grep failed: {e}")))?;
    if lines.is_empty() {
        let scope = glob
            .map(|g| format!(" in files matching `{g}`"))
            .unwrap_or_default();
        return Ok(ToolResult::ok(format!("no matches for `{pattern}`{scope}")));
    }
    let mut out = lines.join("\n");
    if more {
        out.push_str(&format!(
            "\n[… stopped after {max} matches; narrow the pattern or path_glob …]"
        ));
    }
    Ok(ToolResult::ok(out))
}
