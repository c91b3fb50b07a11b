//! Who may read the board and who may answer: the access token, the CSRF token, and the checks
//! of the `Host` and `Origin` headers, kept in one place so every route goes through the same
//! gate.
//!
//! - **Loopback by default.** Bound to a loopback address, the board is readable without the
//!   token, but only under a loopback host name (`127.0.0.1`, `[::1]`, `localhost` with the bound
//!   port), which keeps a web page on another site from reading it through DNS rebinding.
//! - **Anywhere else, a token.** Bound to any other address, every request needs the access token
//!   (a `?token=` link that sets an `HttpOnly`, `SameSite=Strict` cookie, the cookie itself, or an
//!   `Authorization: Bearer` header). It is compared in constant time.
//! - **Answering** always needs the access token, the server's CSRF token (a hidden form field
//!   or the `X-Baton-Csrf` header, put in every page it serves) and, when the browser sends one,
//!   an `Origin` that is the board's own. `--read-only` refuses every answer.

use axum::http::{HeaderMap, header};
use std::io::Read as _;
use std::net::SocketAddr;

/// The prefix of the cookie holding the access token once a `?token=` link was followed; the
/// board's port follows it, since cookies are shared by every port of a host and two boards must
/// not log each other out.
pub const COOKIE_PREFIX: &str = "baton_token_";
/// The header a script may send the CSRF token in.
pub const CSRF_HEADER: &str = "x-baton-csrf";

/// Why a request was refused, with the HTTP status it maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 401: no token, or a wrong one.
    Token,
    /// 403: the CSRF token is missing or wrong.
    Csrf,
    /// 403: the request came from another origin.
    Origin(String),
    /// 421: the `Host` header names no address of this board.
    Host(String),
    /// 403: the board is read-only.
    ReadOnly,
}

impl Refusal {
    /// The HTTP status.
    pub fn status(&self) -> axum::http::StatusCode {
        use axum::http::StatusCode;
        match self {
            Refusal::Token => StatusCode::UNAUTHORIZED,
            Refusal::Csrf | Refusal::Origin(_) | Refusal::ReadOnly => StatusCode::FORBIDDEN,
            Refusal::Host(_) => StatusCode::MISDIRECTED_REQUEST,
        }
    }

    /// One sentence for the person or script that sent it.
    pub fn message(&self) -> String {
        match self {
            Refusal::Token => "this board needs its access token: open the link `baton serve` \
                               printed (`?token=…`), or send `Authorization: Bearer TOKEN`"
                .to_owned(),
            Refusal::Csrf => "the form's CSRF token is missing or stale; reload the page and \
                              answer again"
                .to_owned(),
            Refusal::Origin(o) => {
                format!("a request from `{o}` may not change anything on this board")
            }
            Refusal::Host(h) => format!(
                "`{h}` is not this board's address; open it at the address `baton serve` printed"
            ),
            Refusal::ReadOnly => "this board is read-only (`baton serve --read-only`); answer \
                                  with `baton answer ID CHOICE`"
                .to_owned(),
        }
    }
}

/// The board's access rules.
#[derive(Clone)]
pub struct Gate {
    token: String,
    csrf: String,
    loopback: bool,
    port: u16,
    read_only: bool,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The tokens are never written anywhere after the one print.
        f.debug_struct("Gate")
            .field("loopback", &self.loopback)
            .field("port", &self.port)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl Gate {
    /// The rules for a board bound to `addr` with access token `token`.
    pub fn new(addr: SocketAddr, token: String, read_only: bool) -> std::io::Result<Gate> {
        Ok(Gate {
            token,
            csrf: random_token()?,
            loopback: addr.ip().is_loopback(),
            port: addr.port(),
            read_only,
        })
    }

    /// The CSRF token pages carry.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// Whether answers are refused.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Whether `candidate` is the access token.
    pub fn is_token(&self, candidate: &str) -> bool {
        constant_time_eq(candidate.as_bytes(), self.token.as_bytes())
    }

    /// The name of this board's token cookie.
    pub fn cookie_name(&self) -> String {
        format!("{COOKIE_PREFIX}{}", self.port)
    }

    /// The access token a request carries: its bearer header, else its cookie.
    fn presented<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        if let Some(v) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
        {
            return Some(v.trim());
        }
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .find(|(name, _)| *name == self.cookie_name())
            .map(|(_, value)| value)
    }

    fn has_token(&self, headers: &HeaderMap) -> bool {
        self.presented(headers).is_some_and(|t| self.is_token(t))
    }

    /// Whether a loopback board is addressed by a loopback name (DNS rebinding guard).
    fn check_host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if !self.loopback {
            return Ok(());
        }
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let port = self.port.to_string();
        let ok = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .any(|name| host == *name || host.strip_prefix(name) == Some(&format!(":{port}")));
        if ok {
            Ok(())
        } else {
            Err(Refusal::Host(host.to_owned()))
        }
    }

    /// Whether a request may read the board.
    pub fn check_read(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        self.check_host(headers)?;
        if self.loopback || self.has_token(headers) {
            Ok(())
        } else {
            Err(Refusal::Token)
        }
    }

    /// Whether a request may answer an escalation, given the CSRF token it sent (form field or
    /// header).
    pub fn check_write(&self, headers: &HeaderMap, form_csrf: Option<&str>) -> Result<(), Refusal> {
        self.check_host(headers)?;
        if self.read_only {
            return Err(Refusal::ReadOnly);
        }
        if !self.has_token(headers) {
            return Err(Refusal::Token);
        }
        check_origin(headers)?;
        let sent = headers
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .or(form_csrf);
        match sent {
            Some(s) if constant_time_eq(s.as_bytes(), self.csrf.as_bytes()) => Ok(()),
            _ => Err(Refusal::Csrf),
        }
    }
}

