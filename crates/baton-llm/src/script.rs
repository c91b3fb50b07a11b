//! The `script` provider: replays model turns written in a YAML file, for tests and the demo.
//!
//! Each request for agent A takes the first turn, in file order, written for A, not yet used
//! (unless it may `repeat`), whose optional `match` regex matches the latest input — the text of
//! the last user message, or the joined contents of the trailing tool results. A request no turn
//! answers is a hard [`LlmError::NoScriptMatch`] naming the script, the agent and the input:
//! a replay that silently falls back hides the very divergence it exists to catch.
//!
//! ```yaml
//! turns:
//!   - agent: scout
//!     match: "find the tests"
//!     text: "I will look."
//!     tool_calls:
//!       - name: list_files
//!         arguments: {pattern: "**/*test*"}
//!       - name: read_file
//!         raw_arguments: "{not json"
//!     usage: {input_tokens: 120, output_tokens: 30}
//!     repeat: false
//!     delay_ms: 0
//! ```

use crate::client::{BoxFuture, ModelClient, StreamSink};
use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse, Message, StopReason, StreamEvent, ToolCall, Usage};
use regex::Regex;
use serde::Deserialize;
use serde_saphyr::Spanned;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How much of the latest input a no-match error quotes, in bytes.
const MAX_QUOTED_INPUT: usize = 300;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    turns: Vec<TurnSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnSpec {
    agent: Spanned<String>,
    #[serde(default, rename = "match")]
    pattern: Option<Spanned<String>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallSpec>,
    #[serde(default)]
    usage: Option<UsageSpec>,
    #[serde(default)]
    repeat: bool,
    #[serde(default)]
    delay_ms: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCallSpec {
    name: Spanned<String>,
    #[serde(default)]
    arguments: Option<serde_json::Value>,
    #[serde(default)]
    raw_arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageSpec {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_tokens: u64,
    #[serde(default)]
    cache_write_tokens: u64,
}

/// One scripted turn, validated.
#[derive(Debug)]
struct Turn {
    agent: String,
    line: u64,
    pattern: Option<Regex>,
    text: String,
    /// (name, raw arguments)
    tool_calls: Vec<(String, String)>,
    usage: Option<Usage>,
    repeat: bool,
    delay: Duration,
}

#[derive(Debug)]
struct State {
    used: Vec<bool>,
    next_call_id: u64,
}

/// Replays a YAML script; cheap to share between parallel agents (`Arc<ScriptClient>`).
#[derive(Debug)]
pub struct ScriptClient {
    path: PathBuf,
    turns: Vec<Turn>,
    state: Mutex<State>,
}

impl ScriptClient {
    /// Reads and validates the script at `path`; errors name the file and, for YAML and regex
    /// errors, the line.
    pub fn load(path: impl AsRef<Path>) -> Result<ScriptClient, LlmError> {
        let path = path.as_ref();
        let text = read_bounded(path, MAX_SCRIPT_BYTES).map_err(|e| {
            LlmError::Config(format!("cannot read the script `{}`: {e}", path.display()))
        })?;
        ScriptClient::from_yaml(&text, path)
    }

    /// Parses a script from text; `origin` names it in messages.
    pub fn from_yaml(yaml: &str, origin: impl Into<PathBuf>) -> Result<ScriptClient, LlmError> {
        let path = origin.into();
        let file: ScriptFile = serde_saphyr::from_str(yaml).map_err(|e| {
            let message = e.render_with_options(serde_saphyr::render_options! {
                snippets: serde_saphyr::SnippetMode::Off,
            });
            let message = message.trim();
            // The rendered message usually ends in "at line L, column C" already.
            let at = match e.location().map(|l| l.line()) {
                Some(line) if line > 0 && !message.contains("line ") => format!(" line {line}"),
                _ => String::new(),
            };
            LlmError::Config(format!(
                "invalid script `{}`{at}: {message}",
                path.display()
            ))
        })?;
        let turns = file
            .turns
            .into_iter()
            .map(|spec| Turn::from_spec(spec, &path))
            .collect::<Result<Vec<_>, _>>()?;
        let state = State {
            used: vec![false; turns.len()],
            next_call_id: 1,
        };
        Ok(ScriptClient {
            path,
            turns,
            state: Mutex::new(state),
        })
    }

    /// The script file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Turns that must be used once and were not, as `turn N (agent `A`, line L)` — for tests
    /// that check a run consumed its whole script.
    pub fn unused_turns(&self) -> Vec<String> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.turns
            .iter()
            .zip(&state.used)
            .enumerate()
            .filter(|(_, (turn, used))| !turn.repeat && !**used)
            .map(|(i, (turn, _))| {
                format!(
                    "turn {} (agent `{}`, line {})",
                    i + 1,
                    turn.agent,
                    turn.line
                )
            })
            .collect()
    }

    /// The next turn for `request` as a whole answer, at once (no stream, no delay): for a
    /// local server that serves a script over a real wire.
    pub fn respond(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let (turn, tool_calls) = self.take_turn(request)?;
        let usage = turn
            .usage
            .unwrap_or_else(|| estimate_usage(request, &turn.text, &tool_calls));
        let stop = if tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        Ok(ChatResponse {
            text: turn.text.clone(),
            tool_calls,
            usage,
            stop,
        })
    }

    /// Picks the turn for a request and marks it used; returns it with its call ids.
    fn take_turn(&self, request: &ChatRequest) -> Result<(&Turn, Vec<ToolCall>), LlmError> {
        let input = latest_input(&request.messages);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let found = self.turns.iter().enumerate().find(|(i, turn)| {
            turn.agent == request.agent
                && (turn.repeat || !state.used[*i])
                && turn.pattern.as_ref().is_none_or(|re| re.is_match(&input))
        });
        let Some((index, turn)) = found else {
            let mut quoted = input;
            if quoted.len() > MAX_QUOTED_INPUT {
                crate::retry::truncate_at_char(&mut quoted, MAX_QUOTED_INPUT);
                quoted.push_str(" […]");
            }
            return Err(LlmError::NoScriptMatch {
                script: self.path.display().to_string(),
                agent: request.agent.clone(),
                input: format!("{quoted:?}"),
            });
        };
        state.used[index] = true;
        let calls = turn
            .tool_calls
            .iter()
            .map(|(name, raw)| {
                let id = format!("call_{}", state.next_call_id);
                state.next_call_id += 1;
                ToolCall::new(id, name.clone(), raw.clone())
            })
            .collect();
        Ok((turn, calls))
    }

    async fn replay(
        &self,
        request: &ChatRequest,
        sink: &mut StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        let (turn, tool_calls) = self.take_turn(request)?;
        if !turn.delay.is_zero() {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
                () = tokio::time::sleep(turn.delay) => {}
            }
        }
        let usage = turn
            .usage
            .unwrap_or_else(|| estimate_usage(request, &turn.text, &tool_calls));
        let mut partial = ChatResponse {
            text: String::new(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            stop: StopReason::Other("aborted".into()),
        };
        let mut send = |event: StreamEvent, partial: &ChatResponse| match sink(&event) {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(reason) => Err(LlmError::Aborted {
                reason,
                partial: Box::new(partial.clone()),
            }),
        };
        if !turn.text.is_empty() {
            partial.text.clone_from(&turn.text);
            send(StreamEvent::TextDelta(turn.text.clone()), &partial)?;
        }
        for call in &tool_calls {
            partial.tool_calls.push(call.clone());
            let started = StreamEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            };
            send(started, &partial)?;
            if !call.raw_arguments.is_empty() {
                let delta = StreamEvent::ToolArgumentsDelta(call.raw_arguments.clone());
                send(delta, &partial)?;
            }
        }
        partial.usage = usage;
        send(StreamEvent::Usage(usage), &partial)?;
        let stop = if tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        Ok(ChatResponse {
            text: turn.text.clone(),
            tool_calls,
            usage,
            stop,
        })
    }
}

