//! The guard chain: every tool call is inspected before it runs.
//!
//! Each inspector returns allow, ask (a human should confirm) or deny with a reason; the strictest
//! verdict wins. The sandbox (path jail) and the command allowlist are the first two; the TDD
//! guard ([`crate::tdd`]) joins the same chain when the project turns it on. A deny is returned to
//! the model as a tool error. Inspectors also see each call's result ([`ToolInspector::observe`]),
//! so a guard can learn from what ran (the TDD guard records test runs there). The chain also
//! carries context sources ([`ContextSource`], such as the context rules of [`crate::rules`]):
//! before each model call they may add a late user-context message.

use crate::sandbox::Access;
use crate::tools::{Tool, ToolContext, ToolResult};

/// An inspector's answer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// A human should confirm (auto-confirmed in YOLO mode).
    Ask(String),
    /// Refused, with the reason given to the model.
    Deny(String),
}

/// A call about to run.
pub struct Inspected<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// The tool.
    pub tool: &'a dyn Tool,
    /// Its arguments.
    pub args: &'a serde_json::Value,
    /// The run's context.
    pub ctx: &'a ToolContext,
}

/// One inspector.
pub trait ToolInspector: Send + Sync {
    /// Its name, for transcripts.
    fn name(&self) -> &'static str;
    /// Inspects one call.
    fn inspect(&self, call: &Inspected<'_>) -> Verdict;
    /// Sees the result of a call that was allowed and ran (default: nothing).
    fn observe(&self, _call: &Inspected<'_>, _result: &ToolResult) {}
}

/// Something that may add a late user-context message before a model call.
pub trait ContextSource: Send + Sync {
    /// Its name, for transcripts.
    fn name(&self) -> &'static str;
    /// The message to add before model call `turn` (from 1), given the tail of the agent's
    /// recent output (`None`: nothing to add).
    fn context(&self, recent: &str, turn: u32) -> Option<String>;
}

/// The path jail: every path argument must resolve inside the workspace, and so must every other
/// path the tool may open for it ([`Tool::path_alternatives`]).
pub struct SandboxGuard;

impl ToolInspector for SandboxGuard {
    fn name(&self) -> &'static str {
        "sandbox"
    }

    fn inspect(&self, call: &Inspected<'_>) -> Verdict {
        let access = if call.tool.writes() {
            Access::Write
        } else {
            Access::Read
        };
        for arg in call.tool.path_args() {
            let values: Vec<&str> = match call.args.get(*arg) {
                Some(serde_json::Value::String(s)) => vec![s.as_str()],
                Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_str()).collect(),
                _ => Vec::new(),
            };
            for v in values {
                for path in std::iter::once(v).chain(call.tool.path_alternatives(v)) {
                    if let Err(refusal) = call.ctx.sandbox.resolve(path, access) {
                        return Verdict::Deny(refusal.to_string());
                    }
                }
            }
        }
        Verdict::Allow
    }
}

/// The command allowlist of `run_command`.
pub struct CommandGuard;

impl ToolInspector for CommandGuard {
    fn name(&self) -> &'static str {
        "command-allowlist"
    }

    fn inspect(&self, call: &Inspected<'_>) -> Verdict {
        if call.name != "run_command" {
            return Verdict::Allow;
        }
        let program = call
            .args
            .get("program")
            .and_then(|p| p.as_str())
            .unwrap_or_default();
        match crate::tools::command::check_program(program, &call.ctx.commands) {
            Ok(()) => Verdict::Allow,
            Err(reason) => Verdict::Deny(reason),
        }
    }
}

/// Refuses every writing tool (reviewers, scouts, the router).
pub struct ReadOnlyGuard;

impl ToolInspector for ReadOnlyGuard {
    fn name(&self) -> &'static str {
        "read-only"
    }

    fn inspect(&self, call: &Inspected<'_>) -> Verdict {
        if call.tool.writes() {
            Verdict::Deny(format!(
                "`{}` can change the project and agent `{}` is read-only",
                call.name, call.ctx.agent
            ))
        } else {
            Verdict::Allow
        }
    }
}

/// Inspectors in order; the strictest verdict wins.
#[derive(Default)]
pub struct GuardChain {
    inspectors: Vec<Box<dyn ToolInspector>>,
    context: Vec<Box<dyn ContextSource>>,
}

impl GuardChain {
    /// The standard chain: sandbox, command allowlist, and read-only if asked.
    pub fn standard(read_only: bool) -> GuardChain {
        let mut chain = GuardChain::default();
        chain.push(Box::new(SandboxGuard));
        chain.push(Box::new(CommandGuard));
        if read_only {
            chain.push(Box::new(ReadOnlyGuard));
        }
        chain
    }

    /// Adds an inspector at the end.
    pub fn push(&mut self, inspector: Box<dyn ToolInspector>) {
        self.inspectors.push(inspector);
    }

    /// Adds a context source.
    pub fn push_context(&mut self, source: Box<dyn ContextSource>) {
        self.context.push(source);
    }

    /// Lets every inspector see the result of an allowed call.
    pub fn observe(&self, call: &Inspected<'_>, result: &ToolResult) {
        for i in &self.inspectors {
            i.observe(call, result);
        }
    }

    /// The late context messages of every source for model call `turn`.
    pub fn late_context(&self, recent: &str, turn: u32) -> Vec<String> {
        self.context
            .iter()
            .filter_map(|c| c.context(recent, turn))
            .collect()
    }

    /// The strictest verdict of all inspectors, with the name of the one that gave it.
    pub fn check(&self, call: &Inspected<'_>) -> (Verdict, Option<&'static str>) {
        let mut worst = (Verdict::Allow, None);
        for i in &self.inspectors {
            let v = i.inspect(call);
            if v > worst.0 {
                worst = (v, Some(i.name()));
            }
        }
        worst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictest_verdict_wins() {
        assert!(Verdict::Deny("a".into()) > Verdict::Ask("b".into()));
        assert!(Verdict::Ask("b".into()) > Verdict::Allow);
    }
}
