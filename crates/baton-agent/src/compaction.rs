//! Compaction of old tool results: what the model is sent, never what is recorded.
//!
//! A tool result stays in the conversation and is sent again with every later request, so a
//! document read in turn 1 of a 40-turn run is paid for 40 times. Past a threshold, the results
//! of older turns are replaced, in the conversation sent to the model, by short stubs that say
//! what they were and how to get them again. The rules keep the provider's prompt cache and the
//! wire rules intact:
//!
//! - **in batches**: nothing changes while the old results still sent in full (those of the
//!   turns before the last [`Compaction::keep_turns`]) add up to at most
//!   [`Compaction::after_bytes`]; past it, all of them become stubs at once, and everything up to
//!   that point is frozen. The conversation is therefore byte-stable between two compactions,
//!   and the cached prefix is rebuilt only when one happens;
//! - **a stub never changes**: its text depends only on the call, the result and the turn (no
//!   clock, no counter of the run);
//! - **recent results stay**: the results of the last `keep_turns` assistant turns (at least
//!   [`MIN_KEEP_TURNS`], so the latest results and those the agent is acting on) are never
//!   compacted;
//! - **every call stays answered**: only a result's text is replaced; the call and its result
//!   message stay where they were;
//! - **short results stay**: writes, edits, escalations and status moves, and any result under
//!   [`MIN_COMPACT_BYTES`], are left as they are;
//! - **what the model wrote goes too**: the long text arguments of old `write_file` and
//!   `edit_file` calls count toward the threshold and become markers in the same batch
//!   ([`written`]); the call keeps its id, name and path.
//!
//! The transcript is written as each result arrives, before any compaction, so it keeps every
//! full result; the runner records each batch there and the totals in the outcome.

use baton_llm::{Message, ToolCall};
use serde::Serialize;

pub mod written;

/// Compact once the old results sent in full exceed this many bytes, unless configured.
pub const DEFAULT_AFTER_BYTES: u64 = 16 * 1024;
/// The results of this many latest assistant turns are never compacted, by default.
pub const DEFAULT_KEEP_TURNS: usize = 3;
/// The fewest latest turns whose results are kept: the latest, and the one the agent acts on.
pub const MIN_KEEP_TURNS: usize = 2;
/// A result shorter than this is never compacted: its stub would save next to nothing.
pub const MIN_COMPACT_BYTES: usize = 1024;
/// Tools whose results are short confirmations (or end the run): never compacted.
const KEPT_TOOLS: [&str; 4] = [
    "write_file",
    "edit_file",
    "escalate",
    "update_sprint_status",
];
/// The longest rendering of a call's arguments in a stub, in bytes.
const MAX_ARGS_BYTES: usize = 300;
/// Lines of a command's output kept at its start and at its end.
const HEAD_LINES: usize = 3;
const TAIL_LINES: usize = 5;
/// The longest line of a command's output kept in a stub, in bytes.
const MAX_LINE_BYTES: usize = 160;

/// When old tool results are compacted (`[agents] compact_after_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// Compact once the old results still sent in full exceed this many bytes (`None`: never).
    pub after_bytes: Option<u64>,
    /// The results of this many latest assistant turns are never compacted (at least
    /// [`MIN_KEEP_TURNS`]).
    pub keep_turns: usize,
}

impl Default for Compaction {
    fn default() -> Compaction {
        Compaction {
            after_bytes: Some(DEFAULT_AFTER_BYTES),
            keep_turns: DEFAULT_KEEP_TURNS,
        }
    }
}

impl Compaction {
    /// No compaction: every result is sent in full on every turn.
    pub fn off() -> Compaction {
        Compaction {
            after_bytes: None,
            ..Compaction::default()
        }
    }

    /// Compaction past `bytes` of old results; `0` turns it off.
    pub fn after(bytes: u64) -> Compaction {
        Compaction {
            after_bytes: (bytes > 0).then_some(bytes),
            ..Compaction::default()
        }
    }
}

/// What compaction did in one agent run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CompactionStats {
    /// Compactions (each stubs a batch of results at once).
    pub batches: u32,
    /// Results replaced by stubs.
    pub results: u32,
    /// Their full size, in bytes.
    pub result_bytes: u64,
    /// The size of their stubs, in bytes.
    pub stub_bytes: u64,
    /// Bytes of results not sent, over every request after a compaction.
    pub bytes_not_sent: u64,
}

