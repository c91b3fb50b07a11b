//! Hooks a BMad skill or step file declares in its YAML frontmatter, read into values.
//!
//! The format is Claude Code's skill hooks, with three additions: a command may be a list of
//! words (a string is split into words, quotes respected, and never given to a shell), a hook
//! may be `critical` (its failure stops the run instead of being logged), and `once` (run once
//! per session, for SessionStart set-up):
//!
//! ```yaml
//! hooks:
//!   SessionStart:
//!     - hooks:
//!         - command: ["python3", "scripts/setup.py"]
//!           once: true
//!   PreToolUse:
//!     - matcher: "run_command|write_file"   # a regex on the whole tool name; absent = all
//!       hooks:
//!         - command: "scripts/check.sh --strict"
//!           critical: true
//!           timeout: 30                     # seconds; 60 when absent
//!   PostToolUse: [...]
//!   Stop: [...]
//! ```
//!
//! `type: command` is accepted and ignored; any other type, an unknown event or key, an empty
//! command, an unterminated quote or a matcher that is not a regex is an error naming where it
//! is (`hooks.PreToolUse[0].hooks[1].command`). Running a hook is baton-agent's job
//! (`baton_agent::hooks`); this module only reads them and says which apply.

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// The timeout of a hook that names none, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// The longest timeout a hook may ask for, in seconds (a day).
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Event {
    /// When a session (a `baton bmad` run) starts.
    SessionStart,
    /// Before a tool call.
    PreToolUse,
    /// After a tool call.
    PostToolUse,
    /// When the step ends, before the next one.
    Stop,
}

impl Event {
    /// Every event, in the order a step meets them.
    pub const ALL: [Event; 4] = [
        Event::SessionStart,
        Event::PreToolUse,
        Event::PostToolUse,
        Event::Stop,
    ];

    /// Its name as written in frontmatter.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::Stop => "Stop",
        }
    }

    /// Whether its hooks are about a tool call (and so may have a matcher).
    pub fn has_tool(self) -> bool {
        matches!(self, Event::PreToolUse | Event::PostToolUse)
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Event {
    type Err = String;

    /// The event's exact name (`PreToolUse`), or a message listing them.
    fn from_str(s: &str) -> Result<Event, String> {
        Event::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown hook event `{s}`; expected one of SessionStart, PreToolUse, PostToolUse, Stop"
                )
            })
    }
}

/// One hook: a program to run at an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hook {
    /// When it runs.
    pub event: Event,
    /// A regex the whole tool name must match (PreToolUse and PostToolUse only); `None` for all.
    pub matcher: Option<String>,
    /// The program and its arguments, never given to a shell.
    pub argv: Vec<String>,
    /// Whether its failure stops the run (otherwise it is logged and the run goes on).
    pub critical: bool,
    /// Whether it runs once per session only.
    pub once: bool,
    /// How long it may run, in seconds.
    pub timeout_secs: u64,
}

/// Frontmatter whose hooks cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// The frontmatter is not YAML.
    #[error("the frontmatter is not valid YAML: {0}")]
    Yaml(String),
    /// A hook, or the part of one at `at`, is not valid.
    #[error("`{at}`: {message}")]
    Invalid {
        /// Where: `hooks.PreToolUse[0].hooks[1].command`.
        at: String,
        /// What is wrong.
        message: String,
    },
}

fn invalid(at: &str, message: impl Into<String>) -> HookError {
    HookError::Invalid {
        at: at.to_owned(),
        message: message.into(),
    }
}

