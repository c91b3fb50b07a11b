//! The model APIs' documented request rules, as an oracle independent of baton's clients: what
//! Anthropic's Messages API and OpenAI's chat completions refuse with a 400, so the local model
//! servers of the tests refuse it too instead of recording a malformed request as a success.
//!
//! Only rules the providers document (in their API reference, guides and error texts) are
//! enforced, and nothing else: real coding-agent CLIs go through the same servers, so unknown
//! block types, `thinking` blocks, `cache_control`, `metadata`, server tools and any other field
//! pass untouched. Shapes of known fields are the SDK oracle's job (`sdk_oracle`); this
//! module owns the structure across fields: roles, the pairing of tool calls with their results,
//! unique ids and names, and the prompt-cache breakpoint limits.
//!
//! Two rules of older API versions are deliberately absent: Anthropic's reference states that
//! "consecutive `user` or `assistant` turns in your request will be combined into a single
//! turn", and the first message may be an assistant one, so neither strict alternation nor a
//! leading `user` message is required. Likewise `max_tokens` may be `0` (documented: it
//! populates the prompt cache without generating).
//!
//! A refusal is a [`WireViolation`]: the message worded like the API's own, and the path of the
//! offending parameter (`messages.3.content.0`).

use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// Why a request body would be refused by the real API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireViolation {
    /// What is wrong, worded like the API's error (without the path).
    pub message: String,
    /// The offending parameter as a dotted path (`messages.3.content.0`), when there is one.
    pub param: Option<String>,
}

impl WireViolation {
    fn at(param: impl Into<String>, message: impl Into<String>) -> WireViolation {
        WireViolation {
            message: message.into(),
            param: Some(param.into()),
        }
    }

    fn whole(message: impl Into<String>) -> WireViolation {
        WireViolation {
            message: message.into(),
            param: None,
        }
    }
}

/// `param: message`, as Anthropic words its errors (just the message without a param).
impl fmt::Display for WireViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.param {
            Some(param) => write!(f, "{param}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for WireViolation {}

type Checked<T = ()> = Result<T, WireViolation>;

/// `^[a-zA-Z0-9_-]+$`
fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `^[a-zA-Z0-9_-]{1,64}$`
fn is_tool_name(s: &str) -> bool {
    is_id(s) && s.len() <= 64
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------------------------

const MAX_CACHE_BREAKPOINTS: usize = 4;

/// The cache breakpoints met so far, in the API's processing order (tools, system, messages).
#[derive(Default)]
struct Breakpoints {
    /// (path of the block, its ttl is one hour)
    seen: Vec<(String, bool)>,
}

impl Breakpoints {
    /// Checks the `cache_control` of the block at `path`, if it has one, and records it.
    fn visit(&mut self, block: &Map<String, Value>, path: &str) -> Checked {
        let Some(cache) = block.get("cache_control") else {
            return Ok(());
        };
        if cache.is_null() {
            return Ok(());
        }
        let one_hour = cache_control_is_one_hour(cache, &format!("{path}.cache_control"))?;
        self.seen.push((path.to_owned(), one_hour));
        Ok(())
    }

    fn check(&self) -> Checked {
        if self.seen.len() > MAX_CACHE_BREAKPOINTS {
            return Err(WireViolation::whole(format!(
                "A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
                self.seen.len()
            )));
        }
        let mut five_minutes = false;
        for (path, one_hour) in &self.seen {
            if *one_hour && five_minutes {
                return Err(WireViolation::at(
                    format!("{path}.cache_control.ttl"),
                    "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control \
                     block. Note that blocks are processed in the following order: `tools`, \
                     `system`, `messages`.",
                ));
            }
            five_minutes |= !*one_hour;
        }
        Ok(())
    }
}

/// Checks a `cache_control` object at `path`: `{"type": "ephemeral"}` with an optional `ttl` of
/// `5m` (the default) or `1h`. True for a one-hour breakpoint.
fn cache_control_is_one_hour(cache: &Value, path: &str) -> Checked<bool> {
    let Some(cache) = cache.as_object() else {
        return Err(WireViolation::at(
            path,
            "Input should be a valid dictionary or object to extract fields from",
        ));
    };
    match cache.get("type").and_then(Value::as_str) {
        Some("ephemeral") => {}
        Some(_) => {
            return Err(WireViolation::at(
                format!("{path}.type"),
                "Input should be 'ephemeral'",
            ));
        }
        None => return Err(WireViolation::at(format!("{path}.type"), "Field required")),
    }
    match cache.get("ttl") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::String(ttl)) if ttl == "5m" => Ok(false),
        Some(Value::String(ttl)) if ttl == "1h" => Ok(true),
        Some(_) => Err(WireViolation::at(
            format!("{path}.ttl"),
            "Input should be '5m' or '1h'",
        )),
    }
}

/// Checks an Anthropic Messages request body (`POST /v1/messages`) against the documented rules.
pub fn check_anthropic(body: &Value) -> Checked {
    let Some(body) = body.as_object() else {
        return Err(WireViolation::whole(format!(
            "request body must be a JSON object, not {}",
            type_name(body)
        )));
    };
    match body.get("model") {
        None => return Err(WireViolation::at("model", "Field required")),
        Some(Value::String(model)) if model.is_empty() => {
            return Err(WireViolation::at(
                "model",
                "String should have at least 1 character",
            ));
        }
        Some(Value::String(_)) => {}
        Some(_) => return Err(WireViolation::at("model", "Input should be a valid string")),
    }
    match body.get("max_tokens") {
        None => return Err(WireViolation::at("max_tokens", "Field required")),
        Some(Value::Number(n)) if n.as_u64().is_some() => {}
        Some(Value::Number(n)) if n.as_i64().is_some() => {
            return Err(WireViolation::at(
                "max_tokens",
                "Input should be greater than or equal to 0",
            ));
        }
        Some(_) => {
            return Err(WireViolation::at(
                "max_tokens",
                "Input should be a valid integer",
            ));
        }
    }
    let mut breakpoints = Breakpoints::default();
    if let Some(tools) = body.get("tools") {
        check_anthropic_tools(tools, &mut breakpoints)?;
    }
    if let Some(system) = body.get("system") {
        check_anthropic_system(system, &mut breakpoints)?;
    }
    let messages = match body.get("messages") {
        None => return Err(WireViolation::at("messages", "Field required")),
        Some(Value::Array(messages)) => messages,
        Some(_) => {
            return Err(WireViolation::at(
                "messages",
                "Input should be a valid list",
            ));
        }
    };
    if messages.is_empty() {
        return Err(WireViolation::at(
            "messages",
            "at least one message is required",
        ));
    }
    let mut tool_use_ids = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        check_anthropic_message(messages, i, message, &mut tool_use_ids, &mut breakpoints)?;
    }
    if let Some(cache) = body.get("cache_control").filter(|c| !c.is_null()) {
        // Automatic caching: a breakpoint on the last cacheable block, so only its form is ours.
        cache_control_is_one_hour(cache, "cache_control")?;
    }
    breakpoints.check()
}