impl CompactionStats {
    /// Nothing was compacted.
    pub fn is_empty(&self) -> bool {
        self.batches == 0
    }
}

/// One result replaced by its stub.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stubbed {
    /// The call it answers.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The turn whose call it answers, from 1.
    pub turn: u32,
    /// The call's argument replaced, when what was compacted is text the model wrote (the
    /// call's own argument), not a result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
    /// The full result's size, in bytes.
    pub bytes: u64,
    /// What is sent instead.
    pub stub: String,
}

/// One compaction: the results it replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Batch {
    /// The results, in conversation order.
    pub results: Vec<Stubbed>,
    /// Their full size, in bytes.
    pub bytes: u64,
    /// The size of their stubs, in bytes.
    pub stub_bytes: u64,
}

/// Compacts one agent's conversation before each request, by the rules of the module.
#[derive(Debug, Clone)]
pub struct Compactor {
    settings: Compaction,
    /// Messages before this index are final: never looked at or changed again.
    frozen: usize,
    /// Assistant turns before `frozen`.
    frozen_turns: u32,
    stats: CompactionStats,
}

impl Default for Compactor {
    fn default() -> Compactor {
        Compactor::new(Compaction::off())
    }
}

impl Compactor {
    /// A compactor with nothing compacted yet.
    pub fn new(settings: Compaction) -> Compactor {
        Compactor {
            settings,
            frozen: 0,
            frozen_turns: 0,
            stats: CompactionStats::default(),
        }
    }

    /// What was compacted so far.
    pub fn stats(&self) -> CompactionStats {
        self.stats
    }

    /// Called before each request with the conversation about to be sent: compacts it in place
    /// when the threshold is crossed (returning what was stubbed), and counts what is not sent.
    pub fn prepare(&mut self, messages: &mut [Message]) -> Option<Batch> {
        let batch = self.compact(messages);
        let saved = self
            .stats
            .result_bytes
            .saturating_sub(self.stats.stub_bytes);
        self.stats.bytes_not_sent = self.stats.bytes_not_sent.saturating_add(saved);
        batch
    }

    fn compact(&mut self, messages: &mut [Message]) -> Option<Batch> {
        let limit = self.settings.after_bytes?;
        let keep = self.settings.keep_turns.max(MIN_KEEP_TURNS);
        let boundary = keep_from(messages, keep)?;
        if boundary <= self.frozen {
            return None;
        }
        let mut turn = self.frozen_turns;
        let mut calls: &[ToolCall] = &[];
        let mut found = Vec::new();
        let mut args = Vec::new();
        let mut full = 0u64;
        for (i, message) in messages.iter().enumerate().take(boundary).skip(self.frozen) {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    turn += 1;
                    calls = tool_calls;
                    for (k, call) in tool_calls.iter().enumerate() {
                        let long = written::compactable(call, turn, MIN_COMPACT_BYTES);
                        if !long.is_empty() {
                            full += long.iter().map(|w| w.bytes).sum::<u64>();
                            args.push((i, k, turn, long));
                        }
                    }
                }
                Message::ToolResult {
                    call_id,
                    name,
                    content,
                    ..
                } if compactable(name, content) => {
                    let call = calls.iter().find(|c| &c.id == call_id);
                    let stub = stub(name, call, content, turn);
                    if stub.len() < content.len() {
                        full += content.len() as u64;
                        found.push((i, turn, stub));
                    }
                }
                _ => {}
            }
        }
        if full <= limit {
            return None;
        }
        let mut results = Vec::with_capacity(found.len() + args.len());
        for (i, k, turn, long) in args {
            if let Some(Message::Assistant { tool_calls, .. }) = messages.get_mut(i)
                && let Some(call) = tool_calls.get_mut(k)
            {
                written::apply(call, &long);
                results.extend(long.into_iter().map(|w| Stubbed {
                    id: call.id.clone(),
                    tool: call.name.clone(),
                    turn,
                    argument: Some(w.argument.to_owned()),
                    bytes: w.bytes,
                    stub: w.marker,
                }));
            }
        }
        for (i, turn, stub) in found {
            if let Some(Message::ToolResult {
                call_id,
                name,
                content,
                ..
            }) = messages.get_mut(i)
            {
                let bytes = content.len() as u64;
                *content = stub.clone();
                results.push(Stubbed {
                    id: call_id.clone(),
                    tool: name.clone(),
                    turn,
                    argument: None,
                    bytes,
                    stub,
                });
            }
        }
        results.sort_by_key(|r| r.turn);
        self.frozen = boundary;
        self.frozen_turns = turn;
        let batch = Batch {
            bytes: results.iter().map(|r| r.bytes).sum(),
            stub_bytes: results.iter().map(|r| r.stub.len() as u64).sum(),
            results,
        };
        self.stats.batches += 1;
        self.stats.results += batch.results.len() as u32;
        self.stats.result_bytes += batch.bytes;
        self.stats.stub_bytes += batch.stub_bytes;
        Some(batch)
    }
}

