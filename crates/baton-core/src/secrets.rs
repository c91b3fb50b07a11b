//! The configured secrets' values, so that every record baton writes can leave them out.
//!
//! The binary registers the value of every API key variable the configuration names (a
//! provider's `api_key_env`, a coding-agent CLI's) once, when it has read `baton.toml`; the
//! writers of transcripts, CLI stream files, journal records and printed events pass their text
//! through [`redact`], whatever path a key took to get there (an outcome's summary, a guard's
//! reason, a CLI's error text, an interpreter that printed its environment). Values shorter than
//! [`MIN_LEN`] characters are not registered: replacing them would mangle ordinary text.

use std::borrow::Cow;
use std::sync::RwLock;

/// What a secret's value is replaced with.
pub const MASK: &str = "***";

/// The shortest value registered.
pub const MIN_LEN: usize = 8;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Registers secret values (empty and short ones are ignored, repeats kept once).
pub fn register<I, S>(values: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let Ok(mut all) = SECRETS.write() else {
        return;
    };
    for v in values {
        let v: String = v.into();
        if v.chars().count() >= MIN_LEN && !all.contains(&v) {
            all.push(v);
        }
    }
    // Longest first, so a secret that contains another is masked whole.
    all.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// `text` with every registered value replaced by [`MASK`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let Ok(all) = SECRETS.read() else {
        return Cow::Borrowed(text);
    };
    let mut out = Cow::Borrowed(text);
    for s in all.iter() {
        if out.contains(s.as_str()) {
            out = Cow::Owned(out.replace(s.as_str(), MASK));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_values_are_masked_and_short_ones_ignored() {
        register(["sk-test-0123456789abcdef", "short", ""]);
        assert_eq!(
            redact("key=sk-test-0123456789abcdef and short").as_ref(),
            "key=*** and short"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }
}
