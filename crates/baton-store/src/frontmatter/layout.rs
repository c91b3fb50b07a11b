//! Writing one top-level key's block (`key: value` or `key:` with indented lines, keeping a
//! trailing comment) and checking that a candidate frontmatter reads back as the edit intends.

use super::yaml::{AnyValue, entries, render};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Indent {
    /// Continuation lines of a scalar as the serializer wrote them.
    Keep,
    /// Continuation lines of a scalar indented by two more spaces.
    Extra,
}

/// Lays out `key_text: <rendered>` as a top-level block ending with `eol`.
pub(super) fn layout(
    key_text: &str,
    rendered: &str,
    shape: &AnyValue,
    eol: &str,
    comment: Option<&str>,
    indent: Indent,
) -> Option<String> {
    let rendered = rendered.strip_suffix('\n').unwrap_or(rendered);
    let lines: Vec<&str> = rendered.split('\n').collect();
    let first = lines.first().copied().unwrap_or_default();
    let comment = comment.unwrap_or_default();
    let mut out = String::new();
    if shape.is_collection() && !first.starts_with('[') && !first.starts_with('{') {
        if indent == Indent::Extra {
            return None;
        }
        out.push_str(key_text);
        out.push(':');
        out.push_str(comment);
        out.push_str(eol);
        for line in &lines {
            if !line.is_empty() {
                out.push_str("  ");
            }
            out.push_str(line);
            out.push_str(eol);
        }
    } else {
        if lines.len() > 1 && !comment.is_empty() && !first.starts_with(['|', '>']) {
            return None;
        }
        out.push_str(key_text);
        out.push_str(": ");
        out.push_str(first);
        out.push_str(comment);
        out.push_str(eol);
        for line in &lines[1..] {
            if indent == Indent::Extra && !line.is_empty() {
                out.push_str("  ");
            }
            out.push_str(line);
            out.push_str(eol);
        }
    }
    Some(out)
}

/// What a candidate edit must read back as.
pub(super) enum Expect<'a> {
    Set(&'a AnyValue),
    Removed,
}

/// Checks that `new_yaml` holds exactly `old` with `key` changed as `expect` says.
pub(super) fn verify(
    new_yaml: &str,
    old: &[(String, AnyValue)],
    key: &str,
    expect: &Expect<'_>,
) -> Result<(), String> {
    let new: Vec<(String, AnyValue)> = entries::<AnyValue>(new_yaml)
        .map_err(|e| format!("the result would not be valid YAML: {}", render(&e, 1).2))?
        .into_iter()
        .map(|(k, v)| (k.value, v))
        .collect();
    let mut want: Vec<(String, AnyValue)> = Vec::with_capacity(old.len() + 1);
    let mut seen = false;
    for (k, v) in old {
        if k == key {
            seen = true;
            if let Expect::Set(value) = expect {
                want.push((k.clone(), (*value).clone()));
            }
        } else {
            want.push((k.clone(), v.clone()));
        }
    }
    if !seen && let Expect::Set(value) = expect {
        want.push((key.to_owned(), (*value).clone()));
    }
    if new == want {
        return Ok(());
    }
    let names = |v: &[(String, AnyValue)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    if names(&new) != names(&want) {
        return Err(format!(
            "the result would have keys {:?} instead of {:?}",
            names(&new),
            names(&want)
        ));
    }
    let changed: Vec<&str> = new
        .iter()
        .zip(&want)
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a.0.as_str())
        .collect();
    Err(format!(
        "the result would read back differently for {changed:?}"
    ))
}
