//! A scripted model for driving coding-agent CLIs: one responder that speaks Anthropic Messages
//! (`/v1/messages`, with or without `?beta=true`), OpenAI Responses (`/v1/responses`) and Chat
//! Completions (`/v1/chat/completions`), streaming, and decides from the conversation:
//!
//! - the conversation ends with a tool result → the final text `DONE: <start of the result>`;
//! - the latest user prompt holds `WRITE` (or `WRITE:<path>`) and tools are offered → one call
//!   of the CLI's write tool (`Write`, `write`, `write_file`, `apply_patch`, else its shell tool)
//!   creating `mock.txt` (or `<path>`) with [`FILE_TEXT`];
//! - Anthropic only: it holds `READ-THEN-WRITE:<path>` → a `Read` of the file, then a `Write`
//!   of it (Claude Code writes an existing file only after reading it);
//! - it holds `FAIL` → one call of the shell tool running `ls definitely-missing-dir`;
//! - anything else → the text [`HELLO`].
//!
//! Tool argument names are read from each tool's schema, so one script fits every CLI. Every
//! call reports the fixed usage of its wire ([`ANTHROPIC_USAGE`] with [`ANTHROPIC_CACHE`],
//! [`RESPONSES_USAGE`] with [`RESPONSES_CACHED`], [`CHAT_USAGE`] with [`CHAT_CACHED`]), each
//! wire counting the cache its own way, so a test can check the totals a CLI reports, cache
//! split included, against the calls recorded.

use crate::{MockResponse, RecordedRequest, Responder};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The plain answer.
pub const HELLO: &str = "Hello from the mock model.";
/// What a scripted write puts in the file.
pub const FILE_TEXT: &str = "written by the mock model\n";
/// The command of a scripted failing shell call.
pub const FAIL_CMD: &str = "ls definitely-missing-dir";
/// (input, output) tokens of every Anthropic call; the input excludes the cache, as Anthropic
/// counts it.
pub const ANTHROPIC_USAGE: (u64, u64) = (100, 10);
/// (cache read, cache write) tokens of every Anthropic call, beside its input.
pub const ANTHROPIC_CACHE: (u64, u64) = (400, 50);
/// (input, output) tokens of every Responses call; the input includes the cached tokens, as
/// OpenAI counts them.
pub const RESPONSES_USAGE: (u64, u64) = (200, 20);
/// Cached tokens of every Responses call (`input_tokens_details.cached_tokens`), within its input.
pub const RESPONSES_CACHED: u64 = 120;
/// (prompt, completion) tokens of every Chat Completions call; the prompt includes the cached
/// tokens.
pub const CHAT_USAGE: (u64, u64) = (300, 30);
/// Cached tokens of every Chat Completions call (`prompt_tokens_details.cached_tokens`), within
/// its prompt.
pub const CHAT_CACHED: u64 = 180;

/// What the model does next.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Text(String),
    /// (tool name, freeform tool?, arguments: JSON object or the freeform input as a string)
    Tool(String, bool, Value),
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| {
                ["text", "content", "output"]
                    .iter()
                    .filter_map(|k| p.get(*k))
                    .map(text_of)
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// (name, schema, freeform) of every tool offered, whatever the wire.
fn tools_of(body: &Value) -> Vec<(String, Value, bool)> {
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|t| {
            if let Some(f) = t.get("function").filter(|f| f.is_object()) {
                let name = f.get("name")?.as_str()?.to_owned();
                return Some((
                    name,
                    f.get("parameters").cloned().unwrap_or(Value::Null),
                    false,
                ));
            }
            let name = t.get("name")?.as_str()?.to_owned();
            if t.get("type").and_then(Value::as_str) == Some("custom") {
                return Some((name, Value::Null, true));
            }
            let schema = t
                .get("input_schema")
                .or_else(|| t.get("parameters"))
                .cloned()
                .unwrap_or(Value::Null);
            Some((name, schema, false))
        })
        .collect()
}

fn props(schema: &Value) -> serde_json::Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn shell(tools: &[(String, Value, bool)], cmd: &str) -> Option<Step> {
    for want in [
        "Bash",
        "bash",
        "shell",
        "exec_command",
        "shell_command",
        "local_shell",
    ] {
        if let Some((name, schema, _)) = tools.iter().find(|(n, _, _)| n == want) {
            let p = props(schema);
            let args = if p.contains_key("cmd") {
                json!({ "cmd": cmd })
            } else if p
                .get("command")
                .and_then(|c| c.get("type"))
                .and_then(Value::as_str)
                == Some("array")
            {
                json!({ "command": ["bash", "-lc", cmd] })
            } else if p.contains_key("description") {
                json!({ "command": cmd, "description": "run a command" })
            } else {
                json!({ "command": cmd })
            };
            return Some(Step::Tool(name.clone(), false, args));
        }
    }
    None
}

