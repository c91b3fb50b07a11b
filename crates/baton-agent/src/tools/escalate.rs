//! `escalate`: the agent asks a human to decide, with 2–4 options.
//!
//! The tool returns at once; the loop sees the escalation on the result and ends the agent as
//! `escalated`, and the engine records it and pauses the run until `baton answer`.

use super::{BoxFuture, Escalation, Tool, ToolContext, ToolResult, str_arg};
use baton_llm::ToolSpec;
use serde_json::json;

/// The `escalate` tool.
pub struct Escalate;

impl Tool for Escalate {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "escalate".into(),
            description: "Stop and ask a human to decide. Use when blocked, or facing a decision you must not make alone. Give a short title, what you found, and 2 to 4 concrete options (the first one is your recommendation).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "description": "Short title of the decision"},
                    "finding": {"type": "string", "description": "What you found, with evidence"},
                    "options": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 4,
                                "description": "2 to 4 options; the first is your recommendation"}
                },
                "required": ["title", "finding", "options"]
            }),
        }
    }

    fn writes(&self) -> bool {
        false
    }

    fn call<'a>(
        &'a self,
        args: &'a serde_json::Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let title = match str_arg(args, "title") {
                Ok(t) => t.trim().to_owned(),
                Err(e) => return e,
            };
            let finding = match str_arg(args, "finding") {
                Ok(t) => t.trim().to_owned(),
                Err(e) => return e,
            };
            let options: Vec<String> = args
                .get("options")
                .and_then(|o| o.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str())
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            if !(2..=4).contains(&options.len()) {
                return ToolResult::error(format!(
                    "`options` must hold 2 to 4 non-empty strings, got {}",
                    options.len()
                ));
            }
            if title.is_empty() {
                return ToolResult::error("`title` is empty");
            }
            ToolResult {
                content: "Escalated to a human. Stop here; the run resumes with their answer."
                    .into(),
                is_error: false,
                escalation: Some(Escalation {
                    title,
                    finding,
                    options,
                }),
            }
        })
    }
}
