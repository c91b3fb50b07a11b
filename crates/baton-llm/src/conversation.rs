//! The conversation as the model APIs accept it, whatever the caller's message list holds.
//!
//! Both wires refuse a request whose turns do not pair up: Anthropic's Messages API wants roles
//! alternating from `user`, every `tool_use` of an assistant turn answered by a `tool_result` in
//! the very next user turn (results before any text), no empty text and unique `tool_use` ids;
//! OpenAI's chat completions want every `tool_calls` id answered by a `tool` message right after
//! its assistant message, and no `tool` message without its call. A caller's list can break these
//! in ways no model caused: a run stopped between a call and its result, a text note added after
//! the results, a provider that reuses ids from turn to turn, a transcript carried over from
//! another provider. [`turns`] folds any list into [`Turn`]s that keep every rule, and both wire
//! encoders render those turns, so the rules live in one place:
//!
//! - whitespace-only texts and empty assistant answers are dropped;
//! - consecutive messages of one role are one turn (assistant texts joined);
//! - a call left without a result gets an error result saying it was not carried out;
//! - a result whose call is not in the turn just before is kept as a plain text note;
//! - call ids are made unique and limited to `[A-Za-z0-9_-]`, results following their call;
//! - a conversation that opens with the assistant is preceded by a short user turn.

use crate::types::{Message, ToolCall};
use std::collections::HashSet;

/// The result text sent for a call that has no result.
pub(crate) const MISSING_RESULT: &str =
    "No result: this tool call was not carried out (the run stopped before it).";

/// The text sent for a result whose content is empty (the APIs refuse empty content).
pub(crate) const EMPTY_RESULT: &str = "(no output)";

/// The user turn placed before a conversation that opens with the assistant.
pub(crate) const OPENING: &str = "Continue.";

/// A tool call as sent: the wire id and the call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireCall<'a> {
    /// The id on the wire (unique in the request).
    pub id: String,
    /// The call.
    pub call: &'a ToolCall,
}

/// A tool result as sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireResult<'a> {
    /// The wire id of the call it answers.
    pub id: String,
    /// The result text (never empty).
    pub content: &'a str,
    /// Whether the tool failed or was refused.
    pub is_error: bool,
}

/// One turn of the conversation as the wires send it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Turn<'a> {
    /// The user's side: results of the previous assistant turn's calls (all of them, in call
    /// order), then texts.
    User {
        /// Tool results, in the order of the calls they answer.
        results: Vec<WireResult<'a>>,
        /// Texts, none of them blank.
        texts: Vec<String>,
    },
    /// The model's side: its text (may be empty when it made calls) and its calls.
    Assistant {
        /// The text.
        text: String,
        /// The calls.
        calls: Vec<WireCall<'a>>,
    },
}

/// The state of the fold: the turns so far and the ids already used.
#[derive(Default)]
struct Fold<'a> {
    turns: Vec<Turn<'a>>,
    used_ids: HashSet<String>,
}

impl<'a> Fold<'a> {
    /// A wire id for `id`: its allowed characters, unique in the request.
    fn wire_id(&mut self, id: &str) -> String {
        let mut base: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() {
            base.push_str("call");
        }
        let mut candidate = base.clone();
        let mut n = 2;
        while self.used_ids.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        self.used_ids.insert(candidate.clone());
        candidate
    }

    /// The calls of the assistant turn that the last user turn answers (or would answer), with
    /// whether the last turn is that user turn.
    fn open_calls(&self) -> Option<&[WireCall<'a>]> {
        let n = self.turns.len();
        match self.turns.last() {
            Some(Turn::Assistant { calls, .. }) if !calls.is_empty() => Some(calls),
            Some(Turn::User { .. }) if n >= 2 => match &self.turns[n - 2] {
                Turn::Assistant { calls, .. } if !calls.is_empty() => Some(calls),
                _ => None,
            },
            _ => None,
        }
    }

