//! Test helpers for baton: a local HTTP server that speaks the model APIs' streaming wire
//! formats.
//!
//! [`MockServer`] listens on `127.0.0.1:0`, answers each request with the next queued
//! [`MockResponse`] — a plain status and body, or a `text/event-stream` body written in timed
//! parts that can break off or trickle on forever — and records every request for assertions.
//! [`openai_stream`] and [`anthropic_stream`] build byte-faithful streams of the OpenAI chat
//! completions and Anthropic Messages formats, so client tests exercise the real parsing paths.
//! The server is plain tokio (no HTTP framework) to keep the dev-dependency tree small.
//!
//! Like the real APIs, the server refuses a malformed request with a 400 in the API's own error
//! shape, before any queued response: [`wire_rules`] holds Anthropic's and OpenAI's documented
//! request rules (a tool call answered by its result in the next message, roles, unique ids,
//! cache breakpoints) and [`sdk_oracle`] checks the body against the official SDKs' request types
//! when `BATON_TEST_WIRE_SDK_DIR` names them. [`MockServer::refused`] lists what was refused.
//!
//! [`github`] is a stateful fake GitHub (served by axum, as the board is) for the GitHub client
//! and the PM pipeline, and [`openapi`] holds it and the client to GitHub's own REST description.

pub mod anthropic_stream;
pub mod captures;
pub mod github;
pub mod openai_stream;
pub mod openapi;
pub mod scripted;
pub mod sdk_oracle;
mod server;
pub mod wire_rules;

pub use server::{MockResponse, MockServer, RecordedRequest, Responder};

/// Splits `text` into pieces of at most `chars` characters (at least one piece, never splitting
/// a character), the way a model streams fragments.
pub fn split_chars(text: &str, chars: usize) -> Vec<String> {
    let chars = chars.max(1);
    let all: Vec<char> = text.chars().collect();
    if all.is_empty() {
        return vec![String::new()];
    }
    all.chunks(chars).map(|c| c.iter().collect()).collect()
}
