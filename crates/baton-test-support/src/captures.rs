//! Streams captured from real local servers, byte for byte, as wire fixtures.
//!
//! `pyserver-*` came from llama-cpp-python's server (it streams no usage, and drops `tools`
//! unless `tool_choice` forces one), `cppserver-*` from llama.cpp's `llama-server --jinja`
//! (usage in a final `choices: []` chunk, tool calls only when the model's template has them).
//!
//! [`strict_llama_server`] answers like llama-server but refuses, as a strict local server
//! would, any top-level parameter outside [`LLAMA_SERVER_CHAT_PARAMS`].

use crate::{MockResponse, RecordedRequest, Responder};
use serde_json::{Value, json};
use std::sync::Arc;

/// llama-cpp-python, a plain answer: no usage chunk at all.
pub const PYSERVER_PLAIN: &str = include_str!("../fixtures/llama/pyserver-stream-plain.sse");
/// llama-cpp-python, a tool call forced with `tool_choice`: no usage chunk.
pub const PYSERVER_TOOLS_FORCED: &str =
    include_str!("../fixtures/llama/pyserver-stream-tools-forced.sse");
/// llama-server with `tools` and automatic tool choice: a small model answering in prose (a
/// JSON code block) instead of calling the tool, with usage.
pub const CPPSERVER_TOOLS_AUTO: &str =
    include_str!("../fixtures/llama/cppserver-stream-tools-auto.sse");

/// A `200 text/event-stream` answer replaying `capture`, one event per part.
pub fn replay(capture: &str) -> MockResponse {
    let events: Vec<String> = capture.split_inclusive("\n\n").map(str::to_owned).collect();
    MockResponse::sse_events(events)
}

/// What llama-cpp-python answers to tools with automatic choice in a stream: `200 OK`, an
/// event-stream content type, and no body at all.
pub fn empty_200() -> MockResponse {
    MockResponse::sse(Vec::new())
}

/// The top-level parameters llama.cpp's `llama-server` reads on `POST /v1/chat/completions`,
/// from its `tools/server/README.md`: the OpenAI chat parameters it implements, its chat
/// extras (`chat_template_kwargs`, `reasoning_*`, `parallel_tool_calls`, `response_format`), and
/// the `/completion` options it also takes there ("llama.cpp `/completion`-specific features
/// such as `mirostat` are also supported"). OpenAI-only parameters (`prompt_cache_key`, `user`,
/// `store`, `metadata`, `service_tier`…) are not among them.
pub const LLAMA_SERVER_CHAT_PARAMS: &[&str] = &[
    // OpenAI chat completions, as llama-server implements them.
    "model",
    "messages",
    "stream",
    "stream_options",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "n",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    // Chat extras.
    "chat_template_kwargs",
    "reasoning_effort",
    "reasoning_format",
    "reasoning_control",
    // `/completion` options.
    "dynatemp_range",
    "dynatemp_exponent",
    "top_k",
    "min_p",
    "n_predict",
    "n_indent",
    "n_keep",
    "n_cmpl",
    "n_cache_reuse",
    "typical_p",
    "repeat_penalty",
    "repeat_last_n",
    "dry_multiplier",
    "dry_base",
    "dry_allowed_length",
    "dry_penalty_last_n",
    "dry_sequence_breakers",
    "xtc_probability",
    "xtc_threshold",
    "mirostat",
    "mirostat_tau",
    "mirostat_eta",
    "grammar",
    "json_schema",
    "ignore_eos",
    "n_probs",
    "min_keep",
    "t_max_predict_ms",
    "id_slot",
    "cache_prompt",
    "return_tokens",
    "samplers",
    "timings_per_token",
    "return_progress",
    "sse_ping_interval",
    "post_sampling_probs",
    "response_fields",
    "lora",
];

/// The top-level keys of a chat completions `body` that llama-server does not read, in order.
pub fn unknown_to_llama_server(body: &Value) -> Vec<String> {
    body.as_object()
        .into_iter()
        .flatten()
        .map(|(key, _)| key)
        .filter(|key| !LLAMA_SERVER_CHAT_PARAMS.contains(&key.as_str()))
        .cloned()
        .collect()
}

/// A llama-server that refuses parameters it does not know: each request with only known
/// parameters is answered with `capture` replayed, any other with a 400 in llama-server's error
/// shape naming them.
pub fn strict_llama_server(capture: &'static str) -> Responder {
    Arc::new(move |request: &RecordedRequest| {
        let unknown = unknown_to_llama_server(&request.body);
        if unknown.is_empty() {
            return replay(capture);
        }
        MockResponse::json(
            400,
            &json!({"error": {
                "code": 400,
                "message": format!("Unsupported param: {}", unknown.join(", ")),
                "type": "invalid_request_error",
            }}),
        )
    })
}
