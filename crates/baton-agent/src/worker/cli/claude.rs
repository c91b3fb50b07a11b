//! Claude Code (`claude -p --output-format stream-json --verbose`): its command line, its
//! isolated environment, the settings file that carries baton's hooks, and its event stream.
//!
//! Isolation: HOME and `CLAUDE_CONFIG_DIR` under the run's state directory, `--setting-sources ""`
//! (no user or project settings, no project CLAUDE.md), `--strict-mcp-config` (no MCP servers),
//! `--no-session-persistence`, and only baton's `--settings` file. Tools: read-only roles get
//! `Read` alone and the default permission mode (which denies writes); writing roles get
//! `Read,Write,Edit,Bash` with `acceptEdits`, and Bash pre-approved only for the programs of
//! baton's command allowlist. The trap: an unreachable API ends in a `result` with
//! `subtype:"success"` and `is_error:true`, so the verdict reads `is_error`, not `subtype`.

use super::stream::{Activity, Note, StreamParser, Tally, no_result, str_of, u64_of};
use super::{Invocation, Launch};
use baton_llm::Usage;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The variable of a Claude subscription's token, passed under its own name.
pub const OAUTH_VAR: &str = "CLAUDE_CODE_OAUTH_TOKEN";
/// The tools of a writing role.
pub const WRITE_TOOLS: &str = "Read,Write,Edit,Bash";
/// The tools of a read-only role.
pub const READ_TOOLS: &str = "Read";
/// The tools baton's PreToolUse hook checks.
pub const HOOKED_TOOLS: &str = "Write|Edit|MultiEdit|NotebookEdit|Bash";

/// The settings file baton gives Claude Code: its policy hooks, when there is a hook command.
pub fn settings(policy_hook: Option<&str>) -> Value {
    match policy_hook {
        Some(cmd) => {
            let handler = json!([{ "type": "command", "command": cmd }]);
            json!({ "hooks": {
                "PreToolUse": [{ "matcher": HOOKED_TOOLS, "hooks": handler }],
                "PostToolUse": [{ "matcher": HOOKED_TOOLS, "hooks": handler }],
                "PostToolUseFailure": [{ "matcher": "Bash", "hooks": handler }],
            }})
        }
        None => json!({}),
    }
}

/// The command line, environment and files of one run.
pub fn invocation(l: &Launch<'_>) -> Invocation {
    let settings_file = l.home.join("baton-settings.json");
    let mut args: Vec<String> = vec![
        "-p".into(),
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
        "--setting-sources".into(),
        String::new(),
        "--strict-mcp-config".into(),
        "--no-session-persistence".into(),
        "--settings".into(),
        settings_file.display().to_string(),
        "--max-turns".into(),
        l.max_turns.to_string(),
        "--append-system-prompt".into(),
        l.system.to_owned(),
    ];
    if !l.model.is_empty() {
        args.extend(["--model".into(), l.model.to_owned()]);
    }
    if l.read_only {
        args.extend([
            "--tools".into(),
            READ_TOOLS.into(),
            "--permission-mode".into(),
            "default".into(),
        ]);
    } else {
        args.extend([
            "--tools".into(),
            WRITE_TOOLS.into(),
            "--permission-mode".into(),
            "acceptEdits".into(),
        ]);
        let allowed: Vec<String> = l
            .allow_commands
            .iter()
            .filter(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
            })
            .flat_map(|p| [format!("Bash({p})"), format!("Bash({p} *)")])
            .collect();
        if !allowed.is_empty() {
            args.push("--allowedTools".into());
            args.push(allowed.join(","));
        }
    }
    // After `--`, a task can never be read as a flag or as a value of one.
    args.push("--".into());
    args.push(l.task.to_owned());
    let home = l.home.display().to_string();
    let mut env = vec![
        ("HOME".to_owned(), home.clone()),
        ("CLAUDE_CONFIG_DIR".to_owned(), format!("{home}/.claude")),
        (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_owned(),
            "1".to_owned(),
        ),
        ("DISABLE_TELEMETRY".to_owned(), "1".to_owned()),
        ("DISABLE_ERROR_REPORTING".to_owned(), "1".to_owned()),
        ("DISABLE_AUTOUPDATER".to_owned(), "1".to_owned()),
        (
            "CLAUDE_CODE_MAX_RETRIES".to_owned(),
            l.settings.max_retries.to_string(),
        ),
    ];
    if let Some(url) = &l.settings.base_url {
        env.push(("ANTHROPIC_BASE_URL".to_owned(), url.clone()));
    }
    // A subscription's long-lived token (`claude setup-token`) goes in under its own name.
    let key_var = match l.settings.api_key_env.as_deref() {
        Some(OAUTH_VAR) => OAUTH_VAR,
        _ => "ANTHROPIC_API_KEY",
    };
    let secret_env = l
        .settings
        .api_key
        .as_ref()
        .map(|k| (key_var.to_owned(), k.expose().to_owned()))
        .into_iter()
        .collect();
    Invocation {
        args,
        env,
        secret_env,
        files: vec![(settings_file, settings(l.policy_hook).to_string())],
    }
}

