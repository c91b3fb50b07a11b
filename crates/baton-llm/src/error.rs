//! Errors of model calls.

use crate::types::ChatResponse;

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The provider answered with an error status (after retries, if retryable).
    #[error("{provider} answered HTTP {status}: {body}")]
    Http {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
        /// Response body (truncated), secrets never included.
        body: String,
    },
    /// No connection could be made, or it dropped (after retries).
    #[error("{provider}: connection failed: {detail}")]
    Connection {
        /// Provider name.
        provider: String,
        /// What happened.
        detail: String,
    },
    /// The provider answered `200 OK` with an empty body: no event, no error. llama-cpp-python's
    /// server does this when it cannot stream the tool choice it was asked for.
    #[error(
        "{provider} answered 200 OK with an empty body (no answer, no error); a server that \
         cannot stream tool calls does this (llama-cpp-python without `tool_choice`): see \
         \"Local models\" in docs/providers.md"
    )]
    EmptyAnswer {
        /// Provider name.
        provider: String,
    },
    /// The call took longer than its timeout.
    #[error("{provider}: no complete answer within {seconds} s")]
    Timeout {
        /// Provider name.
        provider: String,
        /// The timeout.
        seconds: u64,
    },
    /// The provider sent something that is not its documented wire format.
    #[error("{provider}: unexpected response: {detail}")]
    Protocol {
        /// Provider name.
        provider: String,
        /// What was wrong.
        detail: String,
    },
    /// The streamed answer grew past its size cap (`max_answer_bytes`); not retried.
    #[error("{provider}: answer exceeded {limit} bytes")]
    AnswerTooLarge {
        /// Provider name.
        provider: String,
        /// The cap.
        limit: u64,
    },
    /// The caller's sink stopped the stream (budget); the partial answer is kept.
    #[error("stream stopped: {reason}")]
    Aborted {
        /// Why.
        reason: String,
        /// What had arrived.
        partial: Box<ChatResponse>,
    },
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The script provider has no turn for this request.
    #[error("script `{script}` has no turn for agent `{agent}` matching the latest input: {input}")]
    NoScriptMatch {
        /// Script file.
        script: String,
        /// Agent asking.
        agent: String,
        /// The latest input (truncated).
        input: String,
    },
    /// Misconfiguration: unknown provider, missing API key variable, unreadable script.
    #[error("{0}")]
    Config(String),
}