fn check_anthropic_tools(tools: &Value, breakpoints: &mut Breakpoints) -> Checked {
    let Some(tools) = tools.as_array() else {
        return Err(WireViolation::at("tools", "Input should be a valid list"));
    };
    let mut names = HashSet::new();
    for (k, tool) in tools.iter().enumerate() {
        let path = format!("tools.{k}");
        let Some(tool) = tool.as_object() else {
            return Err(WireViolation::at(
                path,
                "Input should be a valid dictionary or object to extract fields from",
            ));
        };
        let custom = match tool.get("type") {
            None | Some(Value::Null) => true,
            Some(Value::String(t)) => t == "custom",
            Some(_) => {
                return Err(WireViolation::at(
                    format!("{path}.type"),
                    "Input should be a valid string",
                ));
            }
        };
        if custom {
            let custom_path = format!("{path}.custom");
            match tool.get("name") {
                None => {
                    return Err(WireViolation::at(
                        format!("{custom_path}.name"),
                        "Field required",
                    ));
                }
                Some(Value::String(name)) if is_tool_name(name) => {}
                Some(Value::String(_)) => {
                    return Err(WireViolation::at(
                        format!("{custom_path}.name"),
                        "String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
                    ));
                }
                Some(_) => {
                    return Err(WireViolation::at(
                        format!("{custom_path}.name"),
                        "Input should be a valid string",
                    ));
                }
            }
            let schema_path = format!("{custom_path}.input_schema");
            let Some(schema) = tool.get("input_schema") else {
                return Err(WireViolation::at(schema_path, "Field required"));
            };
            let Some(schema) = schema.as_object() else {
                return Err(WireViolation::at(
                    schema_path,
                    "Input should be a valid dictionary",
                ));
            };
            match schema.get("type") {
                Some(Value::String(t)) if t == "object" => {}
                None => {
                    return Err(WireViolation::at(
                        format!("{schema_path}.type"),
                        "Field required",
                    ));
                }
                Some(_) => {
                    return Err(WireViolation::at(
                        format!("{schema_path}.type"),
                        "Input should be 'object'",
                    ));
                }
            }
        }
        if let Some(name) = tool.get("name").and_then(Value::as_str)
            && !names.insert(name)
        {
            return Err(WireViolation::at(
                "tools",
                format!("Tool names must be unique. Found duplicate: {name}"),
            ));
        }
        breakpoints.visit(tool, &path)?;
    }
    Ok(())
}

fn check_anthropic_system(system: &Value, breakpoints: &mut Breakpoints) -> Checked {
    let blocks = match system {
        Value::String(_) => return Ok(()),
        Value::Array(blocks) => blocks,
        _ => {
            return Err(WireViolation::at(
                "system",
                "Input should be a valid string or a valid list of text blocks",
            ));
        }
    };
    for (k, block) in blocks.iter().enumerate() {
        let path = format!("system.{k}");
        let Some(block) = block.as_object() else {
            return Err(WireViolation::at(
                path,
                "Input should be a valid dictionary or object to extract fields from",
            ));
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {}
            Some(_) => {
                return Err(WireViolation::at(
                    format!("{path}.type"),
                    "Input should be 'text'",
                ));
            }
            None => return Err(WireViolation::at(format!("{path}.type"), "Field required")),
        }
        check_text(block, &path)?;
        breakpoints.visit(block, &path)?;
    }
    Ok(())
}

/// The `text` of a text block at `path`: a string with something other than whitespace.
fn check_text(block: &Map<String, Value>, path: &str) -> Checked {
    match block.get("text") {
        None => Err(WireViolation::at(format!("{path}.text"), "Field required")),
        Some(Value::String(text)) if text.is_empty() => Err(WireViolation::at(
            format!("{path}.text"),
            "text content blocks must be non-empty",
        )),
        Some(Value::String(text)) if text.trim().is_empty() => Err(WireViolation::at(
            format!("{path}.text"),
            "text content blocks must contain non-whitespace text",
        )),
        Some(Value::String(_)) => Ok(()),
        Some(_) => Err(WireViolation::at(
            format!("{path}.text"),
            "Input should be a valid string",
        )),
    }
}

/// The `type` of every block of a message's content (empty for string content).
fn block_types(message: &Value) -> Vec<&str> {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .map(|b| b.get("type").and_then(Value::as_str).unwrap_or(""))
                .collect()
        })
        .unwrap_or_default()
}