/// The hooks declared in `frontmatter_yaml` (the YAML between a file's `---` lines; other keys
/// are ignored), in the order written. No `hooks` key means no hooks.
pub fn parse(frontmatter_yaml: &str) -> Result<Vec<Hook>, HookError> {
    if frontmatter_yaml.trim().is_empty() {
        return Ok(Vec::new());
    }
    let doc: Value = serde_saphyr::from_str(frontmatter_yaml).map_err(|e| {
        HookError::Yaml(
            e.to_string()
                .lines()
                .next()
                .unwrap_or("invalid YAML")
                .to_owned(),
        )
    })?;
    let hooks = match &doc {
        Value::Null => return Ok(Vec::new()),
        Value::Object(map) => match map.get("hooks") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(h) => h,
        },
        _ => return Err(HookError::Yaml("the frontmatter is not a mapping".into())),
    };
    let Value::Object(events) = hooks else {
        return Err(invalid(
            "hooks",
            format!(
                "must map event names to lists of hook groups, not {}",
                kind(hooks)
            ),
        ));
    };
    let mut out = Vec::new();
    for (name, groups) in events {
        let at = format!("hooks.{name}");
        let event: Event = name.parse().map_err(|m: String| invalid(&at, m))?;
        let groups = match groups {
            Value::Null => continue,
            Value::Array(g) => g,
            other => {
                return Err(invalid(
                    &at,
                    format!("must be a list of hook groups, not {}", kind(other)),
                ));
            }
        };
        for (gi, group) in groups.iter().enumerate() {
            parse_group(event, &format!("{at}[{gi}]"), group, &mut out)?;
        }
    }
    Ok(out)
}

/// One `{matcher, hooks}` group.
fn parse_group(
    event: Event,
    at: &str,
    group: &Value,
    out: &mut Vec<Hook>,
) -> Result<(), HookError> {
    let Value::Object(map) = group else {
        return Err(invalid(
            at,
            format!("must be a mapping with `hooks`, not {}", kind(group)),
        ));
    };
    if let Some(key) = map
        .keys()
        .find(|k| !["matcher", "hooks"].contains(&k.as_str()))
    {
        return Err(invalid(
            at,
            format!("unknown key `{key}`; a hook group has `matcher` and `hooks`"),
        ));
    }
    let matcher = match map.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m.trim().is_empty() || m.trim() == "*" => None,
        Some(Value::String(m)) => {
            let mat = format!("{at}.matcher");
            if !event.has_tool() {
                return Err(invalid(
                    &mat,
                    format!("a matcher selects tools, and {event} hooks run without one"),
                ));
            }
            Regex::new(&anchored(m))
                .map_err(|e| invalid(&mat, format!("`{m}` is not a valid regex: {e}")))?;
            Some(m.clone())
        }
        Some(other) => {
            return Err(invalid(
                &format!("{at}.matcher"),
                format!(
                    "must be a string (a regex on the tool name), not {}",
                    kind(other)
                ),
            ));
        }
    };
    let hooks_at = format!("{at}.hooks");
    let hooks = match map.get("hooks") {
        Some(Value::Array(h)) => h,
        None | Some(Value::Null) => return Err(invalid(at, "has no `hooks` list")),
        Some(other) => {
            return Err(invalid(
                &hooks_at,
                format!("must be a list of hooks, not {}", kind(other)),
            ));
        }
    };
    for (hi, hook) in hooks.iter().enumerate() {
        out.push(parse_hook(
            event,
            matcher.clone(),
            &format!("{hooks_at}[{hi}]"),
            hook,
        )?);
    }
    Ok(())
}

const HOOK_KEYS: [&str; 5] = ["type", "command", "critical", "once", "timeout"];