/// Reads Claude Code's stream-json events.
#[derive(Debug, Default)]
pub struct Parser {
    /// Usage of each assistant message seen (one line per content block shares an id).
    messages: BTreeMap<String, (Usage, u64)>,
    /// Tool names by call id, to name refusals.
    calls: BTreeMap<String, String>,
    /// The `result` event said `is_error`.
    is_error: bool,
    /// `result.subtype` and `terminal_reason`.
    subtype: String,
    terminal: String,
    /// The result carried usage totals.
    result_usage: bool,
}

/// An Anthropic `usage` object: `input_tokens` excludes the cache, as baton counts it.
fn usage_of(u: &Value) -> Usage {
    Usage {
        input_tokens: u64_of(u, "input_tokens"),
        output_tokens: u64_of(u, "output_tokens"),
        cache_read_tokens: u64_of(u, "cache_read_input_tokens"),
        cache_write_tokens: u64_of(u, "cache_creation_input_tokens"),
    }
}

/// The 1-hour cache writes of an Anthropic `usage` object (`cache_creation` splits the writes by
/// lifetime).
fn one_hour_writes_of(u: &Value) -> u64 {
    u.get("cache_creation")
        .map_or(0, |c| u64_of(c, "ephemeral_1h_input_tokens"))
}

/// The sum of the result's `modelUsage` (every model the run called, subagents included, which
/// the result's `usage` leaves out), with its 1-hour cache writes; `None` when it has none.
fn model_usage_of(m: &Value) -> Option<(Usage, u64)> {
    let models = m.as_object().filter(|o| !o.is_empty())?;
    let mut total = Usage::default();
    let mut one_hour = 0;
    for u in models.values() {
        total.add(&Usage {
            input_tokens: u64_of(u, "inputTokens"),
            output_tokens: u64_of(u, "outputTokens"),
            cache_read_tokens: u64_of(u, "cacheReadInputTokens"),
            cache_write_tokens: u64_of(u, "cacheCreationInputTokens"),
        });
        one_hour += u64_of(u, "cacheCreationEphemeral1hInputTokens");
    }
    Some((total, one_hour))
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

impl StreamParser for Parser {
    fn event(&mut self, ev: &Value, t: &mut Tally) -> Activity {
        match (str_of(ev, "type"), str_of(ev, "subtype")) {
            ("system", "api_retry") => {
                t.errors.push(format!(
                    "API retry {} of {}: {}",
                    u64_of(ev, "attempt"),
                    u64_of(ev, "max_retries"),
                    str_of(ev, "error")
                ));
            }
            ("system", "permission_denied") => t.notes.push(Note::Refused {
                tool: str_of(ev, "tool_name").to_owned(),
                reason: str_of(ev, "message").to_owned(),
            }),
            ("assistant", _) => {
                let Some(msg) = ev.get("message") else {
                    return Activity::Progress;
                };
                let id = str_of(msg, "id").to_owned();
                if !self.messages.contains_key(&id) {
                    t.turn();
                }
                if !self.result_usage {
                    let u = msg.get("usage").unwrap_or(&Value::Null);
                    self.messages
                        .insert(id, (usage_of(u), one_hour_writes_of(u)));
                    t.usage = Usage::default();
                    t.one_hour_cache_writes = 0;
                    for (usage, one_hour) in self.messages.values() {
                        t.usage.add(usage);
                        t.one_hour_cache_writes += one_hour;
                    }
                }
                for block in msg
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match str_of(block, "type") {
                        "text" => {
                            let text = str_of(block, "text");
                            if !text.trim().is_empty() {
                                t.summary = text.to_owned();
                            }
                        }
                        "tool_use" => {
                            let name = str_of(block, "name");
                            self.calls
                                .insert(str_of(block, "id").to_owned(), name.to_owned());
                            t.tool(name);
                        }
                        _ => {}
                    }
                }
            }
            ("user", _) => {
                let content = ev.pointer("/message/content").and_then(Value::as_array);
                for block in content.into_iter().flatten() {
                    if str_of(block, "type") == "tool_result"
                        && block.get("is_error") == Some(&Value::Bool(true))
                    {
                        let text = text_of(block.get("content").unwrap_or(&Value::Null));
                        if text.contains("hook error") || text.contains("PreToolUse") {
                            let tool = self
                                .calls
                                .get(str_of(block, "tool_use_id"))
                                .cloned()
                                .unwrap_or_default();
                            t.notes.push(Note::Refused { tool, reason: text });
                        }
                    }
                }
            }
            ("result", subtype) => {
                t.finished = true;
                self.subtype = subtype.to_owned();
                self.terminal = str_of(ev, "terminal_reason").to_owned();
                self.is_error = ev.get("is_error") == Some(&Value::Bool(true));
                let result = str_of(ev, "result");
                if !result.trim().is_empty() {
                    t.summary = result.to_owned();
                }
                // modelUsage is the whole run's accounting; `usage` only the main loop's.
                if let Some((usage, one_hour)) = ev.get("modelUsage").and_then(model_usage_of) {
                    self.result_usage = true;
                    t.usage = usage;
                    t.one_hour_cache_writes = one_hour;
                } else if let Some(u) = ev.get("usage") {
                    self.result_usage = true;
                    t.usage = usage_of(u);
                    t.one_hour_cache_writes = one_hour_writes_of(u);
                }
                t.cli_cost = ev.get("total_cost_usd").and_then(Value::as_f64);
                if let Some(n) = ev.get("num_turns").and_then(Value::as_u64) {
                    t.turns = t.turns.max(u32::try_from(n).unwrap_or(u32::MAX));
                }
                if self.is_error || subtype != "success" {
                    let why = match self.terminal.as_str() {
                        "max_turns" => format!("reached max_turns ({subtype})"),
                        "api_error" => format!("model API error: {result}"),
                        other => {
                            format!("claude-code reported an error ({subtype}, {other}): {result}")
                        }
                    };
                    t.failure = Some(why);
                }
            }
            _ => {}
        }
        Activity::Progress
    }

    fn verdict(&self, t: &Tally, exit: Option<i32>, stderr_tail: &str) -> Result<(), String> {
        if !t.finished {
            return Err(no_result("claude-code", exit, stderr_tail));
        }
        if let Some(f) = &t.failure {
            return Err(f.clone());
        }
        match exit {
            Some(0) => Ok(()),
            other => Err(no_result("claude-code", other, stderr_tail)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::replay;
    use super::*;

    #[test]
    fn a_write_run_is_read_to_its_result() {
        let (t, v) = replay(Parser::default(), "claude-code/write.jsonl", Some(0));
        assert_eq!(v, Ok(()));
        assert!(
            t.summary.starts_with("DONE: File created successfully"),
            "{}",
            t.summary
        );
        assert_eq!(t.tool_calls, 1);
        assert_eq!(t.turns, 2);
        assert_eq!((t.usage.input_tokens, t.usage.output_tokens), (25470, 78));
        assert_eq!(t.cli_cost, Some(0.10344));
        assert!(t.notes.contains(&Note::ToolCall("Write".into())));
    }

    #[test]
    fn cache_figures_are_read_apart_and_model_usage_counts_subagents_too() {
        let assistant = |id: &str, read: u64, written: u64, one_hour: u64| {
            serde_json::json!({"type": "assistant", "message": {"id": id, "content": [],
                "usage": {"input_tokens": 10, "output_tokens": 5,
                          "cache_read_input_tokens": read,
                          "cache_creation_input_tokens": written,
                          "cache_creation": {"ephemeral_5m_input_tokens": written - one_hour,
                                             "ephemeral_1h_input_tokens": one_hour}}}})
        };
        let mut p = Parser::default();
        let mut t = Tally::default();
        p.event(&assistant("m1", 0, 3000, 1000), &mut t);
        p.event(&assistant("m2", 3000, 200, 0), &mut t);
        // While the run goes: the main loop's messages, the cache apart from the input.
        assert_eq!(
            t.usage,
            Usage {
                input_tokens: 20,
                output_tokens: 10,
                cache_read_tokens: 3000,
                cache_write_tokens: 3200,
            }
        );
        assert_eq!(t.one_hour_cache_writes, 1000);
        // At the end, modelUsage: the main model and a subagent's.
        p.event(
            &serde_json::json!({"type": "result", "subtype": "success", "is_error": false,
                "result": "done", "num_turns": 2,
                "usage": {"input_tokens": 20, "output_tokens": 10,
                          "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 3200},
                "modelUsage": {
                    "claude-sonnet-4-5": {"inputTokens": 20, "outputTokens": 10,
                        "cacheReadInputTokens": 3000, "cacheCreationInputTokens": 3200,
                        "cacheCreationEphemeral1hInputTokens": 1000},
                    "claude-haiku-4-5": {"inputTokens": 7, "outputTokens": 1,
                        "cacheReadInputTokens": 100, "cacheCreationInputTokens": 0}}}),
            &mut t,
        );
        assert_eq!(
            t.usage,
            Usage {
                input_tokens: 27,
                output_tokens: 11,
                cache_read_tokens: 3100,
                cache_write_tokens: 3200,
            }
        );
        assert_eq!(t.one_hour_cache_writes, 1000);
    }

    #[test]
    fn an_unreachable_api_is_a_failure_despite_subtype_success() {
        let (t, v) = replay(
            Parser::default(),
            "claude-code/server-down-maxretries1.jsonl",
            Some(1),
        );
        let why = v.unwrap_err();
        assert!(
            why.starts_with("model API error: API Error: Connection refused"),
            "{why}"
        );
        assert!(
            t.errors[0].starts_with("API retry 1 of 1"),
            "{:?}",
            t.errors
        );
        // Even with exit code 0 the `is_error` flag decides.
        let (_, v) = replay(
            Parser::default(),
            "claude-code/server-down-maxretries1.jsonl",
            Some(0),
        );
        assert!(v.is_err());
    }

    #[test]
    fn max_turns_is_a_failure() {
        let (_, v) = replay(Parser::default(), "claude-code/max-turns-1.jsonl", Some(1));
        assert!(v.unwrap_err().contains("max_turns"));
    }

    #[test]
    fn a_hook_refusal_is_noted() {
        let (t, v) = replay(
            Parser::default(),
            "claude-code/write-blocked-by-hook.jsonl",
            Some(0),
        );
        assert_eq!(v, Ok(()));
        assert!(
            t.notes.iter().any(|n| matches!(n, Note::Refused { tool, reason } if tool == "Write" && reason.contains("blocked by baton policy"))),
            "{:?}",
            t.notes
        );
    }

    #[test]
    fn a_cut_off_stream_has_no_result() {
        let (t, v) = replay(Parser::default(), "claude-code/write.jsonl", None);
        assert!(t.finished);
        assert!(v.unwrap_err().contains("killed by a signal"));
    }

    #[test]
    fn hooks_go_to_the_policy_command_only_when_there_is_one() {
        let s = settings(Some("baton guard --policy"));
        assert_eq!(s["hooks"]["PreToolUse"][0]["matcher"], HOOKED_TOOLS);
        assert_eq!(
            s["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "baton guard --policy"
        );
        assert_eq!(settings(None), json!({}));
    }
}
