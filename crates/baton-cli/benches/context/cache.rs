//! A prompt cache that applies Anthropic's documented rules to real request bodies, and the
//! usage Anthropic would report for them.
//!
//! The rules (Anthropic, "Prompt caching"):
//! - a request is read as one sequence of blocks in the order tools → system → messages; a
//!   `cache_control` on a block is a breakpoint, with its lifetime (`ttl`: `5m` by default, or
//!   `1h`);
//! - the prefix up to a breakpoint is written to the cache when it reaches the model's minimum
//!   cacheable length (1024 tokens for Sonnet 4.5); a shorter one is not cached at all;
//! - a later request reads from the cache the longest prefix that matches, byte for byte, an
//!   entry written before: at each breakpoint the prefix ending there is looked up, and so are
//!   the prefixes ending at the 20 blocks before it;
//! - an entry lives for its lifetime after it was last written or read;
//! - usage: `cache_read_input_tokens` (the prefix read), `cache_creation_input_tokens` (from
//!   there to the last breakpoint that is cached), `input_tokens` (the rest, after the last
//!   breakpoint, or all of it without one).
//!
//! Tokens are counted with OpenAI's `o200k_base` BPE (`tiktoken-rs`), on each block's text (a
//! tool's JSON definition, a text, a tool call's name and JSON input, a tool result's text). No
//! tokenizer of Claude's ships offline; o200k counts English prose and code within about a tenth
//! of what Claude's reports, and it is applied the same way to both variants, so the ratios
//! between them hold.

use serde_json::Value;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// The smallest prefix Anthropic caches for Sonnet 4.5, in tokens.
pub const MIN_CACHEABLE: u64 = 1024;
/// How many blocks before a breakpoint are looked up for a hit.
pub const LOOKBACK: usize = 20;

/// Tokens of `text` (o200k_base).
pub fn tokens(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton().count_ordinary(text) as u64
}

/// One block of a request: its tokens, the hash of the whole prefix through it, and its
/// breakpoint's lifetime in seconds when it has one.
struct Block {
    tokens: u64,
    prefix: u64,
    breakpoint: Option<u64>,
}

fn ttl_of(block: &Value) -> Option<u64> {
    let cc = block.get("cache_control")?;
    Some(match cc.get("ttl").and_then(Value::as_str) {
        Some("1h") => 3600,
        _ => 300,
    })
}

/// The text a block is counted by: its text, or its JSON without the cache marker.
fn text_of(block: &Value) -> String {
    match block {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("text") => o
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            Some("tool_result") => match o.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => {
                    parts.iter().map(text_of).collect::<Vec<_>>().join("\n")
                }
                _ => String::new(),
            },
            Some("tool_use") => format!(
                "{}{}",
                o.get("name").and_then(Value::as_str).unwrap_or_default(),
                o.get("input").map(Value::to_string).unwrap_or_default()
            ),
            _ => {
                let mut plain = o.clone();
                plain.remove("cache_control");
                Value::Object(plain).to_string()
            }
        },
        other => other.to_string(),
    }
}

/// The request's blocks in caching order: tools, system, then each message's content.
fn blocks(body: &Value) -> Vec<Block> {
    let mut raw: Vec<(String, &Value)> = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        raw.push(("tool".into(), tool));
    }
    match &body["system"] {
        Value::Array(parts) => raw.extend(parts.iter().map(|p| ("system".to_owned(), p))),
        s @ Value::String(_) => raw.push(("system".into(), s)),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default().to_owned();
        match &message["content"] {
            Value::Array(parts) => raw.extend(parts.iter().map(|p| (role.clone(), p))),
            c => raw.push((role, c)),
        }
    }
    let mut hasher = DefaultHasher::new();
    raw.into_iter()
        .map(|(role, block)| {
            let text = text_of(block);
            role.hash(&mut hasher);
            text.hash(&mut hasher);
            Block {
                tokens: tokens(&text),
                prefix: hasher.finish(),
                breakpoint: ttl_of(block),
            }
        })
        .collect()
}

/// The usage Anthropic reports for one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `input_tokens`: neither read from nor written to the cache.
    pub input: u64,
    /// `cache_read_input_tokens`.
    pub read: u64,
    /// `cache_creation_input_tokens`.
    pub write: u64,
    /// `output_tokens`.
    pub output: u64,
}

