//! pi (`pi -p --mode json`): its command line, its isolated environment (`PI_CODING_AGENT_DIR`
//! with baton's `settings.json` and, for a provider the user configured, `models.json`) and its
//! event stream.
//!
//! Isolation: `--no-session --no-extensions --no-skills --no-prompt-templates
//! --no-context-files --no-themes`, `PI_OFFLINE=1`. pi has no permission system: read-only roles
//! get only `read,grep,find,ls`; writing roles get pi's default tools, bash included, with no
//! allowlist (documented in docs/cli-workers.md). The system prompt is appended from a file. The
//! trap: pi exits 0 even when every retry failed, so the verdict reads `auto_retry_end` and the
//! last assistant message's `stopReason`, not the exit code.

use super::stream::{Activity, StreamParser, Tally, no_result, str_of, u64_of};
use super::{Invocation, Launch};
use baton_llm::Usage;
use serde_json::{Value, json};

/// The variable `models.json` names for the key of a provider baton configured.
pub const KEY_VAR: &str = "BATON_PI_API_KEY";
/// The tools of a read-only role.
pub const READ_TOOLS: &str = "read,grep,find,ls";

/// The variable pi reads a built-in provider's key from (`anthropic` → `ANTHROPIC_API_KEY`).
pub fn provider_key_var(provider: &str) -> String {
    let up: String = provider
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{up}_API_KEY")
}

