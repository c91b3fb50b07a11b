//! Anthropic Messages streams, byte-faithful to the documented format.
//!
//! Named events, each `event: <name>\ndata: <JSON>\n\n`: `message_start{message}` with the input
//! usage, then per content block `content_block_start{index, content_block}`,
//! `content_block_delta{index, delta}` (`text_delta{text}` or `input_json_delta{partial_json}`)
//! and `content_block_stop{index}`, a `ping` after the first block starts, then
//! `message_delta{delta{stop_reason, stop_sequence}, usage{output_tokens}}` (cumulative) and
//! `message_stop`.

use crate::MockResponse;
use serde_json::{Value, json};

/// Token counts for `message_start` and `message_delta`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `input_tokens` (cache reads and writes excluded, as Anthropic counts them).
    pub input_tokens: u64,
    /// `output_tokens` (the final, cumulative count).
    pub output_tokens: u64,
    /// `cache_read_input_tokens`.
    pub cache_read_input_tokens: u64,
    /// `cache_creation_input_tokens`.
    pub cache_creation_input_tokens: u64,
}

/// The message id used by every helper.
pub const MESSAGE_ID: &str = "msg_mock01";
/// The model name used by every helper.
pub const MODEL: &str = "claude-mock";

/// A named event.
pub fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// `message_start` with the input usage (and one output token, as the API reports).
pub fn message_start(usage: Usage) -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": MESSAGE_ID,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": MODEL,
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "cache_read_input_tokens": usage.cache_read_input_tokens,
                "output_tokens": 1,
            },
        }}),
    )
}

/// `content_block_start` of a text block.
pub fn text_block_start(index: usize) -> String {
    event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}),
    )
}

/// `content_block_start` of a tool_use block.
pub fn tool_use_block_start(index: usize, id: &str, name: &str) -> String {
    event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    )
}

/// A `text_delta`.
pub fn text_delta(index: usize, text: &str) -> String {
    event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": text}}),
    )
}

/// An `input_json_delta`.
pub fn input_json_delta(index: usize, partial_json: &str) -> String {
    event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": partial_json}}),
    )
}

/// `content_block_stop`.
pub fn block_stop(index: usize) -> String {
    event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

/// `ping`.
pub fn ping() -> String {
    event("ping", &json!({"type": "ping"}))
}

/// `message_delta` with the stop reason and the cumulative output tokens.
pub fn message_delta(stop_reason: &str, output_tokens: u64) -> String {
    event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens}}),
    )
}

/// `message_stop`.
pub fn message_stop() -> String {
    event("message_stop", &json!({"type": "message_stop"}))
}

/// An `error` event, e.g. `error_event("overloaded_error", "Overloaded")`.
pub fn error_event(kind: &str, message: &str) -> String {
    event(
        "error",
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

/// An Anthropic error body, e.g. for a 400 or 529 answer.
pub fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The events of a text answer streamed as `parts`, ending with `end_turn`.
pub fn text_events(parts: &[&str], usage: Usage) -> Vec<String> {
    let mut events = vec![message_start(usage), text_block_start(0), ping()];
    events.extend(parts.iter().map(|p| text_delta(0, p)));
    events.push(block_stop(0));
    events.push(message_delta("end_turn", usage.output_tokens));
    events.push(message_stop());
    events
}

/// [`text_events`] as a response.
pub fn text(parts: &[&str], usage: Usage) -> MockResponse {
    MockResponse::sse_events(text_events(parts, usage))
}

/// The events of an answer with optional leading `text` (block 0) and tool_use blocks for
/// `calls` given as `(id, name, input JSON)`, the input streamed as `input_json_delta` fragments
/// of `fragment_chars` characters (the first one empty, as the API sends it). Ends with
/// `tool_use`.
pub fn tool_use_events(
    text: &str,
    calls: &[(&str, &str, &str)],
    fragment_chars: usize,
    usage: Usage,
) -> Vec<String> {
    let mut events = vec![message_start(usage)];
    let mut index = 0;
    if !text.is_empty() {
        events.push(text_block_start(0));
        events.push(ping());
        events.push(text_delta(0, text));
        events.push(block_stop(0));
        index = 1;
    }
    for (id, name, input) in calls {
        events.push(tool_use_block_start(index, id, name));
        if index == 0 {
            events.push(ping());
        }
        events.push(input_json_delta(index, ""));
        for fragment in crate::split_chars(input, fragment_chars) {
            events.push(input_json_delta(index, &fragment));
        }
        events.push(block_stop(index));
        index += 1;
    }
    events.push(message_delta("tool_use", usage.output_tokens));
    events.push(message_stop());
    events
}

/// [`tool_use_events`] as a response.
pub fn tool_use(
    text: &str,
    calls: &[(&str, &str, &str)],
    fragment_chars: usize,
    usage: Usage,
) -> MockResponse {
    MockResponse::sse_events(tool_use_events(text, calls, fragment_chars, usage))
}