impl Usage {
    /// All input tokens.
    pub fn total_input(&self) -> u64 {
        self.input + self.read + self.write
    }
}

/// The cache of one API key and model: prefix hash → (lifetime, expiry), in seconds.
#[derive(Default)]
pub struct Cache {
    entries: HashMap<u64, (u64, u64)>,
}

impl Cache {
    /// Applies the rules to request `body` sent at time `now` (seconds): what it reads, what it
    /// writes, what is left uncached; the cache is updated.
    pub fn request(&mut self, body: &Value, now: u64) -> Usage {
        self.entries.retain(|_, (_, expires)| *expires > now);
        let blocks = blocks(body);
        let mut cumulative = Vec::with_capacity(blocks.len());
        let mut total = 0;
        for b in &blocks {
            total += b.tokens;
            cumulative.push(total);
        }
        // The longest prefix any breakpoint finds, at it or up to 20 blocks before it.
        let mut hit: Option<usize> = None;
        for (i, b) in blocks.iter().enumerate() {
            if b.breakpoint.is_none() {
                continue;
            }
            let first = i.saturating_sub(LOOKBACK);
            if let Some(j) = (first..=i)
                .rev()
                .find(|j| self.entries.contains_key(&blocks[*j].prefix))
            {
                hit = hit.max(Some(j));
            }
        }
        let read = hit.map_or(0, |j| cumulative[j]);
        // Every breakpoint whose prefix is long enough is (re)written; reading refreshes.
        let mut written_to = read;
        for (i, b) in blocks.iter().enumerate() {
            let Some(ttl) = b.breakpoint else {
                continue;
            };
            if cumulative[i] < MIN_CACHEABLE {
                continue;
            }
            self.entries.insert(b.prefix, (ttl, now + ttl));
            written_to = written_to.max(cumulative[i]);
        }
        if let Some(j) = hit
            && let Some(entry) = self.entries.get_mut(&blocks[j].prefix)
        {
            entry.1 = now + entry.0;
        }
        Usage {
            input: total - written_to,
            read,
            write: written_to - read,
            output: 0,
        }
    }
}

/// Checks the rules on small made-up requests before the benchmark trusts them.
pub fn self_check() {
    let text = |n: usize| "word ".repeat(n);
    let request = |system: &str, turns: &[&str], marked: bool| {
        let mut messages: Vec<Value> = Vec::new();
        for (i, t) in turns.iter().enumerate() {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let mut block = serde_json::json!({"type": "text", "text": t});
            if marked && i == turns.len() - 1 {
                block["cache_control"] = serde_json::json!({"type": "ephemeral"});
            }
            messages.push(serde_json::json!({"role": role, "content": [block]}));
        }
        serde_json::json!({
            "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        })
    };
    let long = text(2000);
    let mut c = Cache::default();
    // No breakpoint: nothing is cached.
    let plain =
        serde_json::json!({"system": long, "messages": [{"role": "user", "content": "hi"}]});
    let u = c.request(&plain, 0);
    assert_eq!((u.read, u.write), (0, 0), "{u:?}");
    // A long system prompt is written, then read; the moving end is written each time.
    let first = c.request(&request(&long, &["task"], true), 0);
    assert!(
        first.read == 0 && first.write >= 2000 && first.input == 0,
        "{first:?}"
    );
    let second = c.request(&request(&long, &["task", "answer", "more"], true), 10);
    assert_eq!(second.read, first.write, "{second:?}");
    assert!(second.write > 0 && second.input == 0, "{second:?}");
    // Below the minimum nothing is written; past the lifetime nothing is read.
    let mut short = Cache::default();
    let u = short.request(&request("short", &["task"], true), 0);
    assert_eq!((u.read, u.write), (0, 0), "{u:?}");
    let late = c.request(&request(&long, &["task", "answer", "more"], true), 10 + 301);
    assert_eq!(late.read, 0, "{late:?}");
    // A hit more than 20 blocks before every breakpoint is not found.
    let many: Vec<String> = (0..30).map(|i| format!("turn {i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let mut c = Cache::default();
    let _ = c.request(&request(&long, &many[..1], true), 0);
    let mut unmarked = request(&long, &many, true);
    unmarked["system"][0]
        .as_object_mut()
        .map(|o| o.remove("cache_control"));
    let u = c.request(&unmarked, 1);
    assert_eq!(u.read, 0, "{u:?}");
}
