//! Prompt caching: what each wire is asked to keep between the turns of an agent.
//!
//! An agent's requests repeat each other: every turn sends the same tools and system prompt and
//! the whole conversation so far, then a little more. The providers can serve a repeated prefix
//! from a cache at a tenth of the input price, but each wire asks for it differently:
//!
//! - **Anthropic** caches a prefix only up to a block marked `cache_control` (a breakpoint): at
//!   most four per request, read in the order tools → system → messages, and only when the
//!   prefix up to the mark reaches the model's minimum cacheable length. [`mark_anthropic`] marks
//!   the last tool (the tools are the head every request of every agent with those tools
//!   shares), the system text (with the tools, the head of every request of one agent), the end
//!   of the conversation (the moving breakpoint: it writes what the next turn will read) and the
//!   end of the conversation as the previous request sent it (so that turn's cache entry is read
//!   even when the last turn added more blocks than the API's 20-block lookback reaches).
//! - **OpenAI** caches automatically and routes by a hash of the prefix; a `prompt_cache_key`
//!   ([`prompt_cache_key`]) keeps one agent's conversation on the machines that hold its cache.
//!   Only OpenAI's own API is known to take it: a local server may refuse a parameter it does
//!   not know, so it is sent only where the provider's settings say so.
//! - **llama.cpp's server** keeps the previous request's KV cache when asked with
//!   `cache_prompt: true` (its default in recent builds; older ones need it sent).
//!
//! Lengths are estimated from bytes, never tokenized: see [`BYTES_PER_TOKEN`].

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What an Anthropic-kind provider is asked to cache (`[providers.NAME] cache`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PromptCache {
    /// Breakpoints that live five minutes after their last use (writes cost 1.25 × input).
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// Breakpoints that live an hour (writes cost 2 × input): for runs whose turns are often
    /// more than five minutes apart (long test runs, slow local tools).
    #[serde(rename = "1h")]
    OneHour,
    /// No breakpoint: every request pays the full input price.
    #[serde(rename = "off")]
    Off,
}

impl PromptCache {
    /// The spelling in `baton.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptCache::FiveMinutes => "5m",
            PromptCache::OneHour => "1h",
            PromptCache::Off => "off",
        }
    }

    /// The `cache_control` object of a breakpoint (`None`: caching is off). Five minutes is the
    /// API's default, so only the hour is spelled out.
    fn control(self) -> Option<Value> {
        match self {
            PromptCache::FiveMinutes => Some(json!({"type": "ephemeral"})),
            PromptCache::OneHour => Some(json!({"type": "ephemeral", "ttl": "1h"})),
            PromptCache::Off => None,
        }
    }
}

/// Bytes counted as one token when a prefix's length is estimated. English prose and code run
/// at about four bytes a token; JSON, code and non-English text have more tokens per byte, so
/// the estimate errs low: a breakpoint may be left out where it would just have qualified, and
/// is rarely placed where the prefix is too short (which costs nothing but a mark: the API then
/// caches nothing, without an error).
pub const BYTES_PER_TOKEN: usize = 4;

/// Anthropic's documented minimum cacheable prompt length, by model id prefix, most specific
/// first. Where sources disagree (Sonnet 4.6 is documented at 1024 and observed to cache only
/// from 2048; Opus 4.7 is given as 2048 or 4096) the larger is used.
const MIN_CACHEABLE_TOKENS: &[(&str, usize)] = &[
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-7", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
    ("claude-opus-4", 1024),
    ("claude-sonnet-4", 1024),
    ("claude-3-7-sonnet", 1024),
    ("claude-3-5-sonnet", 1024),
    ("claude-3-opus", 1024),
];

/// The minimum for a model baton does not know: the largest documented one, so no breakpoint
/// is spent on a prefix no documented model would cache.
const UNKNOWN_MIN_CACHEABLE_TOKENS: usize = 4096;

/// The minimum cacheable prompt length of `model`, in tokens (a gateway's
/// `anthropic/claude-sonnet-4-5` is read as `claude-sonnet-4-5`).
pub fn min_cacheable_tokens(model: &str) -> usize {
    let id = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    MIN_CACHEABLE_TOKENS
        .iter()
        .find(|(prefix, _)| id.starts_with(prefix))
        .map_or(UNKNOWN_MIN_CACHEABLE_TOKENS, |(_, tokens)| *tokens)
}

/// Counts the bytes a value serializes to, without keeping them.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn bytes(value: &Value) -> usize {
    let mut count = Count(0);
    // Writing a `Value` into a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Puts `cache` breakpoints into a Messages request `body` (as `anthropic::request_body` builds
