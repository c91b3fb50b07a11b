//! Splitting a document's text into frontmatter and body: finding the `---` fences (after an
//! optional BOM) by hand, without a YAML parser, so the body is never touched.

use std::ops::Range;

/// Where the frontmatter sits in a document's text (byte offsets into
/// [`Document::text`](super::Document::text)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontSpan {
    /// The YAML between the fences, each line with its line ending (may be empty).
    pub yaml: Range<usize>,
    /// Where the body starts: just after the closing fence line.
    pub body_start: usize,
    /// Whether the opening fence ends in `\r\n`; new frontmatter lines use the same ending.
    pub crlf: bool,
}

pub(super) enum Split {
    Plain,
    Front(FrontSpan),
    Unclosed,
}

pub(super) fn bom_len(text: &str) -> usize {
    if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    }
}

pub(super) fn split(text: &str) -> Split {
    let start = bom_len(text);
    let rest = &text[start..];
    let (open_len, crlf) = if rest.starts_with("---\n") {
        (4, false)
    } else if rest.starts_with("---\r\n") {
        (5, true)
    } else {
        return Split::Plain;
    };
    let yaml_start = start + open_len;
    let mut pos = yaml_start;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let line = &text[pos..line_end];
        let content = line.strip_suffix('\n').unwrap_or(line);
        let content = content.strip_suffix('\r').unwrap_or(content);
        if content == "---" || content == "..." {
            return Split::Front(FrontSpan {
                yaml: yaml_start..pos,
                body_start: line_end,
                crlf,
            });
        }
        pos = line_end;
    }
    Split::Unclosed
}

/// Byte offset where the markdown body of `text` starts: after a closed frontmatter block, else 0.
///
/// Lenient: an unclosed frontmatter is treated as body, so callers that only look at the body
/// (like the story `Status:` line) keep working on odd files.
pub fn body_offset(text: &str) -> usize {
    match split(text) {
        Split::Front(span) => span.body_start,
        Split::Plain | Split::Unclosed => bom_len(text),
    }
}
