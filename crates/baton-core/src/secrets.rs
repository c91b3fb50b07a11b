//! The configured secrets' values, so that every text baton prints or writes can leave them out:
//! one mask for every front end.
//!
//! The binary registers every secret the configuration holds once, when it has read
//! `baton.toml`: the value of every API key variable it names (a provider's `api_key_env`, a
//! coding-agent CLI's, the GitHub token variables), the credentials written into a URL
//! ([`in_url`]: the user and password of `https://user:token@host`, and the values of query
//! parameters named like a key or token, `?key=…`, `?api_key=…`, `&token=…`) and header values
//! ([`register`] takes any). The writers of transcripts, CLI stream files, journal records,
//! printed events, terminal lines, `--json` output and the board's pages pass their text through
//! [`redact`], whatever path a secret took to get there (an outcome's summary, a guard's reason,
//! an HTTP error that quotes the request, an interpreter that printed its environment). Values
//! shorter than [`MIN_LEN`] characters are not registered: replacing them would mangle ordinary
//! text.

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

/// The secrets written into `url`: the user and password of its authority
/// (`https://user:token@host`) and the values of query parameters whose name says key, token,
/// secret, password, signature or auth (`?key=…`, `?api_key=…`, `&access_token=…`), each as
/// written and percent-decoded.
pub fn in_url(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |v: &str| {
        for value in [v.to_owned(), percent_decoded(v)] {
            if !value.is_empty() && !out.contains(&value) {
                out.push(value);
            }
        }
    };
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        match userinfo.split_once(':') {
            Some((user, password)) => {
                push(user);
                push(password);
            }
            None => push(userinfo),
        }
        // The HTTP client sends them as a basic `Authorization` header, which an error may
        // quote back.
        let decoded = percent_decoded(userinfo);
        let credentials = if decoded.contains(':') {
            decoded
        } else {
            format!("{decoded}:")
        };
        push(&base64(credentials.as_bytes()));
    }
    let after = &rest[authority_end..];
    if let Some((_, query)) = after.split_once('?') {
        let query = query.split_once('#').map_or(query, |(q, _)| q);
        for pair in query.split(['&', ';']) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = percent_decoded(name).to_ascii_lowercase();
            if SECRET_NAMES.iter().any(|s| name.contains(s)) {
                push(value);
            }
        }
    }
    out
}

/// What a query parameter holding a secret is named like.
const SECRET_NAMES: [&str; 8] = [
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "sig",
    "auth",
    "credential",
];

/// Standard base64, padded (the encoding of a basic `Authorization` header).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                let idx = usize::try_from((n >> shift) & 63).unwrap_or(0);
                out.push(char::from(ALPHABET[idx]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `text` with its `%XX` escapes decoded (invalid ones kept as written).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let v = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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

    #[test]
    fn the_credentials_written_into_a_url_are_found() {
        for (url, want) in [
            (
                "https://user:tok-0123456789@gateway.example/v1",
                vec!["user", "tok-0123456789", "dXNlcjp0b2stMDEyMzQ1Njc4OQ=="],
            ),
            (
                "https://tok-0123456789@gateway.example",
                vec!["tok-0123456789", "dG9rLTAxMjM0NTY3ODk6"],
            ),
            (
                "https://gateway.example/v1?key=k-0123456789&model=x",
                vec!["k-0123456789"],
            ),
            (
                "http://h/v1?API_KEY=a%2Fb0123456789#frag",
                vec!["a%2Fb0123456789", "a/b0123456789"],
            ),
            (
                "http://h/?access_token=t-0123456789;sig=s-0123456789",
                vec!["t-0123456789", "s-0123456789"],
            ),
            ("http://localhost:11434/v1", vec![]),
            ("http://h/v1?model=gpt&stream=true", vec![]),
            ("http://h/path@not-userinfo?x=1", vec![]),
        ] {
            assert_eq!(in_url(url), want, "{url}");
        }
    }

    #[test]
    fn a_token_in_a_url_is_masked_wherever_it_appears_once_registered() {
        register(in_url(
            "https://u:gw-token-5566778899@h/v1?api_key=q-key-5566778899",
        ));
        let text = "GET /v1?api_key=q-key-5566778899: 401 for gw-token-5566778899";
        assert_eq!(redact(text).as_ref(), "GET /v1?api_key=***: 401 for ***");
    }
}