/// The index of the `keep`-th assistant message from the end: it and everything after it are
/// the latest turns, never compacted. `None` when there are not that many turns.
fn keep_from(messages: &[Message], keep: usize) -> Option<usize> {
    messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| matches!(m, Message::Assistant { .. }))
        .nth(keep - 1)
        .map(|(i, _)| i)
}

/// Whether a result of `tool` may become a stub.
fn compactable(tool: &str, content: &str) -> bool {
    !KEPT_TOOLS.contains(&tool) && content.len() >= MIN_COMPACT_BYTES
}

/// The stub sent instead of `content`, the result of `call` (of tool `tool`) made in `turn`.
/// Deterministic: the same call, result and turn always give the same text.
pub fn stub(tool: &str, call: Option<&ToolCall>, content: &str, turn: u32) -> String {
    let args = call.and_then(|c| c.arguments.as_ref().ok());
    let shown = call.map(shown_args).unwrap_or_default();
    let size = size_of(content);
    match (tool, args) {
        ("read_file", Some(a)) if a["path"].is_string() => {
            let path = a["path"].as_str().unwrap_or_default();
            format!(
                "`{path}`, {size}, read in turn {turn}: compacted to save context; read it again \
                 (`read_file` {shown}) if you need it."
            )
        }
        ("run_command", Some(a)) if a["program"].is_string() => {
            let mut command = vec![a["program"].as_str().unwrap_or_default().to_owned()];
            command.extend(
                a["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)),
            );
            let mut lines = content.lines();
            let headline = lines.next().unwrap_or_default().trim();
            let output: Vec<&str> = lines
                .filter(|l| !l.trim().is_empty())
                .filter(|l| !matches!(l.trim(), "--- stdout ---" | "--- stderr ---"))
                .collect();
            let mut text = format!(
                "`{}`, run in turn {turn}: {headline}; its output ({size}) was compacted to save \
                 context.",
                command.join(" ")
            );
            if output.len() <= HEAD_LINES + TAIL_LINES {
                text.push_str("\nOutput lines:\n");
                push_lines(&mut text, &output);
            } else {
                text.push_str("\nFirst lines:\n");
                push_lines(&mut text, &output[..HEAD_LINES]);
                text.push_str("Last lines:\n");
                push_lines(&mut text, &output[output.len() - TAIL_LINES..]);
            }
            text.push_str(&format!(
                "Run it again (`run_command` {shown}) if you need the whole output."
            ));
            text
        }
        _ => {
            let tool = if tool.is_empty() { "a tool" } else { tool };
            let with = if shown.is_empty() {
                String::new()
            } else {
                format!(" {shown}")
            };
            format!(
                "`{tool}`{with}, in turn {turn}, returned {size}: compacted to save context; call \
                 it again if you need it."
            )
        }
    }
}

/// A call's arguments as the model can send them again: compact JSON, cut at
/// [`MAX_ARGS_BYTES`].
fn shown_args(call: &ToolCall) -> String {
    let text = match &call.arguments {
        Ok(v) => v.to_string(),
        Err(_) => call.raw_arguments.trim().to_owned(),
    };
    cut(&text, MAX_ARGS_BYTES)
}

fn push_lines(text: &mut String, lines: &[&str]) {
    for line in lines {
        text.push_str("  ");
        text.push_str(&cut(line.trim_end(), MAX_LINE_BYTES));
        text.push('\n');
    }
}

/// `s` cut to at most `max` bytes on a character boundary, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// `61 KB, 1204 lines`: the size of a result as a reader thinks of it.
fn size_of(content: &str) -> String {
    let bytes = content.len();
    let size = if bytes < 1000 {
        format!("{bytes} bytes")
    } else {
        format!("{} KB", (bytes + 500) / 1000)
    };
    match content.lines().count() {
        1 => format!("{size}, 1 line"),
        n => format!("{size}, {n} lines"),
    }
}

#[cfg(test)]
mod tests;
