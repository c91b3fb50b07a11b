//! What can go wrong reading `baton.toml`, and where in the file it went wrong.
//!
//! Every error names the file and a 1-based line, so the message points the user at what to
//! edit. A value error is raised after parsing, from the typed value, so its line is found again
//! in the text by section and key ([`line_of`]).

use std::io;
use std::path::{Path, PathBuf};

/// Errors reading `baton.toml`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Reading failed.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// A value is out of its range, or a pattern is invalid.
    #[error("{}:{line}: `{key}` {message}", path.display())]
    Value {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key (1 when it cannot be found).
        line: usize,
        /// The key, as `[section] key`.
        key: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// The TOML is invalid or has unknown keys.
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl ConfigError {
    /// A [`ConfigError::Value`] for `key` in `[section]`, its line looked up in `text`.
    pub fn value(path: &Path, text: &str, section: &str, key: &str, message: String) -> Self {
        ConfigError::Value {
            path: path.to_path_buf(),
            line: line_of(text, section, key),
            key: format!("[{section}] {key}"),
            message,
        }
    }
}

/// The 1-based line of `key` in `[section]` of `text` (1 when it cannot be found).
pub fn line_of(text: &str, section: &str, key: &str) -> usize {
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix('[') {
            current = h.trim_end_matches(']').trim().to_owned();
            continue;
        }
        let name = t
            .split('=')
            .next()
            .unwrap_or_default()
            .trim()
            .trim_matches('"');
        if current == section && name == key {
            return i + 1;
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_found_in_its_own_section_only() {
        let text = "[a]\nx = 1\n\n[b]\n\"x\" = 2\n";
        assert_eq!(line_of(text, "a", "x"), 2);
        assert_eq!(line_of(text, "b", "x"), 5);
        assert_eq!(line_of(text, "c", "x"), 1);
    }
}