fn write(tools: &[(String, Value, bool)], workdir: &Path, target: &str) -> Option<Step> {
    for want in ["Write", "write", "write_file"] {
        if let Some((name, schema, _)) = tools.iter().find(|(n, _, _)| n == want) {
            let p = props(schema);
            let args = if p.contains_key("file_path") {
                let path = if Path::new(target).is_absolute() {
                    PathBuf::from(target)
                } else {
                    workdir.join(target)
                };
                json!({ "file_path": path.display().to_string(), "content": FILE_TEXT })
            } else {
                json!({ "path": target, "content": FILE_TEXT })
            };
            return Some(Step::Tool(name.clone(), false, args));
        }
    }
    if let Some((name, schema, freeform)) = tools.iter().find(|(n, _, _)| n == "apply_patch") {
        let patch = format!(
            "*** Begin Patch\n*** Add File: {target}\n+{}\n*** End Patch\n",
            FILE_TEXT.trim()
        );
        if *freeform {
            return Some(Step::Tool(name.clone(), true, Value::String(patch)));
        }
        let key = props(schema)
            .keys()
            .next()
            .cloned()
            .unwrap_or_else(|| "input".into());
        return Some(Step::Tool(name.clone(), false, json!({ key: patch })));
    }
    shell(
        tools,
        &format!("printf '%s' '{}' > {target}", FILE_TEXT.trim()),
    )
}

fn decide(result: Option<String>, prompt: &str, body: &Value, workdir: &Path) -> Step {
    let prompt = body
        .get("baton_scripted_prompt")
        .and_then(Value::as_str)
        .unwrap_or(prompt);
    if let Some(r) = result {
        let flat = r.split_whitespace().collect::<Vec<_>>().join(" ");
        return Step::Text(format!(
            "DONE: {}",
            flat.chars().take(60).collect::<String>()
        ));
    }
    let tools = tools_of(body);
    if let Some(at) = prompt.find("WRITE") {
        let target = prompt[at + 5..]
            .strip_prefix(':')
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("mock.txt");
        if let Some(step) = write(&tools, workdir, target) {
            return step;
        }
    }
    if prompt.contains("FAIL")
        && let Some(step) = shell(&tools, FAIL_CMD)
    {
        return step;
    }
    Step::Text(HELLO.to_owned())
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The text of the conversation's first user message.
fn first_prompt(msgs: &[Value]) -> String {
    msgs.iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| text_of(m.get("content").unwrap_or(&Value::Null)))
        .unwrap_or_default()
}

/// The tool the model last called in an Anthropic conversation.
fn last_tool_use(msgs: &[Value]) -> Option<String> {
    msgs.iter()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("tool_use"))
        .filter_map(|p| p.get("name").and_then(Value::as_str))
        .next_back()
        .map(str::to_owned)
}

/// A fresh message id (each answer is its own message, as with a real server).
fn next_id(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{prefix}_scripted{:06}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn anthropic(body: &Value, workdir: &Path) -> MockResponse {
    let msgs = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let last = msgs
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .cloned()
        .unwrap_or(Value::Null);
    let content = last.get("content").cloned().unwrap_or(Value::Null);
    let results: Vec<Value> = content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("tool_result"))
        .cloned()
        .collect();
    let result = (!results.is_empty()).then(|| text_of(&Value::Array(results)));
    let prompt = body
        .get("baton_scripted_prompt")
        .and_then(Value::as_str)
        .map_or_else(|| first_prompt(&msgs), str::to_owned);
    let step = match prompt.split_once("READ-THEN-WRITE:") {
        // Claude Code writes an existing file only after reading it: read, then write.
        Some((_, rest)) => {
            let target = rest.split_whitespace().next().unwrap_or("mock.txt");
            let path = workdir.join(target).display().to_string();
            match last_tool_use(&msgs).as_deref() {
                None => Step::Tool("Read".into(), false, json!({ "file_path": path })),
                Some("Read") => Step::Tool(
                    "Write".into(),
                    false,
                    json!({ "file_path": path, "content": FILE_TEXT }),
                ),
                Some(_) => decide(result, "", body, workdir),
            }
        }
        None => decide(result, &text_of(&content), body, workdir),
    };
    let model = model_of(body);
    let (input, output) = ANTHROPIC_USAGE;
    let (read, write) = ANTHROPIC_CACHE;
    let mut events = vec![
        sse(
            Some("message_start"),
            &json!({"type": "message_start", "message": {
            "id": next_id("msg"), "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "output_tokens": 1, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                      "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0}}}}),
        ),
        sse(Some("ping"), &json!({"type": "ping"})),
    ];
    let mut block = |i: usize, start: Value, delta: Value| {
        events.push(sse(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": i, "content_block": start}),
        ));
        events.push(sse(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": i, "delta": delta}),
        ));
        events.push(sse(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": i}),
        ));
    };
    let stop = match &step {
        Step::Text(t) => {
            block(
                0,
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": t}),
            );
            "end_turn"
        }
        Step::Tool(name, _, args) => {
            block(
                0,
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": "I will use a tool."}),
            );
            block(
                1,
                json!({"type": "tool_use", "id": next_id("toolu"), "name": name, "input": {}}),
                json!({"type": "input_json_delta", "partial_json": args.to_string()}),
            );
            "tool_use"
        }
    };
    events.push(sse(Some("message_delta"), &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}})));
    events.push(sse(Some("message_stop"), &json!({"type": "message_stop"})));
    MockResponse::sse_events(events)
}