    /// The last turn as a user turn, opening one when the last is the assistant's.
    fn user_turn(&mut self) -> (&mut Vec<WireResult<'a>>, &mut Vec<String>) {
        if !matches!(self.turns.last(), Some(Turn::User { .. })) {
            self.turns.push(Turn::User {
                results: Vec::new(),
                texts: Vec::new(),
            });
        }
        match self.turns.last_mut() {
            Some(Turn::User { results, texts }) => (results, texts),
            _ => unreachable!("a user turn was just ensured"),
        }
    }

    /// Answers every call of the open assistant turn that has no result yet, and puts the
    /// results in call order.
    fn close_calls(&mut self) {
        let Some(calls) = self.open_calls() else {
            return;
        };
        let order: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
        let (results, _) = self.user_turn();
        for id in &order {
            if !results.iter().any(|r| &r.id == id) {
                results.push(WireResult {
                    id: id.clone(),
                    content: MISSING_RESULT,
                    is_error: true,
                });
            }
        }
        results.sort_by_key(|r| order.iter().position(|id| *id == r.id));
    }

    fn user_text(&mut self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let (_, texts) = self.user_turn();
        texts.push(text.to_owned());
    }

    fn assistant(&mut self, text: &str, tool_calls: &'a [ToolCall]) {
        let text = if text.trim().is_empty() { "" } else { text };
        if text.is_empty() && tool_calls.is_empty() {
            return;
        }
        self.close_calls();
        let calls: Vec<WireCall<'a>> = tool_calls
            .iter()
            .map(|call| WireCall {
                id: self.wire_id(&call.id),
                call,
            })
            .collect();
        match self.turns.last_mut() {
            // An earlier answer without calls: this one continues it.
            Some(Turn::Assistant {
                text: previous,
                calls: previous_calls,
            }) if previous_calls.is_empty() => {
                if !text.is_empty() {
                    if !previous.is_empty() {
                        previous.push_str("\n\n");
                    }
                    previous.push_str(text);
                }
                *previous_calls = calls;
            }
            _ => self.turns.push(Turn::Assistant {
                text: text.to_owned(),
                calls,
            }),
        }
    }

    fn result(&mut self, call_id: &str, name: &str, content: &'a str, is_error: bool) {
        let content = if content.is_empty() {
            EMPTY_RESULT
        } else {
            content
        };
        // The first call of the open turn with this id that has no result yet.
        let answered: Vec<String> = match self.turns.last() {
            Some(Turn::User { results, .. }) => results.iter().map(|r| r.id.clone()).collect(),
            _ => Vec::new(),
        };
        let target = self.open_calls().and_then(|calls| {
            calls
                .iter()
                .find(|c| c.call.id == call_id && !answered.contains(&c.id))
                .map(|c| c.id.clone())
        });
        match target {
            Some(id) => {
                let (results, _) = self.user_turn();
                results.push(WireResult {
                    id,
                    content,
                    is_error,
                });
            }
            None => {
                let status = if is_error { " (failed)" } else { "" };
                let (_, texts) = self.user_turn();
                texts.push(format!(
                    "Result of an earlier `{name}` call{status}:\n{content}"
                ));
            }
        }
    }
}