fn parse_hook(
    event: Event,
    matcher: Option<String>,
    at: &str,
    hook: &Value,
) -> Result<Hook, HookError> {
    let Value::Object(map) = hook else {
        return Err(invalid(
            at,
            format!("must be a mapping with `command`, not {}", kind(hook)),
        ));
    };
    if let Some(key) = map.keys().find(|k| !HOOK_KEYS.contains(&k.as_str())) {
        return Err(invalid(
            at,
            format!(
                "unknown key `{key}`; a hook has {}",
                HOOK_KEYS.map(|k| format!("`{k}`")).join(", ")
            ),
        ));
    }
    match map.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "command" => {}
        Some(other) => {
            return Err(invalid(
                &format!("{at}.type"),
                format!(
                    "only `command` hooks run here, not {}",
                    match other {
                        Value::String(t) => format!("`{t}`"),
                        v => kind(v).to_owned(),
                    }
                ),
            ));
        }
    }
    let cmd_at = format!("{at}.command");
    let argv = match map.get("command") {
        None | Some(Value::Null) => return Err(invalid(at, "has no `command`")),
        Some(Value::String(s)) => split_words(s).map_err(|m| invalid(&cmd_at, m))?,
        Some(Value::Array(words)) => words
            .iter()
            .enumerate()
            .map(|(i, w)| match w {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                Value::Bool(b) => Ok(b.to_string()),
                other => Err(invalid(
                    &format!("{cmd_at}[{i}]"),
                    format!("must be a string, not {}", kind(other)),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(invalid(
                &cmd_at,
                format!("must be a string or a list of words, not {}", kind(other)),
            ));
        }
    };
    match argv.first() {
        None => return Err(invalid(&cmd_at, "the command is empty")),
        Some(p) if p.trim().is_empty() => {
            return Err(invalid(&cmd_at, "the program name is empty"));
        }
        Some(_) => {}
    }
    if argv.iter().any(|w| w.contains('\0')) {
        return Err(invalid(&cmd_at, "the command holds a NUL byte"));
    }
    let flag = |key: &str| -> Result<bool, HookError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(invalid(
                &format!("{at}.{key}"),
                format!("must be true or false, not {}", kind(other)),
            )),
        }
    };
    let critical = flag("critical")?;
    let once = flag("once")?;
    let timeout_secs = match map.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_SECS,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(t) if (1..=MAX_TIMEOUT_SECS).contains(&t) => t,
            _ => {
                return Err(invalid(
                    &format!("{at}.timeout"),
                    format!(
                        "must be a whole number of seconds from 1 to {MAX_TIMEOUT_SECS}, not {n}"
                    ),
                ));
            }
        },
        Some(other) => {
            return Err(invalid(
                &format!("{at}.timeout"),
                format!("must be a number of seconds, not {}", kind(other)),
            ));
        }
    };
    Ok(Hook {
        event,
        matcher,
        argv,
        critical,
        once,
        timeout_secs,
    })
}

/// Whether `hook` runs at `event` for a call of `tool` (`None` outside tool calls): the event
/// must be the hook's, and a matcher must match the whole tool name.
pub fn applies(hook: &Hook, event: Event, tool: Option<&str>) -> bool {
    if hook.event != event {
        return false;
    }
    let Some(matcher) = &hook.matcher else {
        return true;
    };
    let Some(tool) = tool else {
        return false;
    };
    // A matcher that does not compile (a hook built by hand) matches nothing.
    Regex::new(&anchored(matcher)).is_ok_and(|re| re.is_match(tool))
}

/// The matcher as a regex on the whole name: `Write` is not `WriteFile`.
fn anchored(matcher: &str) -> String {
    format!("^(?:{matcher})$")
}