/// The command line, environment and files of one run.
pub fn invocation(l: &Launch<'_>) -> Invocation {
    let agent_dir = l.home.join(".pi").join("agent");
    let system_file = l.home.join("system-prompt.md");
    let provider = l.provider.unwrap_or("anthropic");
    let mut args: Vec<String> = [
        "-p",
        "--mode",
        "json",
        "--no-session",
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-context-files",
        "--no-themes",
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(["--provider".into(), provider.to_owned()]);
    if !l.model.is_empty() {
        args.extend(["--model".into(), l.model.to_owned()]);
    }
    args.extend([
        "--append-system-prompt".into(),
        system_file.display().to_string(),
    ]);
    if l.read_only {
        args.extend(["--tools".into(), READ_TOOLS.into()]);
    }
    args.push(super::prompt_arg(l.task));
    let settings = json!({
        "retry": { "enabled": l.settings.max_retries > 0, "maxRetries": l.settings.max_retries, "baseDelayMs": 500 },
        "compaction": { "enabled": false },
    });
    let mut files = vec![
        (agent_dir.join("settings.json"), settings.to_string()),
        (system_file, l.system.to_owned()),
    ];
    let mut secret_env = Vec::new();
    if let Some(url) = &l.settings.base_url {
        let api = l.settings.api.as_deref().unwrap_or("openai-completions");
        let mut entry = json!({
            "baseUrl": url,
            "api": api,
            "apiKey": KEY_VAR,
            "models": [{ "id": l.model, "contextWindow": 200_000, "maxTokens": 8192 }],
        });
        if api == "openai-completions" {
            entry["compat"] =
                json!({ "supportsDeveloperRole": false, "supportsReasoningEffort": false });
        }
        files.push((
            agent_dir.join("models.json"),
            json!({ "providers": { provider: entry } }).to_string(),
        ));
        secret_env.push((
            KEY_VAR.to_owned(),
            l.settings
                .api_key
                .as_ref()
                .map_or_else(|| "none".to_owned(), |k| k.expose().to_owned()),
        ));
    } else if let Some(k) = &l.settings.api_key {
        secret_env.push((provider_key_var(provider), k.expose().to_owned()));
    }
    Invocation {
        args,
        env: vec![
            ("HOME".to_owned(), l.home.display().to_string()),
            (
                "PI_CODING_AGENT_DIR".to_owned(),
                agent_dir.display().to_string(),
            ),
            ("PI_OFFLINE".to_owned(), "1".to_owned()),
            ("PI_TELEMETRY".to_owned(), "0".to_owned()),
        ],
        secret_env,
        files,
    }
}

/// Reads pi's `--mode json` events.
#[derive(Debug, Default)]
pub struct Parser {
    /// The newest assistant message ended in an error, and its message.
    last_error: Option<String>,
    /// `auto_retry_end{success:false}`: every retry failed.
    retries_failed: Option<String>,
}

impl StreamParser for Parser {
    fn event(&mut self, ev: &Value, t: &mut Tally) -> Activity {
        match str_of(ev, "type") {
            "turn_start" => t.turn(),
            "message_end" => {
                let msg = ev.get("message").unwrap_or(&Value::Null);
                if str_of(msg, "role") != "assistant" {
                    return Activity::Progress;
                }
                let u = msg.get("usage").unwrap_or(&Value::Null);
                t.usage.add(&Usage {
                    input_tokens: u64_of(u, "input"),
                    output_tokens: u64_of(u, "output"),
                    cache_read_tokens: u64_of(u, "cacheRead"),
                    cache_write_tokens: u64_of(u, "cacheWrite"),
                });
                if let Some(c) = u.pointer("/cost/total").and_then(Value::as_f64) {
                    t.cli_cost = Some(t.cli_cost.unwrap_or(0.0) + c);
                }
                let text: Vec<&str> = msg
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|b| str_of(b, "type") == "text")
                    .map(|b| str_of(b, "text"))
                    .collect();
                let text = text.join("\n");
                if !text.trim().is_empty() {
                    t.summary = text;
                }
                if str_of(msg, "stopReason") == "error" {
                    let m = str_of(msg, "errorMessage");
                    t.errors.push(m.to_owned());
                    self.last_error = Some(m.to_owned());
                } else {
                    self.last_error = None;
                }
            }
            "tool_execution_start" => t.tool(str_of(ev, "toolName")),
            "auto_retry_start" => t.errors.push(format!(
                "retry {} of {}: {}",
                u64_of(ev, "attempt"),
                u64_of(ev, "maxAttempts"),
                str_of(ev, "errorMessage")
            )),
            "auto_retry_end" if ev.get("success") == Some(&Value::Bool(false)) => {
                self.retries_failed = Some(str_of(ev, "finalError").to_owned());
            }
            "agent_end" => t.finished = true,
            _ => {}
        }
        Activity::Progress
    }

    fn verdict(&self, t: &Tally, exit: Option<i32>, stderr_tail: &str) -> Result<(), String> {
        // pi exits 0 even when every retry failed.
        if let Some(e) = &self.retries_failed {
            return Err(format!("model API error (every retry failed): {e}"));
        }
        if let Some(e) = &self.last_error {
            return Err(format!("model API error: {e}"));
        }
        match (t.finished, exit) {
            (true, Some(0)) => Ok(()),
            _ => Err(no_result("pi", exit, stderr_tail)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::replay;
    use super::*;

    #[test]
    fn a_write_run_sums_the_usage_of_every_assistant_message() {
        let (t, v) = replay(Parser::default(), "pi/write-anthropic.jsonl", Some(0));
        assert_eq!(v, Ok(()));
        assert_eq!(t.tool_calls, 1);
        assert_eq!(t.turns, 2);
        assert_eq!(
            (t.usage.input_tokens, t.usage.output_tokens),
            (1409 + 1511, 49 + 18)
        );
        assert_eq!(t.summary, "DONE: Successfully wrote 26 bytes to mock.txt");
    }

    #[test]
    fn exit_zero_after_failed_retries_is_a_failure() {
        let (t, v) = replay(Parser::default(), "pi/server-down.jsonl", Some(0));
        assert!(t.finished);
        assert_eq!(
            v.unwrap_err(),
            "model API error (every retry failed): Connection error."
        );
    }

    #[test]
    fn a_failed_command_is_activity_not_failure() {
        let (t, v) = replay(Parser::default(), "pi/fail-command-openai.jsonl", Some(0));
        assert_eq!(v, Ok(()));
        assert!(t.summary.starts_with("DONE: ls: cannot access"));
    }

    #[test]
    fn key_variables_follow_the_provider_name() {
        assert_eq!(provider_key_var("anthropic"), "ANTHROPIC_API_KEY");
        assert_eq!(provider_key_var("open-router"), "OPEN_ROUTER_API_KEY");
    }
}