/// The string field `key` of every block of type `kind` in a message's content.
fn block_ids<'a>(message: &'a Value, kind: &str, key: &str) -> Vec<&'a str> {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some(kind))
                .filter_map(|b| b.get(key).and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

fn role_of(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

fn check_anthropic_message(
    messages: &[Value],
    i: usize,
    message: &Value,
    tool_use_ids: &mut HashSet<String>,
    breakpoints: &mut Breakpoints,
) -> Checked {
    let path = format!("messages.{i}");
    let Some(fields) = message.as_object() else {
        return Err(WireViolation::at(
            path,
            "Input should be a valid dictionary or object to extract fields from",
        ));
    };
    let role = match fields.get("role") {
        Some(Value::String(r)) if r == "user" || r == "assistant" => r.as_str(),
        None => return Err(WireViolation::at(format!("{path}.role"), "Field required")),
        Some(_) => {
            return Err(WireViolation::at(
                format!("{path}.role"),
                "Input should be 'user' or 'assistant'",
            ));
        }
    };
    let final_assistant = role == "assistant" && i + 1 == messages.len();
    let no_blocks = Vec::new();
    let empty = || {
        WireViolation::at(
            path.clone(),
            "all messages must have non-empty content except for the optional final assistant \
             message",
        )
    };
    let blocks = match fields.get("content") {
        None => {
            return Err(WireViolation::at(
                format!("{path}.content"),
                "Field required",
            ));
        }
        Some(Value::String(text)) => {
            if text.is_empty() {
                return if final_assistant {
                    Ok(())
                } else {
                    Err(empty())
                };
            }
            if text.trim().is_empty() && !final_assistant {
                return Err(WireViolation::at(
                    format!("{path}.content"),
                    "text content blocks must contain non-whitespace text",
                ));
            }
            &no_blocks
        }
        Some(Value::Array(blocks)) => {
            if blocks.is_empty() && !final_assistant {
                return Err(empty());
            }
            blocks
        }
        Some(_) => {
            return Err(WireViolation::at(
                format!("{path}.content"),
                "Input should be a valid string or a valid list of content blocks",
            ));
        }
    };
    let mut answered: HashMap<&str, usize> = HashMap::new();
    let previous_uses: Vec<&str> = match i.checked_sub(1).map(|p| &messages[p]) {
        Some(prev) if role_of(prev) == Some("assistant") => block_ids(prev, "tool_use", "id"),
        _ => Vec::new(),
    };
    for (j, block) in blocks.iter().enumerate() {
        let bpath = format!("{path}.content.{j}");
        let Some(block) = block.as_object() else {
            return Err(WireViolation::at(
                bpath,
                "Input should be a valid dictionary or object to extract fields from",
            ));
        };
        let kind = match block.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            None => return Err(WireViolation::at(format!("{bpath}.type"), "Field required")),
            Some(_) => {
                return Err(WireViolation::at(
                    format!("{bpath}.type"),
                    "Input should be a valid string",
                ));
            }
        };
        match kind {
            "text" => check_text(block, &bpath)?,
            "tool_use" => {
                if role != "assistant" {
                    return Err(WireViolation::at(
                        bpath,
                        "`tool_use` blocks can only be in `assistant` messages",
                    ));
                }
                let id = match block.get("id") {
                    Some(Value::String(id)) if is_id(id) => id,
                    Some(Value::String(_)) => {
                        return Err(WireViolation::at(
                            format!("{bpath}.id"),
                            "String should match pattern '^[a-zA-Z0-9_-]+$'",
                        ));
                    }
                    None => {
                        return Err(WireViolation::at(format!("{bpath}.id"), "Field required"));
                    }
                    Some(_) => {
                        return Err(WireViolation::at(
                            format!("{bpath}.id"),
                            "Input should be a valid string",
                        ));
                    }
                };
                if !tool_use_ids.insert(id.clone()) {
                    return Err(WireViolation::at(
                        bpath,
                        format!("`tool_use` ids must be unique. Found duplicate id: {id}"),
                    ));
                }
                match block.get("name") {
                    Some(Value::String(_)) => {}
                    None => {
                        return Err(WireViolation::at(format!("{bpath}.name"), "Field required"));
                    }
                    Some(_) => {
                        return Err(WireViolation::at(
                            format!("{bpath}.name"),
                            "Input should be a valid string",
                        ));
                    }
                }
                match block.get("input") {
                    Some(Value::Object(_)) => {}
                    None => {
                        return Err(WireViolation::at(
                            format!("{bpath}.input"),
                            "Field required",
                        ));
                    }
                    Some(_) => {
                        return Err(WireViolation::at(
                            format!("{bpath}.input"),
                            "Input should be a valid dictionary",
                        ));
                    }
                }
            }
            "tool_result" => {
                if role != "user" {
                    return Err(WireViolation::at(
                        bpath,
                        "`tool_result` blocks can only be in `user` messages",
                    ));
                }
                let id = match block.get("tool_use_id") {
                    Some(Value::String(id)) => id.as_str(),
                    None => {
                        return Err(WireViolation::at(
                            format!("{bpath}.tool_use_id"),
                            "Field required",
                        ));
                    }
                    Some(_) => {
                        return Err(WireViolation::at(
                            format!("{bpath}.tool_use_id"),
                            "Input should be a valid string",
                        ));
                    }
                };
                if !previous_uses.contains(&id) {
                    return Err(WireViolation::at(
                        bpath,
                        format!(
                            "unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each \
                             `tool_result` block must have a corresponding `tool_use` block in \
                             the previous message."
                        ),
                    ));
                }
                if let Some(first) = answered.insert(id, j) {
                    return Err(WireViolation::at(
                        bpath,
                        format!(
                            "each `tool_use` must have a single result. Found multiple \
                             `tool_result` blocks with id: {id} (also {path}.content.{first})"
                        ),
                    ));
                }
                if let Some(Value::Array(inner)) = block.get("content") {
                    for (n, nested) in inner.iter().enumerate() {
                        if let Some(nested) = nested.as_object() {
                            breakpoints.visit(nested, &format!("{bpath}.content.{n}"))?;
                        }
                    }
                }
            }
            _ => {}
        }
        breakpoints.visit(block, &bpath)?;
    }
    // Every `tool_use` of an assistant turn is answered at the start of the next message.
    if role == "assistant" && i + 1 < messages.len() {
        let uses = block_ids(message, "tool_use", "id");
        if !uses.is_empty() {
            let next = &messages[i + 1];
            let results: Vec<&str> = if role_of(next) == Some("user") {
                block_ids(next, "tool_result", "tool_use_id")
            } else {
                Vec::new()
            };
            let missing: Vec<&str> = uses
                .iter()
                .copied()
                .filter(|id| !results.contains(id))
                .collect();
            if !missing.is_empty() {
                return Err(WireViolation::at(
                    path,
                    format!(
                        "`tool_use` ids were found without `tool_result` blocks immediately \
                         after: {}. Each `tool_use` block must have a corresponding \
                         `tool_result` block in the next message.",
                        missing.join(", ")
                    ),
                ));
            }
            let leading = block_types(next)
                .iter()
                .take_while(|t| **t == "tool_result")
                .count();
            if leading < uses.len() {
                return Err(WireViolation::at(
                    format!("messages.{}", i + 1),
                    format!(
                        "Did not find {} tool_result block(s) at the beginning of this message. \
                         Messages following tool_use blocks must begin with a matching number \
                         of tool_result blocks.",
                        uses.len()
                    ),
                ));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// OpenAI chat completions
// ---------------------------------------------------------------------------------------------

const OPENAI_ROLES: [&str; 6] = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

/// Checks an OpenAI chat completions request body (`POST …/chat/completions`) against the
/// documented rules.
pub fn check_openai(body: &Value) -> Checked {
    let Some(body) = body.as_object() else {
        return Err(WireViolation::whole(format!(
            "We could not parse the JSON body of your request: expected an object, got {}.",
            type_name(body)
        )));
    };
    let messages = match body.get("messages") {
        None => {
            return Err(WireViolation::at(
                "messages",
                "Missing required parameter: 'messages'.",
            ));
        }
        Some(Value::Array(messages)) => messages,
        Some(other) => {
            return Err(WireViolation::at(
                "messages",
                format!(
                    "Invalid type for 'messages': expected an array of objects, but got {} \
                     instead.",
                    type_name(other)
                ),
            ));
        }
    };
    if messages.is_empty() {
        return Err(WireViolation::at(
            "messages",
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got \
             an empty array instead.",
        ));
    }
    // Ids of the tool calls of the assistant message the current run of tool messages answers,
    // with where each was answered.
    let mut open: Option<(usize, Vec<String>, HashMap<String, usize>)> = None;
    for (i, message) in messages.iter().enumerate() {
        let path = format!("messages.{i}");
        let Some(fields) = message.as_object() else {
            return Err(WireViolation::at(
                path,
                format!(
                    "Invalid type for 'messages[{i}]': expected an object, but got {} instead.",
                    type_name(message)
                ),
            ));
        };
        let role = match fields.get("role") {
            Some(Value::String(role)) if OPENAI_ROLES.contains(&role.as_str()) => role.as_str(),
            None => {
                return Err(WireViolation::at(
                    format!("{path}.role"),
                    format!("Missing required parameter: 'messages[{i}].role'."),
                ));
            }
            Some(other) => {
                return Err(WireViolation::at(
                    format!("{path}.role"),
                    format!(
                        "Invalid value: {other}. Supported values are: 'system', 'assistant', \
                         'user', 'tool', 'function' and 'developer'."
                    ),
                ));
            }
        };
        if role != "tool"
            && let Some((at, ids, answered)) = open.take()
        {
            let missing: Vec<&str> = ids
                .iter()
                .filter(|id| !answered.contains_key(*id))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(unanswered_calls(at, &missing));
            }
        }
        match role {
            "assistant" => {
                let calls = check_openai_tool_calls(fields, &path)?;
                let content = fields.get("content").filter(|c| !c.is_null());
                if content.is_none() && calls.is_none() && !fields.contains_key("function_call") {
                    return Err(WireViolation::at(
                        format!("{path}.content"),
                        format!(
                            "Invalid value for 'messages[{i}].content': expected a string or an \
                             array of content parts, got null. An assistant message may omit \
                             its content only when it has 'tool_calls'."
                        ),
                    ));
                }
                if let Some(ids) = calls {
                    open = Some((i, ids, HashMap::new()));
                }
            }
            "tool" => {
                let id = match fields.get("tool_call_id") {
                    Some(Value::String(id)) => id.as_str(),
                    None => {
                        return Err(WireViolation::at(
                            format!("{path}.tool_call_id"),
                            format!("Missing required parameter: 'messages[{i}].tool_call_id'."),
                        ));
                    }
                    Some(_) => {
                        return Err(WireViolation::at(
                            format!("{path}.tool_call_id"),
                            format!(
                                "Invalid type for 'messages[{i}].tool_call_id': expected a string."
                            ),
                        ));
                    }
                };
                let Some((_, ids, answered)) = open.as_mut() else {
                    return Err(WireViolation::at(
                        format!("{path}.role"),
                        "Invalid parameter: messages with role 'tool' must be a response to a \
                         preceeding message with 'tool_calls'.",
                    ));
                };
                if !ids.iter().any(|known| known == id) {
                    return Err(WireViolation::at(
                        format!("{path}.tool_call_id"),
                        format!(
                            "Invalid parameter: 'tool_call_id' of '{id}' not found in \
                             'tool_calls' of previous message."
                        ),
                    ));
                }
                if let Some(first) = answered.insert(id.to_owned(), i) {
                    return Err(WireViolation::at(
                        format!("{path}.tool_call_id"),
                        format!(
                            "Invalid parameter: 'tool_call_id' of '{id}' was already answered by \
                             messages[{first}]; each tool call takes one tool message."
                        ),
                    ));
                }
                check_openai_content(fields, &path, i)?;
            }
            _ => check_openai_content(fields, &path, i)?,
        }
    }
    if let Some((at, ids, answered)) = open {
        let missing: Vec<&str> = ids
            .iter()
            .filter(|id| !answered.contains_key(*id))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(unanswered_calls(at, &missing));
        }
    }
    if let Some(tools) = body.get("tools") {
        check_openai_tools(tools)?;
    }
    Ok(())
}

fn unanswered_calls(at: usize, missing: &[&str]) -> WireViolation {
    WireViolation::at(
        format!("messages.{at}.role"),
        format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding \
             to each 'tool_call_id'. The following tool_call_ids did not have response messages: \
             {}",
            missing.join(", ")
        ),
    )
}

/// A message's `content` must be there and not null (roles other than assistant).
fn check_openai_content(fields: &Map<String, Value>, path: &str, i: usize) -> Checked {
    match fields.get("content") {
        None => Err(WireViolation::at(
            format!("{path}.content"),
            format!("Missing required parameter: 'messages[{i}].content'."),
        )),
        Some(Value::String(_)) | Some(Value::Array(_)) => Ok(()),
        Some(other) => Err(WireViolation::at(
            format!("{path}.content"),
            format!(
                "Invalid type for 'messages[{i}].content': expected one of a string or array of \
                 objects, but got {} instead.",
                type_name(other)
            ),
        )),
    }
}

/// The ids of an assistant message's `tool_calls` (`None` without any), after checking each.
fn check_openai_tool_calls(
    fields: &Map<String, Value>,
    path: &str,
) -> Checked<Option<Vec<String>>> {
    let calls = match fields.get("tool_calls") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(calls)) => calls,
        Some(other) => {
            return Err(WireViolation::at(
                format!("{path}.tool_calls"),
                format!(
                    "Invalid type for '{path}.tool_calls': expected an array, but got {} instead.",
                    type_name(other)
                ),
            ));
        }
    };
    if calls.is_empty() {
        return Err(WireViolation::at(
            format!("{path}.tool_calls"),
            "Invalid 'tool_calls': empty array. Expected an array with minimum length 1, but got \
             an empty array instead.",
        ));
    }
    let mut ids = Vec::new();
    for (k, call) in calls.iter().enumerate() {
        let cpath = format!("{path}.tool_calls.{k}");
        let Some(call) = call.as_object() else {
            return Err(WireViolation::at(
                cpath,
                "Invalid type: expected an object.",
            ));
        };
        let id = match call.get("id") {
            Some(Value::String(id)) => id.clone(),
            None => {
                return Err(WireViolation::at(
                    format!("{cpath}.id"),
                    "Missing required parameter: 'id'.",
                ));
            }
            Some(_) => {
                return Err(WireViolation::at(
                    format!("{cpath}.id"),
                    "Invalid type for 'id': expected a string.",
                ));
            }
        };
        // `custom` calls answer the documented custom (free-form) tools.
        let (kind, fields) = match call.get("type").and_then(Value::as_str) {
            Some("function") => ("function", ["name", "arguments"]),
            Some("custom") => ("custom", ["name", "input"]),
            Some(other) => {
                return Err(WireViolation::at(
                    format!("{cpath}.type"),
                    format!(
                        "Invalid value: '{other}'. Supported values are: 'function' and 'custom'."
                    ),
                ));
            }
            None => {
                return Err(WireViolation::at(
                    format!("{cpath}.type"),
                    "Missing required parameter: 'type'.",
                ));
            }
        };
        let Some(inner) = call.get(kind).and_then(Value::as_object) else {
            return Err(WireViolation::at(
                format!("{cpath}.{kind}"),
                format!("Missing required parameter: '{kind}'."),
            ));
        };
        for field in fields {
            if !inner.get(field).is_some_and(Value::is_string) {
                return Err(WireViolation::at(
                    format!("{cpath}.{kind}.{field}"),
                    format!("Invalid type for '{kind}.{field}': expected a string."),
                ));
            }
        }
        ids.push(id);
    }
    Ok(Some(ids))
}

