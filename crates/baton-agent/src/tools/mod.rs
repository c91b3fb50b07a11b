//! Tools an agent can call: the trait, the result type, and the toolbox that hands each agent
//! only the tools its definition lists.
//!
//! Every tool describes itself with a JSON schema for the model, says whether it writes (read-only
//! agents such as reviewers and scouts never get a writing tool), and names the arguments that are
//! paths so the sandbox guard can check them before the tool runs.

pub mod command;
pub mod escalate;
pub mod fs;
pub mod git;
pub mod sections;

use crate::sandbox::Sandbox;
use baton_llm::ToolSpec;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A boxed future (tools are chosen at run time).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Settings of `run_command` (from `baton.toml` `[commands]`).
#[derive(Debug, Clone)]
pub struct CommandPolicy {
    /// Programs that may be run (bare names looked up on PATH, or paths inside the project).
    pub allow: Vec<String>,
    /// Timeout of one command.
    pub timeout: Duration,
    /// Output kept (stdout and stderr together), in bytes; the rest is cut with a marker.
    pub max_output_bytes: usize,
    /// Environment variables removed from every command's environment (the providers' API key
    /// variables), so an agent's program cannot read a secret.
    pub env_remove: Vec<String>,
}

impl Default for CommandPolicy {
    fn default() -> Self {
        CommandPolicy {
            allow: [
                "cargo", "git", "ls", "cat", "echo", "python3", "npm", "node", "make", "go",
                "pytest",
            ]
            .map(str::to_owned)
            .to_vec(),
            timeout: Duration::from_secs(300),
            max_output_bytes: 30_000,
            env_remove: Vec::new(),
        }
    }
}

/// What a tool sees of the run.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace root (the project, or a story's worktree).
    pub root: PathBuf,
    /// The path jail.
    pub sandbox: Arc<Sandbox>,
    /// `run_command` settings.
    pub commands: CommandPolicy,
    /// Cancellation of the whole agent run.
    pub cancel: CancellationToken,
    /// The agent's name (for journaling and messages).
    pub agent: String,
}

/// An escalation raised by the `escalate` tool.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Escalation {
    /// Short title.
    pub title: String,
    /// What was found.
    pub finding: String,
    /// 2–4 options for the human.
    pub options: Vec<String>,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// Text returned to the model.
    pub content: String,
    /// Whether it failed (the model sees it as an error and may try again).
    pub is_error: bool,
    /// Set by `escalate`: the run stops and waits for a human.
    pub escalation: Option<Escalation>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> ToolResult {
        ToolResult {
            content: content.into(),
            is_error: false,
            escalation: None,
        }
    }

    /// A failed result, returned to the model.
    pub fn error(content: impl Into<String>) -> ToolResult {
        ToolResult {
            content: content.into(),
            is_error: true,
            escalation: None,
        }
    }
}

/// A tool.
pub trait Tool: Send + Sync {
    /// Name, description and argument schema for the model.
    fn spec(&self) -> ToolSpec;
    /// Whether it can change files, the sprint or anything else (read-only agents never get it).
    fn writes(&self) -> bool;
    /// Names of arguments that are paths inside the workspace (checked by the sandbox guard).
    fn path_args(&self) -> &'static [&'static str] {
        &[]
    }
    /// Other paths a path argument's `value` may open instead of itself (`read_file` reads
    /// `file.md#Heading` from `file.md` when no file has the whole name); the sandbox guard
    /// checks them as it checks the value.
    fn path_alternatives<'v>(&self, _value: &'v str) -> Vec<&'v str> {
        Vec::new()
    }
    /// Whether what it writes is confined to the files its path arguments name (so an agent's
    /// changed files can be found by asking git about those files only).
    fn writes_only_its_paths(&self) -> bool {
        false
    }
    /// Runs the call. Invalid arguments are a tool error, never a panic.
    fn call<'a>(
        &'a self,
        args: &'a serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult>;
}

/// Reads a required string argument.
pub fn str_arg<'a>(args: &'a serde_json::Value, name: &str) -> Result<&'a str, ToolResult> {
    args.get(name)
        .and_then(|v| v.as_str())
        .ok_or_else(|| ToolResult::error(format!("missing string argument `{name}`")))
}

/// Tools by name.
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl Toolbox {
    /// An empty toolbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a tool.
    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    /// Looks a tool up.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// All tool names.
    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// The subset named (unknown names are returned as the error).
    pub fn select(&self, names: &[String]) -> Result<Toolbox, Vec<String>> {
        let mut out = Toolbox::new();
        let mut unknown = Vec::new();
        for n in names {
            match self.tools.get(n) {
                Some(t) => {
                    out.tools.insert(n.clone(), t.clone());
                }
                None => unknown.push(n.clone()),
            }
        }
        if unknown.is_empty() {
            Ok(out)
        } else {
            Err(unknown)
        }
    }

    /// Specs for the model, in name order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|t| t.spec()).collect()
    }

    /// The names of the tools that write, in name order.
    pub fn writing_names(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|(_, t)| t.writes())
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Removes every writing tool (for read-only agents).
    pub fn read_only(mut self) -> Toolbox {
        self.tools.retain(|_, t| !t.writes());
        self
    }

    /// The standard tools of this crate (file, command, git, escalate).
    pub fn standard() -> Toolbox {
        let mut b = Toolbox::new();
        for t in fs::all() {
            b.add(t);
        }
        b.add(Arc::new(command::RunCommand));
        b.add(Arc::new(git::RunGitDiff));
        b.add(Arc::new(escalate::Escalate));
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both wires take tool names of 1 to 64 characters from `A-Z a-z 0-9 _ -` and an object
    /// schema; a tool outside that would make every request that offers it fail.
    #[test]
    fn every_standard_tool_fits_the_wires_limits() {
        let specs = Toolbox::standard().specs();
        assert!(!specs.is_empty());
        for spec in specs {
            let name = &spec.name;
            assert!(
                (1..=64).contains(&name.len())
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "tool name `{name}`"
            );
            assert_eq!(spec.parameters["type"], "object", "schema of `{name}`");
            assert!(
                !spec.description.trim().is_empty(),
                "description of `{name}`"
            );
        }
    }
}