/// A state-changing request must come from the board's own pages: an `Origin` header, when
/// present, names the host the request was sent to; a browser's `Sec-Fetch-Site` says
/// `same-origin` (or `none`: typed by the user).
fn check_origin(headers: &HeaderMap) -> Result<(), Refusal> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &header::HeaderValue| v.to_str().ok())
    };
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site"))
        && site != "same-origin"
        && site != "none"
    {
        return Err(Refusal::Origin(
            text(header::ORIGIN).unwrap_or(site).to_owned(),
        ));
    }
    let Some(origin) = text(header::ORIGIN) else {
        return Ok(());
    };
    let host = text(header::HOST).unwrap_or_default();
    let same = ["http://", "https://"]
        .iter()
        .any(|scheme| origin.strip_prefix(scheme) == Some(host));
    if same && !host.is_empty() {
        Ok(())
    } else {
        Err(Refusal::Origin(origin.to_owned()))
    }
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// 32 random bytes from the kernel, as 64 hex digits.
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn gate(addr: &str, read_only: bool) -> Gate {
        Gate::new(addr.parse().unwrap(), "s3cret".into(), read_only).unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn tokens_compare_by_content_only() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        let a = random_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, random_token().unwrap());
    }

    #[test]
    fn loopback_reads_freely_under_loopback_names_only() {
        let g = gate("127.0.0.1:8737", false);
        assert_eq!(
            g.check_read(&headers(&[("host", "127.0.0.1:8737")])),
            Ok(())
        );
        assert_eq!(
            g.check_read(&headers(&[("host", "localhost:8737")])),
            Ok(())
        );
        assert!(matches!(
            g.check_read(&headers(&[("host", "evil.example:8737")])),
            Err(Refusal::Host(_))
        ));
        assert!(matches!(
            g.check_read(&headers(&[("host", "127.0.0.1:9999")])),
            Err(Refusal::Host(_))
        ));
    }

    #[test]
    fn elsewhere_every_read_needs_the_token() {
        let g = gate("0.0.0.0:8737", false);
        let host = ("host", "board.lan:8737");
        assert_eq!(g.check_read(&headers(&[host])), Err(Refusal::Token));
        assert_eq!(
            g.check_read(&headers(&[host, ("authorization", "Bearer wrong")])),
            Err(Refusal::Token)
        );
        assert_eq!(
            g.check_read(&headers(&[host, ("authorization", "Bearer s3cret")])),
            Ok(())
        );
        assert_eq!(
            g.check_read(&headers(&[
                host,
                ("cookie", "a=b; baton_token_8737=s3cret")
            ])),
            Ok(())
        );
        // Another board's cookie on the same host (cookies ignore ports) is not this one's.
        assert_eq!(
            g.check_read(&headers(&[host, ("cookie", "baton_token_9999=s3cret")])),
            Err(Refusal::Token)
        );
    }

    #[test]
    fn answers_need_token_csrf_and_the_same_origin() {
        let g = gate("127.0.0.1:8737", false);
        let csrf = g.csrf().to_owned();
        let host = ("host", "127.0.0.1:8737");
        let cookie = ("cookie", "baton_token_8737=s3cret");
        assert_eq!(
            g.check_write(&headers(&[host]), Some(&csrf)),
            Err(Refusal::Token)
        );
        assert_eq!(
            g.check_write(&headers(&[host, cookie]), None),
            Err(Refusal::Csrf)
        );
        assert_eq!(
            g.check_write(&headers(&[host, cookie]), Some("forged")),
            Err(Refusal::Csrf)
        );
        assert!(matches!(
            g.check_write(
                &headers(&[host, cookie, ("origin", "http://evil.example")]),
                Some(&csrf)
            ),
            Err(Refusal::Origin(_))
        ));
        assert!(matches!(
            g.check_write(
                &headers(&[host, cookie, ("sec-fetch-site", "cross-site")]),
                Some(&csrf)
            ),
            Err(Refusal::Origin(_))
        ));
        assert_eq!(
            g.check_write(
                &headers(&[host, cookie, ("origin", "http://127.0.0.1:8737")]),
                Some(&csrf)
            ),
            Ok(())
        );
        let ro = gate("127.0.0.1:8737", true);
        assert_eq!(
            ro.check_write(&headers(&[host, cookie]), Some(ro.csrf())),
            Err(Refusal::ReadOnly)
        );
    }

    #[test]
    fn debug_output_never_shows_a_token() {
        let g = gate("127.0.0.1:1", false);
        let shown = format!("{g:?}");
        assert!(!shown.contains("s3cret") && !shown.contains(g.csrf()));
    }
}
