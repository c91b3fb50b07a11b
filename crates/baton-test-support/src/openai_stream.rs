//! OpenAI chat completions streams, byte-faithful to the documented format.
//!
//! Each event is `data: <chat.completion.chunk JSON>\n\n`: `id`, `object`, `created`, `model`,
//! `choices[{index, delta, logprobs, finish_reason}]` and `usage: null`; the first delta carries
//! `role: assistant`; tool calls arrive as `delta.tool_calls[{index, id, type, function{name,
//! arguments}}]` whose later deltas carry only `index` and an `arguments` fragment; with
//! `stream_options.include_usage` a last chunk has `choices: []` and the usage; `data: [DONE]`
//! ends the stream.

use crate::MockResponse;
use serde_json::{Value, json};

/// Token counts for the final usage chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `prompt_tokens` (cached tokens included, as OpenAI counts them).
    pub prompt_tokens: u64,
    /// `completion_tokens`.
    pub completion_tokens: u64,
    /// `prompt_tokens_details.cached_tokens`.
    pub cached_tokens: u64,
}

/// The chunk id used by every helper.
pub const CHUNK_ID: &str = "chatcmpl-mock0001";
/// The model name used by every helper.
pub const MODEL: &str = "gpt-mock";

/// A `data:` event for `chunk`.
pub fn event(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}

/// One `chat.completion.chunk` event with a single choice.
pub fn chunk(delta: Value, finish_reason: Option<&str>) -> String {
    event(&json!({
        "id": CHUNK_ID,
        "object": "chat.completion.chunk",
        "created": 1_763_800_000,
        "model": MODEL,
        "system_fingerprint": "fp_mock",
        "choices": [{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
        "usage": null,
    }))
}

/// The final usage chunk (`choices: []`).
pub fn usage_chunk(usage: Usage) -> String {
    event(&json!({
        "id": CHUNK_ID,
        "object": "chat.completion.chunk",
        "created": 1_763_800_000,
        "model": MODEL,
        "system_fingerprint": "fp_mock",
        "choices": [],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
    }))
}

/// The end marker.
pub fn done() -> String {
    "data: [DONE]\n\n".to_owned()
}

/// The events of a text answer streamed as `parts`, then `finish_reason: stop`, the usage
/// chunk (if any) and `[DONE]`.
pub fn text_events(parts: &[&str], usage: Option<Usage>) -> Vec<String> {
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    events.extend(parts.iter().map(|p| chunk(json!({"content": p}), None)));
    events.push(chunk(json!({}), Some("stop")));
    finish(events, usage)
}

/// [`text_events`] as a response.
pub fn text(parts: &[&str], usage: Option<Usage>) -> MockResponse {
    MockResponse::sse_events(text_events(parts, usage))
}

/// The events of an answer with optional leading `text` and tool `calls` given as `(id, name,
/// arguments)`: each call gets the next `index`, its first delta carries id, type and name, and
/// its arguments follow in fragments of `fragment_chars` characters. Ends with
/// `finish_reason: tool_calls`, the usage chunk (if any) and `[DONE]`.
pub fn tool_call_events(
    text: &str,
    calls: &[(&str, &str, &str)],
    fragment_chars: usize,
    usage: Option<Usage>,
) -> Vec<String> {
    let mut events = vec![chunk(json!({"role": "assistant", "content": null}), None)];
    if !text.is_empty() {
        events.push(chunk(json!({"content": text}), None));
    }
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{
                "index": index,
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }]}),
            None,
        ));
        for fragment in crate::split_chars(arguments, fragment_chars) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                None,
            ));
        }
    }
    events.push(chunk(json!({}), Some("tool_calls")));
    finish(events, usage)
}

/// [`tool_call_events`] as a response.
pub fn tool_calls(
    text: &str,
    calls: &[(&str, &str, &str)],
    fragment_chars: usize,
    usage: Option<Usage>,
) -> MockResponse {
    MockResponse::sse_events(tool_call_events(text, calls, fragment_chars, usage))
}

fn finish(mut events: Vec<String>, usage: Option<Usage>) -> Vec<String> {
    if let Some(usage) = usage {
        events.push(usage_chunk(usage));
    }
    events.push(done());
    events
}

/// An OpenAI error body, e.g. for a 400 or 429 answer.
pub fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}