/// `messages` as turns every wire accepts (see the module documentation).
pub(crate) fn turns(messages: &[Message]) -> Vec<Turn<'_>> {
    let mut fold = Fold::default();
    for message in messages {
        match message {
            Message::User { text } => {
                // Text may follow results, never open a turn the results must open.
                fold.user_text(text);
            }
            Message::Assistant { text, tool_calls } => fold.assistant(text, tool_calls),
            Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => fold.result(call_id, name, content, *is_error),
        }
    }
    fold.close_calls();
    if matches!(fold.turns.first(), Some(Turn::Assistant { .. })) {
        fold.turns.insert(
            0,
            Turn::User {
                results: Vec::new(),
                texts: vec![OPENING.to_owned()],
            },
        );
    }
    fold.turns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::User { text: text.into() }
    }

    fn assistant(text: &str, calls: &[(&str, &str)]) -> Message {
        Message::Assistant {
            text: text.into(),
            tool_calls: calls
                .iter()
                .map(|(id, name)| ToolCall::new(*id, *name, "{}"))
                .collect(),
        }
    }

    fn result(id: &str, content: &str) -> Message {
        Message::ToolResult {
            call_id: id.into(),
            name: "read_file".into(),
            content: content.into(),
            is_error: false,
        }
    }

    /// (role, result ids, texts) or (role, call ids, text), for compact assertions.
    fn shape(turns: &[Turn<'_>]) -> Vec<String> {
        turns
            .iter()
            .map(|turn| match turn {
                Turn::User { results, texts } => {
                    let ids: Vec<String> = results
                        .iter()
                        .map(|r| format!("{}={}", r.id, r.content))
                        .collect();
                    format!("user [{}] {:?}", ids.join(" "), texts)
                }
                Turn::Assistant { text, calls } => {
                    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
                    format!("assistant [{}] {text:?}", ids.join(" "))
                }
            })
            .collect()
    }

    #[test]
    fn each_assistant_turn_is_followed_by_its_results() {
        let messages = vec![
            user("task"),
            assistant("", &[("a", "read_file")]),
            result("a", "A"),
            assistant("", &[("b", "read_file")]),
            result("b", "B"),
            assistant("", &[("c", "read_file"), ("d", "write_file")]),
            result("d", "D"),
            result("c", "C"),
            assistant("done", &[]),
        ];
        assert_eq!(
            shape(&turns(&messages)),
            [
                "user [] [\"task\"]",
                "assistant [a] \"\"",
                "user [a=A] []",
                "assistant [b] \"\"",
                "user [b=B] []",
                "assistant [c d] \"\"",
                "user [c=C d=D] []",
                "assistant [] \"done\"",
            ]
        );
    }

    #[test]
    fn a_call_without_a_result_is_answered_as_not_carried_out() {
        let messages = vec![
            user("task"),
            assistant("", &[("a", "read_file"), ("b", "read_file")]),
            result("a", "A"),
            user("the run was resumed"),
        ];
        assert_eq!(
            shape(&turns(&messages)),
            [
                "user [] [\"task\"]".to_owned(),
                "assistant [a b] \"\"".to_owned(),
                format!("user [a=A b={MISSING_RESULT}] [\"the run was resumed\"]"),
            ]
        );
    }

    #[test]
    fn a_result_without_its_call_becomes_a_note() {
        let messages = vec![user("task"), result("zz", "old"), user("")];
        assert_eq!(
            shape(&turns(&messages)),
            ["user [] [\"task\", \"Result of an earlier `read_file` call:\\nold\"]"]
        );
    }

    #[test]
    fn ids_are_unique_and_use_allowed_characters() {
        let messages = vec![
            user("task"),
            assistant("", &[("call_0", "read_file")]),
            result("call_0", "A"),
            assistant("", &[("call_0", "read_file"), ("fc.1:x", "grep")]),
            result("call_0", "B"),
            result("fc.1:x", "C"),
        ];
        assert_eq!(
            shape(&turns(&messages)),
            [
                "user [] [\"task\"]",
                "assistant [call_0] \"\"",
                "user [call_0=A] []",
                "assistant [call_0_2 fc_1_x] \"\"",
                "user [call_0_2=B fc_1_x=C] []",
            ]
        );
    }

    #[test]
    fn blank_texts_and_empty_answers_are_dropped_and_turns_merged() {
        let messages = vec![
            assistant("I start.", &[]),
            user("  "),
            assistant("", &[]),
            assistant("Then read.", &[("a", "read_file")]),
            result("a", ""),
            user("note one"),
            user("note two"),
        ];
        assert_eq!(
            shape(&turns(&messages)),
            [
                format!("user [] [\"{OPENING}\"]"),
                "assistant [a] \"I start.\\n\\nThen read.\"".to_owned(),
                format!("user [a={EMPTY_RESULT}] [\"note one\", \"note two\"]"),
            ]
        );
    }

    #[test]
    fn calls_at_the_end_are_answered() {
        let messages = vec![user("task"), assistant("", &[("a", "read_file")])];
        assert_eq!(
            shape(&turns(&messages)),
            [
                "user [] [\"task\"]".to_owned(),
                "assistant [a] \"\"".to_owned(),
                format!("user [a={MISSING_RESULT}] []"),
            ]
        );
    }
}