impl ModelClient for ScriptClient {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        sink: &'a mut StreamSink<'_>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(self.replay(request, sink, cancel))
    }
}

impl Turn {
    fn from_spec(spec: TurnSpec, path: &Path) -> Result<Turn, LlmError> {
        let line = spec.agent.referenced.line();
        let at = |line: u64| format!("script `{}` line {line}", path.display());
        let pattern = match spec.pattern {
            Some(pattern) => Some(Regex::new(&pattern.value).map_err(|e| {
                let line = pattern.referenced.line();
                LlmError::Config(format!("{}: invalid `match` regex: {e}", at(line)))
            })?),
            None => None,
        };
        let mut tool_calls = Vec::with_capacity(spec.tool_calls.len());
        for call in spec.tool_calls {
            let raw = match (call.arguments, call.raw_arguments) {
                (Some(_), Some(_)) => {
                    return Err(LlmError::Config(format!(
                        "{}: tool call `{}` has both `arguments` and `raw_arguments`; keep one",
                        at(call.name.referenced.line()),
                        call.name.value
                    )));
                }
                (Some(value), None) => value.to_string(),
                (None, Some(raw)) => raw,
                (None, None) => "{}".to_owned(),
            };
            tool_calls.push((call.name.value, raw));
        }
        Ok(Turn {
            agent: spec.agent.value,
            line,
            pattern,
            text: spec.text.unwrap_or_default(),
            tool_calls,
            usage: spec.usage.map(|u| Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cache_read_tokens: u.cache_read_tokens,
                cache_write_tokens: u.cache_write_tokens,
            }),
            repeat: spec.repeat,
            delay: Duration::from_millis(spec.delay_ms),
        })
    }
}

