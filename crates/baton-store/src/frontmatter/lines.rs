//! Reading a frontmatter block line by line, the way the edits need it: lines with their
//! endings, the colon that ends a top-level key, and where a trailing comment starts.

use std::ops::Range;

/// Lines of `s` with their endings, each as a byte range into `s`.
pub(super) fn line_ranges(s: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < s.len() {
        let end = s[pos..].find('\n').map_or(s.len(), |i| pos + i + 1);
        out.push(pos..end);
        pos = end;
    }
    out
}

pub(super) fn strip_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// The byte index of the `:` that ends the key at the start of a top-level `key: value` line.
pub(super) fn key_colon(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let after_key = match bytes.first()? {
        b'"' => {
            let mut i = 1;
            loop {
                match bytes.get(i)? {
                    b'\\' => i += 2,
                    b'"' => break i + 1,
                    _ => i += 1,
                }
            }
        }
        b'\'' => {
            let mut i = 1;
            loop {
                match bytes.get(i)? {
                    b'\'' if bytes.get(i + 1) == Some(&b'\'') => i += 2,
                    b'\'' => break i + 1,
                    _ => i += 1,
                }
            }
        }
        b' ' | b'\t' | b'#' | b'-' | b'?' | b'[' | b'{' | b'&' | b'!' | b'*' => return None,
        _ => {
            let mut i = 0;
            loop {
                match bytes.get(i)? {
                    b':' if matches!(
                        bytes.get(i + 1),
                        None | Some(b' ' | b'\t' | b'\r' | b'\n')
                    ) =>
                    {
                        return Some(i);
                    }
                    b'#' if i > 0 && matches!(bytes[i - 1], b' ' | b'\t') => return None,
                    _ => i += 1,
                }
            }
        }
    };
    let mut i = after_key;
    while matches!(bytes.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    (bytes.get(i) == Some(&b':')).then_some(i)
}

/// Splits the value part of a single `key: value  # comment` line into value and comment,
/// returning the byte index where the comment's leading whitespace starts.
pub(super) fn comment_start(value: &str) -> Option<usize> {
    let bytes = value.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(b'"') if b == b'\\' => i += 1,
            Some(b'\'') if b == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => {
                let at_token_start =
                    i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'[' | b'{' | b',');
                if (b == b'"' || b == b'\'') && at_token_start {
                    quote = Some(b);
                } else if b == b'#' && i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
                    let mut start = i;
                    while start > 0 && matches!(bytes[start - 1], b' ' | b'\t') {
                        start -= 1;
                    }
                    return Some(start);
                }
            }
        }
        i += 1;
    }
    None
}
