//! baton-llm: thin clients for the model APIs baton speaks.
//!
//! OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp server, OpenRouter), the
//! Anthropic Messages API, and a scripted replay provider for tests and the demo — all streaming,
//! with tool calls assembled from deltas, usage accounting, retries with backoff, a per-call
//! timeout and cancellation. The crate knows models, not agents: it turns a [`ChatRequest`] into a
//! [`ChatResponse`] and reports progress as [`StreamEvent`]s so the caller can stop a stream that
//! crosses its budget.

pub mod anthropic;
pub mod cache;
pub mod client;
mod conversation;
pub mod error;
pub mod openai;
pub mod pricing;
pub mod probe;
pub mod registry;
pub mod retry;
pub mod script;
pub mod sse;
pub mod types;

pub use client::{ModelClient, StreamSink};
pub use error::LlmError;
pub use types::*;