/// it: `system` a list of text blocks, every message's content a list of blocks), on the last
/// tool, the last system block, the last block of the message that ended the previous request
/// (three messages back: that user turn, the model's answer, the new user turn) and the last
/// block of the last message — each only when the prefix up to it, tools first, reaches the
/// model's minimum cacheable length. Four at most, in the API's order.
pub fn mark_anthropic(body: &mut Value, cache: PromptCache) {
    let Some(control) = cache.control() else {
        return;
    };
    let min_bytes =
        min_cacheable_tokens(body["model"].as_str().unwrap_or("")).saturating_mul(BYTES_PER_TOKEN);
    // (JSON pointer of a block, bytes of the prompt up to and including it)
    let mut spots: Vec<(String, usize)> = Vec::with_capacity(4);
    let mut prefix = 0;
    let last_of = |list: &Value| list.as_array().and_then(|l| l.len().checked_sub(1));
    if let Some(last) = last_of(&body["tools"]) {
        prefix += body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(bytes)
            .sum::<usize>();
        spots.push((format!("/tools/{last}"), prefix));
    }
    if let Some(last) = last_of(&body["system"]) {
        prefix += body["system"]
            .as_array()
            .into_iter()
            .flatten()
            .map(bytes)
            .sum::<usize>();
        spots.push((format!("/system/{last}"), prefix));
    }
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let n = messages.len();
    let ends = [n.checked_sub(3), n.checked_sub(1)];
    for (i, message) in messages.iter().enumerate() {
        prefix += bytes(message);
        if ends.contains(&Some(i))
            && let Some(last) = last_of(&message["content"])
        {
            spots.push((format!("/messages/{i}/content/{last}"), prefix));
        }
    }
    for (pointer, prefix) in spots {
        if prefix >= min_bytes
            && let Some(Value::Object(block)) = body.pointer_mut(&pointer)
        {
            block.insert("cache_control".into(), control.clone());
        }
    }
}

/// The longest `prompt_cache_key` sent (OpenAI's limit is 64 characters).
const MAX_KEY_CHARS: usize = 64;