fn check_openai_tools(tools: &Value) -> Checked {
    let Some(tools) = tools.as_array() else {
        return Err(WireViolation::at(
            "tools",
            format!(
                "Invalid type for 'tools': expected an array, but got {} instead.",
                type_name(tools)
            ),
        ));
    };
    for (k, tool) in tools.iter().enumerate() {
        let path = format!("tools.{k}");
        let Some(tool) = tool.as_object() else {
            return Err(WireViolation::at(path, "Invalid type: expected an object."));
        };
        let kind = match tool.get("type").and_then(Value::as_str) {
            Some(kind @ ("function" | "custom")) => kind,
            Some(other) => {
                return Err(WireViolation::at(
                    format!("{path}.type"),
                    format!(
                        "Invalid value: '{other}'. Supported values are: 'function' and 'custom'."
                    ),
                ));
            }
            None => {
                return Err(WireViolation::at(
                    format!("{path}.type"),
                    "Missing required parameter: 'tools[].type'.",
                ));
            }
        };
        let Some(inner) = tool.get(kind).and_then(Value::as_object) else {
            return Err(WireViolation::at(
                format!("{path}.{kind}"),
                format!("Missing required parameter: 'tools[{k}].{kind}'."),
            ));
        };
        let name_path = format!("{path}.{kind}.name");
        match inner.get("name") {
            Some(Value::String(name)) if is_tool_name(name) => {}
            Some(Value::String(name)) if name.len() > 64 => {
                return Err(WireViolation::at(
                    name_path,
                    format!(
                        "Invalid 'tools[{k}].{kind}.name': string too long. Expected a string \
                         with maximum length 64, but got a string with length {} instead.",
                        name.len()
                    ),
                ));
            }
            Some(Value::String(_)) => {
                return Err(WireViolation::at(
                    name_path,
                    format!(
                        "Invalid 'tools[{k}].{kind}.name': string does not match pattern. \
                         Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
                    ),
                ));
            }
            None => {
                return Err(WireViolation::at(
                    name_path,
                    format!("Missing required parameter: 'tools[{k}].{kind}.name'."),
                ));
            }
            Some(_) => {
                return Err(WireViolation::at(
                    name_path,
                    format!("Invalid type for 'tools[{k}].{kind}.name': expected a string."),
                ));
            }
        }
        if kind == "function"
            && let Some(parameters) = inner.get("parameters")
            && !parameters.is_object()
        {
            return Err(WireViolation::at(
                format!("{path}.function.parameters"),
                format!(
                    "Invalid type for 'tools[{k}].function.parameters': expected an object, but \
                     got {} instead.",
                    type_name(parameters)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn anthropic(messages: Value) -> Value {
        json!({ "model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages })
    }

    fn with(mut body: Value, key: &str, value: Value) -> Value {
        body[key] = value;
        body
    }

    fn tool_use(id: &str) -> Value {
        json!({ "type": "tool_use", "id": id, "name": "bash", "input": { "command": "ls" } })
    }

    fn tool_result(id: &str) -> Value {
        json!({ "type": "tool_result", "tool_use_id": id, "content": "ok" })
    }

    /// The refusal of `body`, asserting its param and that its message holds `fragment`.
    fn refused(result: Checked, param: Option<&str>, fragment: &str) -> WireViolation {
        let violation = match result {
            Ok(()) => panic!("accepted, expected a refusal holding {fragment:?}"),
            Err(v) => v,
        };
        assert_eq!(violation.param.as_deref(), param, "{violation}");
        assert!(
            violation.message.contains(fragment),
            "{violation:?} does not hold {fragment:?}"
        );
        violation
    }

    fn accepted(result: Checked) {
        if let Err(v) = result {
            panic!("refused: {v}");
        }
    }

    // --- Anthropic: accepted ---

    #[test]
    fn anthropic_accepts_a_plain_prompt() {
        accepted(check_anthropic(&anthropic(
            json!([{ "role": "user", "content": "hi" }]),
        )));
    }

    #[test]
    fn anthropic_accepts_a_tool_round_trip_with_parallel_calls() {
        let body = anthropic(json!([
            { "role": "user", "content": "list and count" },
            { "role": "assistant", "content": [
                { "type": "text", "text": "Running both." },
                tool_use("toolu_01"), tool_use("toolu_02"),
            ]},
            { "role": "user", "content": [
                tool_result("toolu_02"), tool_result("toolu_01"),
                { "type": "text", "text": "and then?" },
            ]},
            { "role": "assistant", "content": "Done." },
        ]));
        accepted(check_anthropic(&body));
    }

    #[test]
    fn anthropic_accepts_what_a_coding_cli_sends() {
        let body = json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 32000,
            "stream": true,
            "metadata": { "user_id": "user_abc" },
            "thinking": { "type": "enabled", "budget_tokens": 2048 },
            "system": [
                { "type": "text", "text": "You are Claude Code.", "cache_control": { "type": "ephemeral", "ttl": "1h" } },
                { "type": "text", "text": "Be brief." },
            ],
            "tools": [
                { "name": "Bash", "description": "run", "input_schema": { "type": "object", "properties": {} } },
                { "type": "custom", "name": "Read", "input_schema": { "type": "object" }, "cache_control": { "type": "ephemeral", "ttl": "1h" } },
                { "type": "web_search_20250305", "name": "web_search", "max_uses": 5 },
            ],
            "messages": [
                { "role": "user", "content": [
                    { "type": "text", "text": "<system-reminder>x</system-reminder>" },
                    { "type": "text", "text": "do it", "cache_control": { "type": "ephemeral" } },
                ]},
                { "role": "assistant", "content": [
                    { "type": "thinking", "thinking": "hmm", "signature": "sig" },
                    { "type": "redacted_thinking", "data": "abc" },
                    { "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": { "query": "q" } },
                    { "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [] },
                    { "type": "some_future_block", "anything": 1 },
                    tool_use("toolu_01"),
                ]},
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "toolu_01", "is_error": true,
                      "content": [{ "type": "text", "text": "failed", "cache_control": { "type": "ephemeral", "ttl": "5m" } }] },
                    { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "AA==" } },
                ]},
            ],
        });
        accepted(check_anthropic(&body));
    }

    #[test]
    fn anthropic_accepts_what_the_reference_says_is_combined_or_allowed() {
        // Consecutive turns are combined; the first may be the assistant's.
        accepted(check_anthropic(&anthropic(json!([
            { "role": "assistant", "content": "Hello, how can I help?" },
            { "role": "user", "content": "one" },
            { "role": "user", "content": "two" },
        ]))));
        // An empty final assistant message (prefill), and max_tokens 0 (cache pre-warming).
        accepted(check_anthropic(&with(
            anthropic(
                json!([{ "role": "user", "content": "hi" }, { "role": "assistant", "content": "" }]),
            ),
            "max_tokens",
            json!(0),
        )));
        // The final assistant message may end in an unanswered call.
        accepted(check_anthropic(&anthropic(json!([
            { "role": "user", "content": "hi" },
            { "role": "assistant", "content": [tool_use("toolu_1")] },
        ]))));
        // System as a plain string, top-level automatic cache control.
        accepted(check_anthropic(&with(
            with(
                anthropic(json!([{ "role": "user", "content": "hi" }])),
                "system",
                json!("sys"),
            ),
            "cache_control",
            json!({ "type": "ephemeral" }),
        )));
    }

    // --- Anthropic: the request itself ---

    #[test]
    fn anthropic_refuses_a_missing_or_bad_model_and_max_tokens() {
        let ok = anthropic(json!([{ "role": "user", "content": "hi" }]));
        refused(check_anthropic(&json!([1])), None, "JSON object");
        let mut no_model = ok.clone();
        no_model.as_object_mut().unwrap().remove("model");
        refused(check_anthropic(&no_model), Some("model"), "Field required");
        refused(
            check_anthropic(&with(ok.clone(), "model", json!(""))),
            Some("model"),
            "at least 1",
        );
        refused(
            check_anthropic(&with(ok.clone(), "model", json!(3))),
            Some("model"),
            "string",
        );
        let mut no_max = ok.clone();
        no_max.as_object_mut().unwrap().remove("max_tokens");
        refused(
            check_anthropic(&no_max),
            Some("max_tokens"),
            "Field required",
        );
        refused(
            check_anthropic(&with(ok.clone(), "max_tokens", json!(-1))),
            Some("max_tokens"),
            "greater than or equal to 0",
        );
        refused(
            check_anthropic(&with(ok.clone(), "max_tokens", json!(1.5))),
            Some("max_tokens"),
            "valid integer",
        );
        refused(
            check_anthropic(&with(ok, "max_tokens", json!("10"))),
            Some("max_tokens"),
            "valid integer",
        );
    }

    #[test]
    fn anthropic_refuses_missing_empty_or_malformed_messages() {
        let mut none = anthropic(json!([]));
        none.as_object_mut().unwrap().remove("messages");
        refused(check_anthropic(&none), Some("messages"), "Field required");
        refused(
            check_anthropic(&anthropic(json!({}))),
            Some("messages"),
            "valid list",
        );
        refused(
            check_anthropic(&anthropic(json!([]))),
            Some("messages"),
            "at least one message",
        );
        refused(
            check_anthropic(&anthropic(json!(["hi"]))),
            Some("messages.0"),
            "dictionary",
        );
        refused(
            check_anthropic(&anthropic(json!([{ "role": "system", "content": "hi" }]))),
            Some("messages.0.role"),
            "'user' or 'assistant'",
        );
        refused(
            check_anthropic(&anthropic(json!([{ "content": "hi" }]))),
            Some("messages.0.role"),
            "Field required",
        );
        refused(
            check_anthropic(&anthropic(json!([{ "role": "user" }]))),
            Some("messages.0.content"),
            "Field required",
        );
        refused(
            check_anthropic(&anthropic(json!([{ "role": "user", "content": 5 }]))),
            Some("messages.0.content"),
            "valid string",
        );
    }

    #[test]
    fn anthropic_refuses_empty_content_except_in_a_final_assistant_message() {
        for content in [json!(""), json!([])] {
            refused(
                check_anthropic(&anthropic(json!([{ "role": "user", "content": content }]))),
                Some("messages.0"),
                "non-empty content except for the optional final assistant message",
            );
            refused(
                check_anthropic(&anthropic(json!([
                    { "role": "user", "content": "a" },
                    { "role": "assistant", "content": content },
                    { "role": "user", "content": "b" },
                ]))),
                Some("messages.1"),
                "non-empty content",
            );
        }
    }

    #[test]
    fn anthropic_refuses_empty_or_blank_text() {
        refused(
            check_anthropic(&anthropic(json!([{ "role": "user", "content": "  \n" }]))),
            Some("messages.0.content"),
            "non-whitespace text",
        );
        refused(
            check_anthropic(&anthropic(
                json!([{ "role": "user", "content": [{ "type": "text", "text": "" }] }]),
            )),
            Some("messages.0.content.0.text"),
            "must be non-empty",
        );
        refused(
            check_anthropic(&anthropic(json!([{ "role": "user", "content": [
                { "type": "text", "text": "ok" }, { "type": "text", "text": " \t" },
            ]}]))),
            Some("messages.0.content.1.text"),
            "non-whitespace text",
        );
        refused(
            check_anthropic(&anthropic(
                json!([{ "role": "user", "content": [{ "type": "text" }] }]),
            )),
            Some("messages.0.content.0.text"),
            "Field required",
        );
        refused(
            check_anthropic(&anthropic(
                json!([{ "role": "user", "content": [{ "text": "x" }] }]),
            )),
            Some("messages.0.content.0.type"),
            "Field required",
        );
    }

    // --- Anthropic: tool_use ---

    #[test]
    fn anthropic_refuses_tool_use_outside_assistant_messages() {
        let v = refused(
            check_anthropic(&anthropic(
                json!([{ "role": "user", "content": [tool_use("toolu_1")] }]),
            )),
            Some("messages.0.content.0"),
            "`tool_use` blocks can only be in `assistant` messages",
        );
        assert!(v.to_string().starts_with("messages.0.content.0: "), "{v}");
        // Two user messages, one carrying a tool_use: the combining does not make it legal.
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "run ls" },
                { "role": "user", "content": [{ "type": "text", "text": "calling" }, tool_use("toolu_1")] },
            ]))),
            Some("messages.1.content.1"),
            "only be in `assistant` messages",
        );
    }

    #[test]
    fn anthropic_refuses_bad_or_duplicate_tool_use_ids_and_non_object_input() {
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [tool_use("call 1")] },
            ]))),
            Some("messages.1.content.0.id"),
            "^[a-zA-Z0-9_-]+$",
        );
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [tool_use("toolu_1")] },
                { "role": "user", "content": [tool_result("toolu_1")] },
                { "role": "assistant", "content": [tool_use("toolu_1")] },
            ]))),
            Some("messages.3.content.0"),
            "ids must be unique",
        );
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [{ "type": "tool_use", "id": "toolu_1", "name": "bash", "input": "ls" }] },
            ]))),
            Some("messages.1.content.0.input"),
            "valid dictionary",
        );
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [{ "type": "tool_use", "id": "toolu_1", "input": {} }] },
            ]))),
            Some("messages.1.content.0.name"),
            "Field required",
        );
    }

    #[test]
    fn anthropic_refuses_an_unanswered_tool_use() {
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [tool_use("toolu_1"), tool_use("toolu_2")] },
                { "role": "user", "content": [tool_result("toolu_1")] },
            ]))),
            Some("messages.1"),
            "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_2. \
             Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        );
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [tool_use("toolu_1")] },
                { "role": "user", "content": "what happened?" },
            ]))),
            Some("messages.1"),
            "immediately after: toolu_1.",
        );
        // Answered two messages later is not answered.
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [tool_use("toolu_1")] },
                { "role": "assistant", "content": "still there?" },
                { "role": "user", "content": [tool_result("toolu_1")] },
            ]))),
            Some("messages.1"),
            "immediately after: toolu_1.",
        );
    }

    // --- Anthropic: tool_result ---

    #[test]
    fn anthropic_refuses_a_result_without_its_call_in_the_previous_message() {
        let v = refused(
            check_anthropic(&anthropic(
                json!([{ "role": "user", "content": [tool_result("toolu_x")] }]),
            )),
            Some("messages.0.content.0"),
            "unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. Each `tool_result` \
             block must have a corresponding `tool_use` block in the previous message.",
        );
        assert!(
            v.to_string()
                .starts_with("messages.0.content.0: unexpected")
        );
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [tool_use("toolu_1")] },
                { "role": "user", "content": [tool_result("toolu_1")] },
                { "role": "assistant", "content": "done" },
                { "role": "user", "content": [tool_result("toolu_1")] },
            ]))),
            Some("messages.4.content.0"),
            "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1.",
        );
    }

    #[test]
    fn anthropic_refuses_results_in_assistant_messages_twice_or_after_other_blocks() {
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [tool_result("toolu_1")] },
            ]))),
            Some("messages.1.content.0"),
            "can only be in `user` messages",
        );
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [tool_use("toolu_1")] },
                { "role": "user", "content": [tool_result("toolu_1"), tool_result("toolu_1")] },
            ]))),
            Some("messages.2.content.1"),
            "single result",
        );
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [tool_use("toolu_1")] },
                { "role": "user", "content": [{ "type": "text", "text": "here:" }, tool_result("toolu_1")] },
            ]))),
            Some("messages.2"),
            "Did not find 1 tool_result block(s) at the beginning of this message. Messages \
             following tool_use blocks must begin with a matching number of tool_result blocks.",
        );
        refused(
            check_anthropic(&anthropic(json!([
                { "role": "user", "content": [{ "type": "tool_result", "content": "x" }] },
            ]))),
            Some("messages.0.content.0.tool_use_id"),
            "Field required",
        );
    }

    // --- Anthropic: system and tools ---

    #[test]
    fn anthropic_refuses_a_malformed_system() {
        let ok = anthropic(json!([{ "role": "user", "content": "hi" }]));
        refused(
            check_anthropic(&with(ok.clone(), "system", json!(5))),
            Some("system"),
            "valid string",
        );
        refused(
            check_anthropic(&with(
                ok.clone(),
                "system",
                json!([{ "type": "image", "source": {} }]),
            )),
            Some("system.0.type"),
            "'text'",
        );
        refused(
            check_anthropic(&with(
                ok.clone(),
                "system",
                json!([{ "type": "text", "text": "" }]),
            )),
            Some("system.0.text"),
            "non-empty",
        );
        refused(
            check_anthropic(&with(ok, "system", json!(["text"]))),
            Some("system.0"),
            "dictionary",
        );
    }

    #[test]
    fn anthropic_refuses_malformed_custom_tools() {
        let ok = anthropic(json!([{ "role": "user", "content": "hi" }]));
        let schema = json!({ "type": "object" });
        refused(
            check_anthropic(&with(
                ok.clone(),
                "tools",
                json!([{ "name": "run shell", "input_schema": schema }]),
            )),
            Some("tools.0.custom.name"),
            "^[a-zA-Z0-9_-]{1,64}$",
        );
        refused(
            check_anthropic(&with(
                ok.clone(),
                "tools",
                json!([{ "name": "a".repeat(65), "input_schema": schema }]),
            )),
            Some("tools.0.custom.name"),
            "pattern",
        );
        accepted(check_anthropic(&with(
            ok.clone(),
            "tools",
            json!([{ "name": "a".repeat(64), "input_schema": schema }]),
        )));
        refused(
            check_anthropic(&with(
                ok.clone(),
                "tools",
                json!([{ "name": "x", "input_schema": schema }, { "type": "custom", "name": "x", "input_schema": schema }]),
            )),
            Some("tools"),
            "Tool names must be unique",
        );
        refused(
            check_anthropic(&with(ok.clone(), "tools", json!([{ "name": "x" }]))),
            Some("tools.0.custom.input_schema"),
            "Field required",
        );
        refused(
            check_anthropic(&with(
                ok.clone(),
                "tools",
                json!([{ "name": "x", "input_schema": { "type": "string" } }]),
            )),
            Some("tools.0.custom.input_schema.type"),
            "'object'",
        );
        refused(
            check_anthropic(&with(
                ok.clone(),
                "tools",
                json!([{ "name": "x", "input_schema": { "properties": {} } }]),
            )),
            Some("tools.0.custom.input_schema.type"),
            "Field required",
        );
        refused(
            check_anthropic(&with(ok.clone(), "tools", json!({}))),
            Some("tools"),
            "valid list",
        );
        // A server tool needs no input_schema, and its name counts for uniqueness.
        accepted(check_anthropic(&with(
            ok.clone(),
            "tools",
            json!([{ "type": "bash_20250124", "name": "bash" }]),
        )));
        refused(
            check_anthropic(&with(
                ok,
                "tools",
                json!([{ "type": "bash_20250124", "name": "bash" }, { "name": "bash", "input_schema": schema }]),
            )),
            Some("tools"),
            "unique",
        );
    }

    // --- Anthropic: cache_control ---

    fn cached(text: &str, ttl: Option<&str>) -> Value {
        let mut cache = json!({ "type": "ephemeral" });
        if let Some(ttl) = ttl {
            cache["ttl"] = json!(ttl);
        }
        json!({ "type": "text", "text": text, "cache_control": cache })
    }

    #[test]
    fn anthropic_refuses_more_than_four_cache_breakpoints() {
        let four = with(
            anthropic(
                json!([{ "role": "user", "content": [cached("a", None), cached("b", None)] }]),
            ),
            "system",
            json!([cached("s1", None), cached("s2", None)]),
        );
        accepted(check_anthropic(&four));
        let five = with(
            four,
            "tools",
            json!([{ "name": "x", "input_schema": { "type": "object" }, "cache_control": { "type": "ephemeral" } }]),
        );
        refused(
            check_anthropic(&five),
            None,
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        );
    }

    #[test]
    fn anthropic_refuses_a_malformed_cache_control() {
        refused(
            check_anthropic(&anthropic(json!([{ "role": "user", "content": [
                { "type": "text", "text": "a", "cache_control": { "type": "persistent" } },
            ]}]))),
            Some("messages.0.content.0.cache_control.type"),
            "'ephemeral'",
        );
        refused(
            check_anthropic(&anthropic(
                json!([{ "role": "user", "content": [cached("a", Some("10m"))] }]),
            )),
            Some("messages.0.content.0.cache_control.ttl"),
            "'5m' or '1h'",
        );
        refused(
            check_anthropic(&with(
                anthropic(json!([{ "role": "user", "content": "hi" }])),
                "cache_control",
                json!({ "type": "ephemeral", "ttl": "2h" }),
            )),
            Some("cache_control.ttl"),
            "'5m' or '1h'",
        );
    }

    #[test]
    fn anthropic_refuses_a_one_hour_breakpoint_after_a_five_minute_one() {
        // tools (default 5m) are processed before system (1h).
        let body = with(
            with(
                anthropic(json!([{ "role": "user", "content": "hi" }])),
                "tools",
                json!([{ "name": "x", "input_schema": { "type": "object" }, "cache_control": { "type": "ephemeral" } }]),
            ),
            "system",
            json!([cached("sys", Some("1h"))]),
        );
        refused(
            check_anthropic(&body),
            Some("system.0.cache_control.ttl"),
            "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. \
             Note that blocks are processed in the following order: `tools`, `system`, `messages`.",
        );
        refused(
            check_anthropic(&anthropic(
                json!([{ "role": "user", "content": [cached("a", Some("5m")), cached("b", Some("1h"))] }]),
            )),
            Some("messages.0.content.1.cache_control.ttl"),
            "ttl='1h'",
        );
        // 1h before 5m is the documented order.
        accepted(check_anthropic(&with(
            anthropic(json!([{ "role": "user", "content": [cached("a", None)] }])),
            "system",
            json!([cached("sys", Some("1h"))]),
        )));
    }

    // --- OpenAI ---

    fn openai(messages: Value) -> Value {
        json!({ "model": "gpt-4o", "messages": messages })
    }

    fn call(id: &str) -> Value {
        json!({ "id": id, "type": "function", "function": { "name": "bash", "arguments": "{\"command\":\"ls\"}" } })
    }

    fn answer(id: &str) -> Value {
        json!({ "role": "tool", "tool_call_id": id, "content": "ok" })
    }

    #[test]
    fn openai_accepts_a_tool_round_trip_and_every_role() {
        let body = json!({
            "model": "gpt-4o",
            "stream": true,
            "stream_options": { "include_usage": true },
            "messages": [
                { "role": "system", "content": "sys" },
                { "role": "developer", "content": [{ "type": "text", "text": "dev" }] },
                { "role": "user", "content": "list" },
                { "role": "assistant", "content": null, "tool_calls": [call("call_1"), call("call_2")] },
                answer("call_2"),
                answer("call_1"),
                { "role": "assistant", "tool_calls": [
                    { "id": "call_3", "type": "custom", "custom": { "name": "apply_patch", "input": "*** Begin Patch" } },
                ]},
                answer("call_3"),
                { "role": "assistant", "content": "", "function_call": { "name": "f", "arguments": "{}" } },
                { "role": "function", "name": "f", "content": "result" },
                { "role": "assistant", "content": "done" },
                { "role": "user", "content": "" },
            ],
            "tools": [
                { "type": "function", "function": { "name": "bash", "parameters": { "type": "object" } } },
                { "type": "function", "function": { "name": "noargs" } },
                { "type": "custom", "custom": { "name": "apply_patch" } },
            ],
        });
        accepted(check_openai(&body));
        // Legacy: an assistant message with a function_call may have null content.
        accepted(check_openai(&openai(json!([
            { "role": "user", "content": "hi" },
            { "role": "assistant", "content": null, "function_call": { "name": "f", "arguments": "{}" } },
        ]))));
    }

    #[test]
    fn openai_refuses_missing_or_empty_messages_and_unknown_roles() {
        refused(check_openai(&json!("x")), None, "expected an object");
        refused(
            check_openai(&json!({ "model": "m" })),
            Some("messages"),
            "Missing required parameter: 'messages'.",
        );
        refused(
            check_openai(&openai(json!("hi"))),
            Some("messages"),
            "expected an array",
        );
        refused(
            check_openai(&openai(json!([]))),
            Some("messages"),
            "empty array",
        );
        refused(
            check_openai(&openai(json!([{ "role": "model", "content": "x" }]))),
            Some("messages.0.role"),
            "Supported values are",
        );
        refused(
            check_openai(&openai(json!([{ "content": "x" }]))),
            Some("messages.0.role"),
            "Missing required parameter",
        );
        refused(
            check_openai(&openai(json!([7]))),
            Some("messages.0"),
            "expected an object",
        );
    }

    #[test]
    fn openai_refuses_unanswered_tool_calls() {
        let v = refused(
            check_openai(&openai(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": null, "tool_calls": [call("call_1"), call("call_2")] },
                answer("call_1"),
                { "role": "user", "content": "and?" },
            ]))),
            Some("messages.1.role"),
            "An assistant message with 'tool_calls' must be followed by tool messages responding to \
             each 'tool_call_id'. The following tool_call_ids did not have response messages: call_2",
        );
        assert!(!v.message.starts_with("messages"));
        // At the end of the conversation too.
        refused(
            check_openai(&openai(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "tool_calls": [call("call_1")] },
            ]))),
            Some("messages.1.role"),
            "did not have response messages: call_1",
        );
        // An answer after another role is too late.
        refused(
            check_openai(&openai(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "tool_calls": [call("call_1")] },
                { "role": "user", "content": "wait" },
                answer("call_1"),
            ]))),
            Some("messages.1.role"),
            "call_1",
        );
    }

    #[test]
    fn openai_refuses_answers_without_their_call_or_answered_twice() {
        refused(
            check_openai(&openai(
                json!([{ "role": "user", "content": "hi" }, answer("call_1")]),
            )),
            Some("messages.1.role"),
            "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
        );
        refused(
            check_openai(&openai(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "tool_calls": [call("call_1")] },
                answer("call_9"),
            ]))),
            Some("messages.2.tool_call_id"),
            "'call_9' not found",
        );
        refused(
            check_openai(&openai(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "tool_calls": [call("call_1")] },
                answer("call_1"),
                answer("call_1"),
            ]))),
            Some("messages.3.tool_call_id"),
            "already answered by messages[2]",
        );
        refused(
            check_openai(&openai(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "tool_calls": [call("call_1")] },
                { "role": "tool", "content": "ok" },
            ]))),
            Some("messages.2.tool_call_id"),
            "Missing required parameter",
        );
    }

    #[test]
    fn openai_refuses_null_content_without_tool_calls() {
        refused(
            check_openai(&openai(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": null },
            ]))),
            Some("messages.1.content"),
            "only when it has 'tool_calls'",
        );
        refused(
            check_openai(&openai(json!([{ "role": "user", "content": null }]))),
            Some("messages.0.content"),
            "got null instead",
        );
        refused(
            check_openai(&openai(json!([{ "role": "system" }]))),
            Some("messages.0.content"),
            "Missing required parameter",
        );
    }

    #[test]
    fn openai_refuses_malformed_tool_calls() {
        let assistant = |calls: Value| {
            openai(json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "tool_calls": calls },
                answer("call_1"),
            ]))
        };
        refused(
            check_openai(&assistant(
                json!([{ "id": "call_1", "type": "tool", "function": { "name": "f", "arguments": "{}" } }]),
            )),
            Some("messages.1.tool_calls.0.type"),
            "'function'",
        );
        refused(
            check_openai(&assistant(
                json!([{ "id": "call_1", "type": "function", "function": { "name": "f", "arguments": {} } }]),
            )),
            Some("messages.1.tool_calls.0.function.arguments"),
            "expected a string",
        );
        refused(
            check_openai(&assistant(
                json!([{ "id": "call_1", "type": "function", "function": { "arguments": "{}" } }]),
            )),
            Some("messages.1.tool_calls.0.function.name"),
            "expected a string",
        );
        refused(
            check_openai(&assistant(
                json!([{ "type": "function", "function": { "name": "f", "arguments": "{}" } }]),
            )),
            Some("messages.1.tool_calls.0.id"),
            "Missing required parameter",
        );
        refused(
            check_openai(&assistant(json!([]))),
            Some("messages.1.tool_calls"),
            "empty array",
        );
    }

    #[test]
    fn openai_refuses_malformed_tools() {
        let ok = openai(json!([{ "role": "user", "content": "hi" }]));
        refused(
            check_openai(&with(ok.clone(), "tools", json!([{ "type": "retrieval" }]))),
            Some("tools.0.type"),
            "Supported values",
        );
        refused(
            check_openai(&with(
                ok.clone(),
                "tools",
                json!([{ "type": "function", "function": { "name": "read file" } }]),
            )),
            Some("tools.0.function.name"),
            "does not match pattern",
        );
        refused(
            check_openai(&with(
                ok.clone(),
                "tools",
                json!([{ "type": "function", "function": { "name": "a".repeat(65) } }]),
            )),
            Some("tools.0.function.name"),
            "maximum length 64",
        );
        refused(
            check_openai(&with(
                ok.clone(),
                "tools",
                json!([{ "type": "function", "function": { "name": "f", "parameters": "{}" } }]),
            )),
            Some("tools.0.function.parameters"),
            "expected an object",
        );
        refused(
            check_openai(&with(ok.clone(), "tools", json!([{ "type": "function" }]))),
            Some("tools.0.function"),
            "Missing required parameter",
        );
        refused(
            check_openai(&with(ok, "tools", json!({}))),
            Some("tools"),
            "expected an array",
        );
    }
}