fn responses(body: &Value, workdir: &Path) -> MockResponse {
    let items = match body.get("input") {
        Some(Value::String(s)) => vec![json!({"role": "user", "content": s})],
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    let last = items.last().cloned().unwrap_or(Value::Null);
    let kind = last.get("type").and_then(Value::as_str).unwrap_or("");
    let result = matches!(kind, "function_call_output" | "custom_tool_call_output")
        .then(|| text_of(&Value::Array(vec![last.clone()])));
    let step = decide(result, &last_user_text(&items), body, workdir);
    let model = model_of(body);
    let (input, output) = RESPONSES_USAGE;
    let usage = json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": RESPONSES_CACHED},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": input + output});
    let item = match &step {
        Step::Text(t) => {
            json!({"id": "msg_scripted", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": t, "annotations": []}]})
        }
        Step::Tool(name, true, Value::String(input)) => {
            json!({"id": "ctc_scripted", "type": "custom_tool_call",
            "status": "completed", "call_id": "call_scripted", "name": name, "input": input})
        }
        Step::Tool(name, _, args) => {
            json!({"id": "fc_scripted", "type": "function_call", "status": "completed",
            "call_id": "call_scripted", "name": name, "arguments": args.to_string()})
        }
    };
    let resp = json!({"id": "resp_scripted", "object": "response", "created_at": 1_763_800_000, "model": model,
        "status": "completed", "output": [item.clone()], "usage": usage});
    let mut pending = resp.clone();
    pending["status"] = json!("in_progress");
    pending["output"] = json!([]);
    pending["usage"] = Value::Null;
    let mut seq = 0;
    let mut events = Vec::new();
    let mut ev = |mut obj: Value| {
        obj["sequence_number"] = json!(seq);
        seq += 1;
        let name = obj
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        events.push(sse(Some(&name), &obj));
    };
    ev(json!({"type": "response.created", "response": pending}));
    ev(json!({"type": "response.output_item.added", "output_index": 0, "item": item}));
    ev(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    ev(json!({"type": "response.completed", "response": resp}));
    MockResponse::sse_events(events)
}

/// The text of the newest user message of `items` (empty without one).
fn last_user_text(items: &[Value]) -> String {
    items
        .iter()
        .rev()
        .find(|i| i.get("role").and_then(Value::as_str) == Some("user"))
        .map(|u| text_of(u.get("content").unwrap_or(&Value::Null)))
        .unwrap_or_default()
}

/// The model a request names (`mock-model` without one).
fn model_of(body: &Value) -> &str {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock-model")
}

fn chat(body: &Value, workdir: &Path) -> MockResponse {
    let msgs = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let last = msgs.last().cloned().unwrap_or(Value::Null);
    let result = (last.get("role").and_then(Value::as_str) == Some("tool"))
        .then(|| text_of(last.get("content").unwrap_or(&Value::Null)));
    let step = decide(result, &last_user_text(&msgs), body, workdir);
    let model = model_of(body);
    let (input, output) = CHAT_USAGE;
    let chunk = |delta: Value, finish: Value| {
        sse(
            None,
            &json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1_763_800_000,
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let finish = match &step {
        Step::Text(t) => {
            events.push(chunk(json!({"content": t}), Value::Null));
            "stop"
        }
        Step::Tool(name, _, args) => {
            events.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_scripted", "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}),
                Value::Null,
            ));
            "tool_calls"
        }
    };
    events.push(chunk(json!({}), json!(finish)));
    events.push(sse(None, &json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1_763_800_000,
        "model": model, "choices": [], "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
        "prompt_tokens_details": {"cached_tokens": CHAT_CACHED}}})));
    events.push("data: [DONE]\n\n".to_owned());
    MockResponse::sse_events(events)
}