/// The `prompt_cache_key` of `agent`'s requests for `unit`: `baton-<agent>-<hash of unit>`,
/// stable across runs and processes (FNV-1a, not the standard library's hasher, whose output
/// may change between Rust versions), at most 64 characters, only `A-Z a-z 0-9 _ -`.
pub fn prompt_cache_key(agent: &str, unit: Option<&str>) -> String {
    let agent: String = agent
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_KEY_CHARS - "baton--".len() - 16)
        .collect();
    match unit {
        Some(unit) => format!("baton-{agent}-{:016x}", fnv1a(unit.as_bytes())),
        None => format!("baton-{agent}"),
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anthropic::request_body;
    use crate::types::{ChatRequest, Message, ToolCall, ToolSpec};
    use baton_test_support::wire_rules::check_anthropic;

    fn tool(name: &str, description_bytes: usize) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "d".repeat(description_bytes),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }
    }

    /// A developer's request after `turns` rounds of read → result, on `model`: two tools of
    /// `tool_bytes` each, a system prompt of `system_bytes`, results of `result_bytes`.
    fn request(model: &str, sizes: (usize, usize, usize), turns: usize) -> ChatRequest {
        let (tool_bytes, system_bytes, result_bytes) = sizes;
        let mut messages = vec![Message::User {
            text: "Implement story `1-2-login` (mode: dev).".into(),
        }];
        for turn in 0..turns {
            let id = format!("toolu_{turn}");
            messages.push(Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::new(&id, "read_file", r#"{"path":"a.md"}"#)],
            });
            messages.push(Message::ToolResult {
                call_id: id,
                name: "read_file".into(),
                content: "r".repeat(result_bytes),
                is_error: false,
            });
        }
        ChatRequest {
            model: model.into(),
            system: "s".repeat(system_bytes),
            messages,
            tools: vec![
                tool("read_file", tool_bytes),
                tool("write_file", tool_bytes),
            ],
            max_tokens: None,
            temperature: None,
            agent: "dev".into(),
            unit: None,
        }
    }

    /// Every breakpoint of `body`, in the API's order (tools, system, messages), as
    /// (JSON pointer of its block, its `cache_control`).
    fn breakpoints(body: &Value) -> Vec<(String, Value)> {
        let mut found = Vec::new();
        let mut visit = |list: &Value, at: &str| {
            for (i, block) in list.as_array().into_iter().flatten().enumerate() {
                if let Some(control) = block.get("cache_control") {
                    found.push((format!("{at}/{i}"), control.clone()));
                }
            }
        };
        visit(&body["tools"], "/tools");
        visit(&body["system"], "/system");
        for (m, message) in body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            visit(&message["content"], &format!("/messages/{m}/content"));
        }
        found
    }

    fn paths(body: &Value) -> Vec<String> {
        breakpoints(body)
            .into_iter()
            .map(|(path, _)| path)
            .collect()
    }

    /// Sonnet 4.5 caches from 1024 tokens, 4096 bytes as estimated.
    const SONNET: &str = "claude-sonnet-4-5";

    #[test]
    fn a_long_conversation_gets_four_breakpoints_in_the_apis_order() {
        let body = request_body(
            &request(SONNET, (3000, 3000, 500), 3),
            PromptCache::FiveMinutes,
        );
        // user task, then (assistant call, user result) three times: 7 messages.
        assert_eq!(
            paths(&body),
            [
                "/tools/1",
                "/system/0",
                "/messages/4/content/0",
                "/messages/6/content/0",
            ]
        );
        for (_, control) in breakpoints(&body) {
            assert_eq!(control, json!({"type": "ephemeral"}));
        }
        // The real API's limits (count, order, TTLs) and shapes hold.
        assert_eq!(check_anthropic(&body), Ok(()));
    }

    #[test]
    fn the_previous_requests_end_is_marked_again_in_the_next_one() {
        let sizes = (3000, 3000, 500);
        let before = request_body(&request(SONNET, sizes, 2), PromptCache::FiveMinutes);
        let after = request_body(&request(SONNET, sizes, 3), PromptCache::FiveMinutes);
        let moving = paths(&before).pop().expect("a moving breakpoint");
        assert_eq!(moving, "/messages/4/content/0");
        assert!(paths(&after).contains(&moving), "{:?}", paths(&after));
        // The prefix up to it is byte for byte what the previous request cached (breakpoints
        // aside, which are not part of the cached content).
        let prefix = |body: &Value| {
            let mut body = body.clone();
            for (path, _) in breakpoints(&body) {
                if let Some(block) = body.pointer_mut(&path).and_then(Value::as_object_mut) {
                    block.remove("cache_control");
                }
            }
            body["messages"]
                .as_array_mut()
                .expect("messages")
                .truncate(5);
            [&body["tools"], &body["system"], &body["messages"]].map(Value::to_string)
        };
        assert!(prefix(&before) == prefix(&after), "the prefixes differ");
    }

    #[test]
    fn a_first_request_marks_tools_system_and_its_task() {
        let body = request_body(
            &request(SONNET, (3000, 3000, 0), 0),
            PromptCache::FiveMinutes,
        );
        assert_eq!(
            paths(&body),
            ["/tools/1", "/system/0", "/messages/0/content/0"]
        );
    }

    #[test]
    fn only_prefixes_of_the_minimum_length_are_marked() {
        // Tools ≈ 1.3 KB: too short alone; with a 3 KB system prompt past 4096 bytes.
        let short_tools = request_body(
            &request(SONNET, (500, 3000, 100), 1),
            PromptCache::FiveMinutes,
        );
        assert_eq!(
            paths(&short_tools),
            [
                "/system/0",
                "/messages/0/content/0",
                "/messages/2/content/0"
            ]
        );
        // Everything short: the prompt is under 1024 tokens, nothing is marked.
        let short = request_body(
            &request(SONNET, (100, 100, 100), 3),
            PromptCache::FiveMinutes,
        );
        assert_eq!(paths(&short), Vec::<String>::new());
        // Only the conversation grows past the minimum: only its breakpoints.
        let grown = request_body(
            &request(SONNET, (100, 100, 3000), 3),
            PromptCache::FiveMinutes,
        );
        assert_eq!(
            paths(&grown),
            ["/messages/4/content/0", "/messages/6/content/0"]
        );
        // The same body on a model with a 4096-token minimum (16 KB): nothing is long enough.
        let haiku = request_body(
            &request("claude-haiku-4-5", (3000, 3000, 500), 3),
            PromptCache::FiveMinutes,
        );
        assert_eq!(paths(&haiku), Vec::<String>::new());
        // Just under and just over 1024 tokens with the system prompt alone.
        let system_at = |bytes: usize| {
            let mut r = request(SONNET, (0, bytes, 0), 0);
            r.tools.clear();
            paths(&request_body(&r, PromptCache::FiveMinutes))
        };
        // The system block serializes as `{"type":"text","text":"…"}`: 25 bytes around its text.
        // One byte short, the system prompt is not marked; the task after it reaches the length.
        assert_eq!(system_at(4096 - 25 - 1), ["/messages/0/content/0"]);
        assert_eq!(system_at(4096 - 25), ["/system/0", "/messages/0/content/0"]);
    }

    #[test]
    fn the_ttl_setting_is_on_every_breakpoint_or_none_at_all() {
        let r = request(SONNET, (3000, 3000, 500), 3);
        let hour = request_body(&r, PromptCache::OneHour);
        let marks = breakpoints(&hour);
        assert_eq!(marks.len(), 4);
        for (_, control) in &marks {
            assert_eq!(*control, json!({"type": "ephemeral", "ttl": "1h"}));
        }
        assert_eq!(check_anthropic(&hour), Ok(()));
        let off = request_body(&r, PromptCache::Off);
        assert_eq!(breakpoints(&off), Vec::new());
        assert!(!off.to_string().contains("cache_control"));
    }

    #[test]
    fn minimum_lengths_follow_the_model_family() {
        assert_eq!(min_cacheable_tokens("claude-sonnet-4-5"), 1024);
        assert_eq!(min_cacheable_tokens("claude-sonnet-4-5-20250929"), 1024);
        assert_eq!(min_cacheable_tokens("claude-opus-4-1"), 1024);
        assert_eq!(min_cacheable_tokens("claude-opus-4-20250514"), 1024);
        assert_eq!(min_cacheable_tokens("claude-3-7-sonnet-20250219"), 1024);
        assert_eq!(min_cacheable_tokens("claude-3-5-haiku-20241022"), 2048);
        assert_eq!(min_cacheable_tokens("claude-opus-4-5-20251101"), 4096);
        assert_eq!(min_cacheable_tokens("claude-haiku-4-5"), 4096);
        assert_eq!(min_cacheable_tokens("anthropic/claude-sonnet-4-5"), 1024);
        assert_eq!(min_cacheable_tokens("some-gateway-model"), 4096);
    }

    fn openai_body(key: bool, prompt: bool, request: &ChatRequest) -> Value {
        let client = crate::openai::OpenAiClient::new("p", "http://127.0.0.1:9/v1", None)
            .expect("client")
            .with_cache_key(key)
            .with_cache_prompt(prompt);
        client.body(request)
    }

    #[test]
    fn openai_hints_are_sent_only_where_the_provider_takes_them() {
        let mut r = request("gpt-5", (10, 10, 10), 1);
        r.unit = Some("Implement story `1-2-login`".into());
        let plain = openai_body(false, false, &r);
        assert!(plain.get("prompt_cache_key").is_none(), "{plain}");
        assert!(plain.get("cache_prompt").is_none(), "{plain}");
        let keyed = openai_body(true, false, &r);
        let key = prompt_cache_key("dev", r.unit.as_deref());
        assert_eq!(keyed["prompt_cache_key"], key.as_str());
        assert!(keyed.get("cache_prompt").is_none(), "{keyed}");
        // The same agent and unit on a later turn: the same key.
        let later = openai_body(true, false, &request("gpt-5", (10, 10, 10), 3));
        let later_key = |unit: &str| {
            let mut r = request("gpt-5", (10, 10, 10), 3);
            r.unit = Some(unit.into());
            openai_body(true, false, &r)["prompt_cache_key"].clone()
        };
        assert_eq!(later["prompt_cache_key"], "baton-dev");
        assert_eq!(later_key("Implement story `1-2-login`"), key.as_str());
        let llama = openai_body(false, true, &r);
        assert_eq!(llama["cache_prompt"], true);
        assert!(llama.get("prompt_cache_key").is_none(), "{llama}");
    }

    #[test]
    fn cache_keys_are_stable_bounded_and_plain() {
        let key = prompt_cache_key("dev", Some("1-2-login"));
        assert_eq!(key, prompt_cache_key("dev", Some("1-2-login")));
        assert_ne!(key, prompt_cache_key("dev", Some("1-3-logout")));
        assert_ne!(key, prompt_cache_key("reviewer", Some("1-2-login")));
        assert_eq!(prompt_cache_key("dev", None), "baton-dev");
        // FNV-1a of "a" (a published test vector): the key never depends on the build.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let long = prompt_cache_key(&"x".repeat(200), Some("u"));
        assert!(long.len() <= MAX_KEY_CHARS, "{long}");
        let odd = prompt_cache_key("a b/c", Some("u"));
        assert!(odd.starts_with("baton-a_b_c-"), "{odd}");
    }
}
