//! The JSON-lines side of a CLI worker: splitting a byte stream into lines (partial lines kept
//! until their end arrives, over-long lines cut), and the running [`Tally`] each CLI's parser
//! fills from the events it understands. Lines that are not JSON, and events no parser knows,
//! are ignored (they are still saved in the raw stream).

use baton_llm::Usage;
use serde_json::Value;

/// The longest line kept whole; the rest of a longer line is dropped up to its newline (pi's
/// `message_update` lines repeat the whole partial message and can grow large).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Splits bytes into lines as they arrive.
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
    /// The current line passed [`MAX_LINE`]: drop bytes until its newline.
    skipping: bool,
}

impl LineSplitter {
    /// Feeds `bytes`; returns the lines they completed (without the newline).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut lines = Vec::new();
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
            let (head, tail) = rest.split_at(pos);
            if !self.skipping {
                self.partial.extend_from_slice(head);
                lines.push(std::mem::take(&mut self.partial));
            }
            self.partial.clear();
            self.skipping = false;
            rest = &tail[1..];
        }
        if !self.skipping {
            self.partial.extend_from_slice(rest);
            if self.partial.len() > MAX_LINE {
                self.partial.clear();
                self.skipping = true;
            }
        }
        lines
    }

    /// The last line when the stream ended without a newline.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        let last = std::mem::take(&mut self.partial);
        (!self.skipping && !last.iter().all(u8::is_ascii_whitespace)).then_some(last)
    }
}

/// Parses one line as a JSON object; anything else is `None`.
pub fn parse_line(line: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(line).ok()?.trim();
    if !text.starts_with('{') {
        return None;
    }
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
}

/// Whether a line shows the CLI making progress (resets the stall timer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// The run moved on.
    Progress,
    /// Noise that is not progress (Codex's endless "Reconnecting...").
    Idle,
}

/// Something the display should hear about.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// A model turn started (turn number from 1).
    Turn(u32),
    /// A tool call is running.
    ToolCall(String),
    /// A tool call was refused (by the CLI's permissions or baton's hook).
    Refused {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
}

/// What a run's events added up to so far.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// The budget stopped the run (the hard limit was crossed mid-stream).
    pub budget_stop: bool,
    /// The final answer, or the last text seen.
    pub summary: String,
    /// Tokens, as the CLI reported them, turned into baton's rule: uncached input, cache reads
    /// and cache writes as three separate counts (`baton_core::meter`).
    pub usage: Usage,
    /// The part of `usage.cache_write_tokens` written to 1-hour cache entries, where the stream
    /// says (Claude Code does): priced at the 1-hour rate.
    pub one_hour_cache_writes: u64,
    /// The cost the CLI reported, in US dollars (`None`: it reports none).
    pub cli_cost: Option<f64>,
    /// Model turns counted from the events.
    pub turns: u32,
    /// Tool calls seen.
    pub tool_calls: u32,
    /// Errors the CLI reported (API errors, retries), oldest first.
    pub errors: Vec<String>,
    /// Things worth a look that did not stop the run (e.g. Codex's fallback model metadata).
    pub warnings: Vec<String>,
    /// The CLI's closing event arrived.
    pub finished: bool,
    /// The closing event says the run failed, and why.
    pub failure: Option<String>,
    /// The parser gave the run up (e.g. Codex reconnecting past the retries allowed): baton
    /// stops the CLI and the run fails with this reason.
    pub fatal: Option<String>,
    /// Events for the display, drained by the worker.
    pub notes: Vec<Note>,
}

impl Tally {
    /// Counts a new model turn.
    pub fn turn(&mut self) {
        self.turns += 1;
        self.notes.push(Note::Turn(self.turns));
    }

    /// Counts a tool call.
    pub fn tool(&mut self, name: &str) {
        self.tool_calls += 1;
        self.notes.push(Note::ToolCall(name.to_owned()));
    }
}

/// A string field of `v`, or `""`.
pub fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A number field of `v`, or 0.
pub fn u64_of(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// One CLI's reading of its own stream.
pub trait StreamParser: Send {
    /// Takes one event into the tally.
    fn event(&mut self, event: &Value, tally: &mut Tally) -> Activity;

    /// How a run that ended by itself went, from the tally and the exit code (`None`: killed
    /// by a signal). `Ok(())` is a completed run; `Err` carries the reason it failed.
    fn verdict(&self, tally: &Tally, exit: Option<i32>, stderr_tail: &str) -> Result<(), String>;
}

/// The reason of a run that exited without its closing event.
pub fn no_result(cli: &str, exit: Option<i32>, stderr_tail: &str) -> String {
    let how = exit.map_or_else(
        || "was killed by a signal".to_owned(),
        |c| format!("exited with code {c}"),
    );
    let tail = stderr_tail.trim();
    if tail.is_empty() {
        format!("{cli} {how} without a final result")
    } else {
        format!("{cli} {how} without a final result; stderr: {tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_anywhere_join_back() {
        let text = b"{\"a\":1}\n{\"b\":\"\xc3\xa9\"}\nnot json\n{\"c\":3}";
        for size in [1, 2, 3, 7, 100] {
            let mut s = LineSplitter::default();
            let mut lines = Vec::new();
            for chunk in text.chunks(size) {
                lines.extend(s.push(chunk));
            }
            lines.extend(s.finish());
            assert_eq!(lines.len(), 4, "chunk size {size}");
            assert_eq!(parse_line(&lines[1]).unwrap()["b"], "é");
            assert!(parse_line(&lines[2]).is_none());
            assert_eq!(parse_line(&lines[3]).unwrap()["c"], 3);
        }
    }

    #[test]
    fn over_long_lines_are_dropped_and_the_next_kept() {
        let mut s = LineSplitter::default();
        let big = vec![b'x'; MAX_LINE + 10];
        assert!(s.push(&big).is_empty());
        let lines = s.push(b"yyy\n{\"ok\":true}\n");
        assert_eq!(lines, vec![b"{\"ok\":true}".to_vec()]);
        assert!(s.finish().is_none());
    }

    #[test]
    fn non_objects_are_not_events() {
        assert!(parse_line(b"[1,2]").is_none());
        assert!(parse_line(b"{broken").is_none());
        assert!(parse_line(b"  {\"x\":1}\r").is_some());
    }
}