/// Splits a command line into words as a POSIX shell would, with no expansion of any kind:
/// whitespace separates words; '…' keeps everything literally; "…" keeps everything but `\"`,
/// `\\`, `\$` and `` \` ``; a backslash outside quotes keeps the next character. `;`, `|`, `$(…)`,
/// globs are plain characters.
pub fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => word.push(ch),
                        None => return Err("unterminated single quote (')".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\' | '$' | '`')) => word.push(ch),
                            Some(ch) => {
                                word.push('\\');
                                word.push(ch);
                            }
                            None => return Err("unterminated double quote (\")".into()),
                        },
                        Some(ch) => word.push(ch),
                        None => return Err("unterminated double quote (\")".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(ch) => word.push(ch),
                    None => return Err("the command ends with a lone backslash".into()),
                }
            }
            ch => {
                in_word = true;
                word.push(ch);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// A YAML value's kind, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
name: bmad-create-prd
description: writes the PRD
hooks:
  SessionStart:
    - hooks:
        - command: ["python3", "scripts/setup.py"]
          once: true
  PreToolUse:
    - matcher: "run_command|write_file"
      hooks:
        - type: command
          command: "scripts/check.sh --strict 'two words'"
          critical: true
          timeout: 30
    - hooks:
        - command: audit
  PostToolUse:
    - matcher: "*"
      hooks:
        - command: [lint, 3, true]
  Stop:
    - hooks:
        - command: ./scripts/stop.sh
"#;

    fn hook(event: Event, argv: &[&str]) -> Hook {
        Hook {
            event,
            matcher: None,
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            critical: false,
            once: false,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
        }
    }

    #[test]
    fn reads_every_event_in_the_order_written() {
        let hooks = parse(FULL).unwrap();
        let want = vec![
            Hook {
                once: true,
                ..hook(Event::SessionStart, &["python3", "scripts/setup.py"])
            },
            Hook {
                matcher: Some("run_command|write_file".into()),
                critical: true,
                timeout_secs: 30,
                ..hook(
                    Event::PreToolUse,
                    &["scripts/check.sh", "--strict", "two words"],
                )
            },
            hook(Event::PreToolUse, &["audit"]),
            hook(Event::PostToolUse, &["lint", "3", "true"]),
            hook(Event::Stop, &["./scripts/stop.sh"]),
        ];
        assert_eq!(hooks, want);
    }

    #[test]
    fn no_hooks_is_no_hooks() {
        for yaml in [
            "",
            "  \n",
            "name: x\n",
            "hooks:\n",
            "hooks:\n  Stop:\n",
            "hooks: {}\n",
        ] {
            assert_eq!(parse(yaml).unwrap(), [], "{yaml:?}");
        }
    }

    #[test]
    fn errors_name_where_and_what() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "hooks:\n  PreToolUse:\n    - hooks:\n        - command: a\n        - command: []\n",
                "hooks.PreToolUse[0].hooks[1].command",
                "the command is empty",
            ),
            (
                "hooks:\n  UserPromptSubmit:\n    - hooks:\n        - command: a\n",
                "hooks.UserPromptSubmit",
                "unknown hook event `UserPromptSubmit`",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: \"a 'b\"\n",
                "hooks.Stop[0].hooks[0].command",
                "unterminated single quote",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: 'a \"b'\n",
                "hooks.Stop[0].hooks[0].command",
                "unterminated double quote",
            ),
            (
                "hooks:\n  PreToolUse:\n    - matcher: \"run_(\"\n      hooks:\n        - command: a\n",
                "hooks.PreToolUse[0].matcher",
                "is not a valid regex",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: a\n          critcal: true\n",
                "hooks.Stop[0].hooks[0]",
                "unknown key `critcal`",
            ),
            (
                "hooks:\n  Stop:\n    - matchers: x\n      hooks: []\n",
                "hooks.Stop[0]",
                "unknown key `matchers`",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - type: prompt\n          command: a\n",
                "hooks.Stop[0].hooks[0].type",
                "only `command` hooks run here, not `prompt`",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: a\n          timeout: 0\n",
                "hooks.Stop[0].hooks[0].timeout",
                "whole number of seconds",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: a\n          timeout: 1.5\n",
                "hooks.Stop[0].hooks[0].timeout",
                "whole number of seconds",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: a\n          critical: \"yes\"\n",
                "hooks.Stop[0].hooks[0].critical",
                "must be true or false",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - once: true\n",
                "hooks.Stop[0].hooks[0]",
                "has no `command`",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: \"  \"\n",
                "hooks.Stop[0].hooks[0].command",
                "the command is empty",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: [\"\", x]\n",
                "hooks.Stop[0].hooks[0].command",
                "the program name is empty",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: [a, {b: c}]\n",
                "hooks.Stop[0].hooks[0].command[1]",
                "must be a string",
            ),
            (
                "hooks:\n  Stop:\n    - matcher: Bash\n      hooks:\n        - command: a\n",
                "hooks.Stop[0].matcher",
                "a matcher selects tools",
            ),
            (
                "hooks:\n  Stop:\n    - {}\n",
                "hooks.Stop[0]",
                "has no `hooks` list",
            ),
            (
                "hooks:\n  Stop: a\n",
                "hooks.Stop",
                "must be a list of hook groups",
            ),
            ("hooks: [a]\n", "hooks", "must map event names"),
        ];
        for (yaml, at, message) in cases {
            match parse(yaml) {
                Err(HookError::Invalid { at: a, message: m }) => {
                    assert_eq!(&a, at, "{yaml}");
                    assert!(m.contains(message), "{yaml}: {m}");
                }
                other => panic!("{yaml}: {other:?}"),
            }
        }
        assert!(matches!(parse("hooks: [\n"), Err(HookError::Yaml(_))));
        assert!(matches!(parse("- a\n"), Err(HookError::Yaml(_))));
    }

    #[test]
    fn words_split_like_a_shell_without_expanding_anything() {
        let cases: &[(&str, &[&str])] = &[
            ("a b  c", &["a", "b", "c"]),
            ("a 'b c' d", &["a", "b c", "d"]),
            (r#"a "b \"c\" \$x \n" d"#, &["a", r#"b "c" $x \n"#, "d"]),
            (r"a\ b c\\d", &["a b", r"c\d"]),
            ("x''y \"\"", &["xy", ""]),
            (
                "echo hi; rm -rf $(pwd) `id` | cat",
                &["echo", "hi;", "rm", "-rf", "$(pwd)", "`id`", "|", "cat"],
            ),
            ("  ", &[]),
        ];
        for (line, want) in cases {
            assert_eq!(split_words(line).unwrap(), *want, "{line}");
        }
        for bad in ["'a", "\"a", "a\\"] {
            assert!(split_words(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_hook_applies_to_its_event_and_to_the_tools_its_matcher_names_whole() {
        let hooks = parse(FULL).unwrap();
        let (start, pre, pre_all, post, stop) =
            (&hooks[0], &hooks[1], &hooks[2], &hooks[3], &hooks[4]);
        let cases: &[(&Hook, Event, Option<&str>, bool)] = &[
            (start, Event::SessionStart, None, true),
            (start, Event::Stop, None, false),
            (pre, Event::PreToolUse, Some("run_command"), true),
            (pre, Event::PreToolUse, Some("write_file"), true),
            (pre, Event::PreToolUse, Some("read_file"), false),
            (pre, Event::PreToolUse, Some("run_command_x"), false),
            (pre, Event::PreToolUse, Some("xrun_command"), false),
            (pre, Event::PreToolUse, None, false),
            (pre, Event::PostToolUse, Some("run_command"), false),
            (pre_all, Event::PreToolUse, Some("anything"), true),
            (post, Event::PostToolUse, Some("read_file"), true),
            (stop, Event::Stop, None, true),
        ];
        for (i, (hook, event, tool, want)) in cases.iter().enumerate() {
            assert_eq!(applies(hook, *event, *tool), *want, "case {i}");
        }
        let broken = Hook {
            matcher: Some("(".into()),
            ..hook(Event::PreToolUse, &["a"])
        };
        assert!(!applies(&broken, Event::PreToolUse, Some("(")));
    }

    #[test]
    fn event_names_read_back() {
        for e in Event::ALL {
            assert_eq!(e.as_str().parse::<Event>(), Ok(e));
        }
        assert!("pretooluse".parse::<Event>().is_err());
    }
}
