//! Streams captured from real local servers, byte for byte, as wire fixtures.
//!
//! `pyserver-*` came from llama-cpp-python's server (it streams no usage, and drops `tools`
//! unless `tool_choice` forces one), `cppserver-*` from llama.cpp's `llama-server --jinja`
//! (usage in a final `choices: []` chunk, tool calls only when the model's template has them).

use crate::MockResponse;

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