/// Answers one request by the script, for an agent working in `workdir`.
pub fn respond(request: &RecordedRequest, workdir: &Path) -> MockResponse {
    respond_as(request, workdir, None)
}

/// Answers as [`respond`], reading `prompt` instead of the conversation's latest prompt (so
/// an agent whose task baton writes can still be scripted, e.g. `WRITE:tests-pass`).
pub fn respond_as(request: &RecordedRequest, workdir: &Path, prompt: Option<&str>) -> MockResponse {
    let mut body = request.body.clone();
    if let Some(p) = prompt {
        body["baton_scripted_prompt"] = Value::String(p.to_owned());
    }
    let request = &RecordedRequest {
        body,
        ..request.clone()
    };
    let path = request.path.split('?').next().unwrap_or("");
    if path.ends_with("/messages/count_tokens") {
        return MockResponse::json(200, &json!({"input_tokens": ANTHROPIC_USAGE.0}));
    }
    if path.ends_with("/messages") {
        return anthropic(&request.body, workdir);
    }
    if path.ends_with("/responses") {
        return responses(&request.body, workdir);
    }
    if path.ends_with("/chat/completions") {
        return chat(&request.body, workdir);
    }
    if path.ends_with("/models") {
        return MockResponse::json(
            200,
            &json!({"object": "list", "data": [{"id": "mock-model", "object": "model"}]}),
        );
    }
    MockResponse::json(
        404,
        &json!({"error": {"message": format!("not found: {}", request.path)}}),
    )
}

/// A responder that answers every conversation as if its prompt were `prompt`.
pub fn responder_as(workdir: &Path, prompt: &str) -> Responder {
    let workdir = workdir.to_path_buf();
    let prompt = prompt.to_owned();
    Arc::new(move |r: &RecordedRequest| respond_as(r, &workdir, Some(&prompt)))
}

/// The script as a [`crate::MockServer::respond_with`] responder.
pub fn responder(workdir: &Path) -> Responder {
    let workdir = workdir.to_path_buf();
    Arc::new(move |r: &RecordedRequest| respond(r, &workdir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(path: &str, body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: path.into(),
            headers: Vec::new(),
            raw_body: body.to_string(),
            body,
        }
    }

    #[test]
    fn the_script_picks_each_clis_write_tool() {
        let dir = Path::new("/w");
        let claude = json!({"tools": [{"name": "Write", "input_schema": {"properties": {"file_path": {}, "content": {}}}}]});
        assert_eq!(
            decide(None, "Please WRITE:a.txt", &claude, dir),
            Step::Tool(
                "Write".into(),
                false,
                json!({"file_path": "/w/a.txt", "content": FILE_TEXT})
            )
        );
        let codex = json!({"tools": [{"type": "custom", "name": "apply_patch"}]});
        assert!(
            matches!(decide(None, "WRITE", &codex, dir), Step::Tool(n, true, _) if n == "apply_patch")
        );
        let pi = json!({"tools": [{"type": "function", "function": {"name": "bash", "parameters": {"properties": {"command": {}}}}}]});
        assert_eq!(
            decide(None, "FAIL now", &pi, dir),
            Step::Tool("bash".into(), false, json!({"command": FAIL_CMD}))
        );
        assert_eq!(
            decide(Some("x  y".into()), "WRITE", &pi, dir),
            Step::Text("DONE: x y".into())
        );
        assert_eq!(
            decide(None, "WRITE", &json!({}), dir),
            Step::Text(HELLO.into())
        );
    }

    #[test]
    fn every_wire_gets_a_stream() {
        let dir = Path::new("/w");
        for path in [
            "/v1/messages?beta=true",
            "/v1/responses",
            "/v1/chat/completions",
        ] {
            let r = respond(&req(path, json!({"messages": [], "input": "hi"})), dir);
            assert!(
                r.body_text().contains("Hello from the mock model"),
                "{path}"
            );
        }
    }
}
