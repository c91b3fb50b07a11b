//! What a call to GitHub can fail with, typed so the pipeline can tell a missing object, a
//! refusal, a rate limit and a broken server apart. Every message names the call (`create
//! comment`) and, where there was one, the HTTP status; none carries the token (requests hold
//! it only in a header, and no header is ever put in an error).

use jiff::Timestamp;

/// A failed GitHub call.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    /// 404: the object does not exist (or the token may not see it).
    #[error("GitHub {call}: not found (404)")]
    NotFound {
        /// The call, e.g. `get issue`.
        call: &'static str,
    },
    /// 401: the token was refused.
    #[error("GitHub {call}: the token was refused (401): {message}")]
    Unauthorized {
        /// The call.
        call: &'static str,
        /// GitHub's message.
        message: String,
    },
    /// 403 that is not a rate limit: the token lacks a permission.
    #[error("GitHub {call}: forbidden (403): {message}")]
    Forbidden {
        /// The call.
        call: &'static str,
        /// GitHub's message.
        message: String,
    },
    /// A primary or secondary rate limit that lasts longer than the client may wait, or that
    /// hit a request the client never repeats (POST, PATCH, DELETE).
    #[error("GitHub {call}: rate limited (HTTP {status}) until {until}")]
    RateLimited {
        /// The call.
        call: &'static str,
        /// The status that said so (403 or 429; 0 when the client stopped before sending).
        status: u16,
        /// When GitHub accepts requests again.
        until: Timestamp,
    },
    /// A 5xx answer (after the retries a GET gets).
    #[error("GitHub {call}: server error (HTTP {status})")]
    Server {
        /// The call.
        call: &'static str,
        /// The status.
        status: u16,
    },
    /// Another 4xx (409, 422…), or a GraphQL answer with errors: GitHub refused the request.
    #[error("GitHub {call}: refused (HTTP {status}): {message}")]
    Rejected {
        /// The call.
        call: &'static str,
        /// The status (200 for a GraphQL error).
        status: u16,
        /// GitHub's message, with its validation errors.
        message: String,
    },
    /// The answer could not be read (not the JSON the call expects, a broken `link` header).
    #[error("GitHub {call}: unreadable answer (HTTP {status}): {detail}")]
    Invalid {
        /// The call.
        call: &'static str,
        /// The status.
        status: u16,
        /// What was wrong.
        detail: String,
    },
    /// The request never got an answer (connection refused, reset, timed out).
    #[error("GitHub {call}: no answer: {source}")]
    Transport {
        /// The call.
        call: &'static str,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// The client could not be set up (a bad base URL).
    #[error("GitHub client: {0}")]
    Config(String),
}

impl ForgeError {
    /// The call that failed (`""` for a configuration error).
    pub fn call(&self) -> &'static str {
        match self {
            ForgeError::NotFound { call }
            | ForgeError::Unauthorized { call, .. }
            | ForgeError::Forbidden { call, .. }
            | ForgeError::RateLimited { call, .. }
            | ForgeError::Server { call, .. }
            | ForgeError::Rejected { call, .. }
            | ForgeError::Invalid { call, .. }
            | ForgeError::Transport { call, .. } => call,
            ForgeError::Config(_) => "",
        }
    }
}