/// The input a turn's `match` is tested against: the last user message's text, or the joined
/// contents of the tool results that end the conversation.
fn latest_input(messages: &[Message]) -> String {
    match messages.last() {
        Some(Message::User { text }) => text.clone(),
        Some(Message::ToolResult { .. }) => {
            let trailing: Vec<&str> = messages
                .iter()
                .rev()
                .map_while(|m| match m {
                    Message::ToolResult { content, .. } => Some(content.as_str()),
                    _ => None,
                })
                .collect();
            trailing.into_iter().rev().collect::<Vec<_>>().join("\n")
        }
        Some(Message::Assistant { .. }) | None => String::new(),
    }
}

/// About four characters a token, rounded up: input is the whole prompt, output the answer.
fn estimate_usage(request: &ChatRequest, text: &str, calls: &[ToolCall]) -> Usage {
    let prompt_chars: usize = request.system.chars().count()
        + request
            .messages
            .iter()
            .map(|m| match m {
                Message::User { text } => text.chars().count(),
                Message::Assistant { text, tool_calls } => {
                    text.chars().count() + tool_calls.iter().map(call_chars).sum::<usize>()
                }
                Message::ToolResult { content, .. } => content.chars().count(),
            })
            .sum::<usize>();
    let answer_chars = text.chars().count() + calls.iter().map(call_chars).sum::<usize>();
    Usage {
        input_tokens: prompt_chars.div_ceil(4) as u64,
        output_tokens: answer_chars.div_ceil(4) as u64,
        ..Usage::default()
    }
}

fn call_chars(call: &ToolCall) -> usize {
    call.name.chars().count() + call.raw_arguments.chars().count()
}

/// The largest script file read, in bytes.
const MAX_SCRIPT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a regular file of at most `limit` bytes as text (the one file this crate reads: a link
/// to `/dev/zero` or a FIFO must end in an error, not a hang or an allocation without end).
fn read_bounded(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    if !std::fs::metadata(path)?.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut text = String::new();
    file.take(limit.saturating_add(1))
        .read_to_string(&mut text)?;
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > limit {
        return Err(Error::new(
            ErrorKind::FileTooLarge,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_result(content: &str) -> Message {
        Message::ToolResult {
            call_id: "c".into(),
            name: "t".into(),
            content: content.into(),
            is_error: false,
        }
    }

    #[test]
    fn latest_input_is_the_last_user_text_or_the_trailing_results() {
        let user = Message::User {
            text: "task".into(),
        };
        let assistant = Message::Assistant {
            text: String::new(),
            tool_calls: vec![],
        };
        assert_eq!(latest_input(std::slice::from_ref(&user)), "task");
        let messages = [
            user.clone(),
            assistant.clone(),
            tool_result("a"),
            tool_result("b"),
        ];
        assert_eq!(latest_input(&messages), "a\nb");
        assert_eq!(latest_input(&[user, assistant]), "");
        assert_eq!(latest_input(&[]), "");
    }

    #[test]
    fn usage_estimate_rounds_up() {
        let request = ChatRequest {
            model: "m".into(),
            system: "12345".into(),
            messages: vec![Message::User { text: "abc".into() }],
            tools: vec![],
            max_tokens: None,
            temperature: None,
            agent: "a".into(),
            unit: None,
        };
        let usage = estimate_usage(&request, "hello", &[]);
        assert_eq!((usage.input_tokens, usage.output_tokens), (2, 2));
    }
}
