//! Coding-agent CLIs as workers: Claude Code, Codex and pi driven by baton under the same
//! outcome, budget, timeouts and enforcement as the native loop.
//!
//! A [`CliWorker`] spawns the CLI without a shell, in its own process group, in the workspace,
//! with stdin closed and an environment built from nothing: `PATH`, a HOME (and the CLI's own
//! configuration directory) under the run's state directory, the CLI's switches against
//! telemetry and updates, and only the credential the user configured for it (never logged).
//! Its JSON-lines stream is read line by line (partial lines kept, unknown events ignored),
//! saved raw beside the native transcripts, and mapped by the CLI's parser ([`claude`],
//! [`codex`], [`pi`]) into turns, tool activity, usage and a verdict. Bounds: the agent's
//! timeout, a stall timeout (no progress event for a while), max turns counted from the events,
//! the run's budget checked on every usage update, and cancellation; a breach sends SIGTERM to
//! the group, then SIGKILL after a grace period, and keeps what was streamed so far. The CLI
//! dies with baton (a parent-death signal) and its group is recorded under the state directory
//! while it runs, so a later run ends what a killed baton left ([`end_orphaned_workers`],
//! `crate::process`). Changed
//! files come from the workspace's git, never from the CLI's claims; cost is the CLI's own
//! where it is meaningful, else baton's price table (the transcript says which).

pub mod claude;
pub mod codex;
pub mod pi;
pub mod project;
pub mod stream;

use super::{BoxFuture, Job, Worker};
use crate::outcome::{Outcome, Status, halt_reason};
use crate::process::{GroupKiller, GroupRecord};
use crate::runner::{AgentEvent, Budget, CallFn, CallRecord, EventFn, Mode};
use crate::transcript::Transcript;
use crate::workspace::Workspace;
use baton_core::budget::{BudgetState, Spend};
use baton_llm::pricing::{Price, cost_usd_split};
pub use project::ProjectConfig;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use stream::{Activity, Note, StreamParser, Tally};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A coding-agent CLI baton can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cli {
    /// Anthropic's Claude Code (`claude`).
    ClaudeCode,
    /// OpenAI's Codex (`codex`).
    Codex,
    /// pi (`pi`, npm `@mariozechner/pi-coding-agent`).
    Pi,
}

impl Cli {
    /// Every CLI.
    pub const ALL: [Cli; 3] = [Cli::ClaudeCode, Cli::Codex, Cli::Pi];

    /// The backend prefix of model strings (`claude-code/…`).
    pub fn name(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "claude-code",
            Cli::Codex => "codex",
            Cli::Pi => "pi",
        }
    }

    /// The program name looked up on PATH.
    pub fn program(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "claude",
            Cli::Codex => "codex",
            Cli::Pi => "pi",
        }
    }

    /// The npm package and the version baton is tested against.
    pub fn package(self) -> (&'static str, &'static str) {
        match self {
            Cli::ClaudeCode => ("@anthropic-ai/claude-code", "2.1.330"),
            Cli::Codex => ("@openai/codex", "0.169.0"),
            Cli::Pi => ("@mariozechner/pi-coding-agent", "0.73.1"),
        }
    }

    /// The CLI a backend prefix names.
    pub fn from_name(name: &str) -> Option<Cli> {
        Cli::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The variable a user's key for this CLI usually lives in.
    pub fn default_key_env(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "ANTHROPIC_API_KEY",
            Cli::Codex => "OPENAI_API_KEY",
            Cli::Pi => "ANTHROPIC_API_KEY",
        }
    }
}

impl std::fmt::Display for Cli {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A model string that names a CLI: `claude-code/MODEL`, `codex/MODEL`, `pi/PROVIDER/MODEL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// The CLI.
    pub cli: Cli,
    /// pi's provider.
    pub provider: Option<String>,
    /// The model as the CLI names it (may be empty: the CLI's default).
    pub model: String,
}

impl Backend {
    /// `None` when `model` names no CLI; `Some(Err)` with the reason when it names one badly.
    pub fn parse(model: &str) -> Option<Result<Backend, String>> {
        let (head, rest) = model.split_once('/').unwrap_or((model, ""));
        let cli = Cli::from_name(head)?;
        let bad = |why: &str| Some(Err(format!("model `{model}`: {why}")));
        if rest.chars().any(char::is_control) {
            return bad("control characters are not allowed");
        }
        if rest.starts_with('-') || rest.contains("/-") {
            return bad("a model name may not start with `-`");
        }
        Some(Ok(match cli {
            Cli::Pi => {
                let Some((provider, m)) = rest.split_once('/') else {
                    return bad("pi models are `pi/PROVIDER/MODEL`");
                };
                if provider.is_empty() || m.is_empty() {
                    return bad("pi models are `pi/PROVIDER/MODEL`");
                }
                Backend {
                    cli,
                    provider: Some(provider.to_owned()),
                    model: m.to_owned(),
                }
            }
            _ => Backend {
                cli,
                provider: None,
                model: rest.to_owned(),
            },
        }))
    }

    /// The provider whose price applies to this model in baton's price table.
    pub fn price_provider(&self) -> &str {
        match self.cli {
            Cli::ClaudeCode => "anthropic",
            Cli::Codex => "openai",
            Cli::Pi => self.provider.as_deref().unwrap_or("anthropic"),
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.provider {
            Some(p) => write!(f, "{}/{p}/{}", self.cli, self.model),
            None => write!(f, "{}/{}", self.cli, self.model),
        }
    }
}

/// A secret value: never shown by `Debug`, never written to a transcript.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value, for the child's environment only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// How one CLI is run (from `baton.toml` `[cli.NAME]`, trusted projects only).
#[derive(Debug, Clone, PartialEq)]
pub struct CliSettings {
    /// The program (`None`: looked up on PATH by its usual name).
    pub program: Option<PathBuf>,
    /// A model server the CLI is pointed at (`ANTHROPIC_BASE_URL`, Codex's provider entry,
    /// pi's `models.json`).
    pub base_url: Option<String>,
    /// pi only: the wire of `base_url` (`anthropic-messages`, `openai-completions`,
    /// `openai-responses`).
    pub api: Option<String>,
    /// The variable the key was read from (for `baton doctor`).
    pub api_key_env: Option<String>,
    /// The key passed to the CLI.
    pub api_key: Option<Secret>,
    /// Retries of a failed model call the CLI may make.
    pub max_retries: u32,
    /// No progress event for this long ends the run.
    pub stall_timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The repository's own configuration for the CLI that no flag switches off (pi's
    /// `.pi/settings.json`, `.pi/SYSTEM.md`): refused unless the user allows it.
    pub project_config: ProjectConfig,
}

impl Default for CliSettings {
    fn default() -> Self {
        CliSettings {
            program: None,
            base_url: None,
            api: None,
            api_key_env: None,
            api_key: None,
            max_retries: 2,
            stall_timeout: Duration::from_secs(300),
            grace: Duration::from_secs(5),
            project_config: ProjectConfig::Refuse,
        }
    }
}

/// The CLI settings of a run.
#[derive(Debug, Clone, Default)]
pub struct CliConfig {
    /// Per CLI (absent: defaults).
    pub settings: BTreeMap<Cli, CliSettings>,
    /// The shell command Claude Code's PreToolUse/PostToolUse hooks run (`baton guard
    /// --policy`); `None`: no hooks.
    pub policy_hook: Option<String>,
    /// Where the CLIs' homes go (`.baton/cli`); `None`: the system's temporary directory.
    pub state_dir: Option<PathBuf>,
}

impl CliConfig {
    /// The settings of `cli`.
    pub fn settings(&self, cli: Cli) -> CliSettings {
        self.settings.get(&cli).cloned().unwrap_or_default()
    }

    /// The program that runs `cli`: the configured path, else its name found on PATH.
    pub fn program(&self, cli: Cli) -> Option<PathBuf> {
        match self.settings.get(&cli).and_then(|s| s.program.clone()) {
            Some(p) => Some(p),
            None => find_on_path(cli.program()),
        }
    }
}

/// `name` found in a directory of PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// What one run of a CLI needs to build its command line.
#[derive(Debug)]
pub struct Launch<'a> {
    /// The model as the CLI names it.
    pub model: &'a str,
    /// pi's provider.
    pub provider: Option<&'a str>,
    /// The CLI's settings.
    pub settings: &'a CliSettings,
    /// The agent's system prompt, appended to the CLI's own.
    pub system: &'a str,
    /// The task.
    pub task: &'a str,
    /// A read-only role.
    pub read_only: bool,
    /// Turn limit.
    pub max_turns: u32,
    /// The workspace root.
    pub root: &'a Path,
    /// The run's HOME.
    pub home: &'a Path,
    /// Claude Code's hook command.
    pub policy_hook: Option<&'a str>,
    /// Programs agents may run (Claude Code pre-approves exactly these for Bash).
    pub allow_commands: &'a [String],
}

/// A CLI's command line (after the program), environment and the files it needs first.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    /// Arguments.
    pub args: Vec<String>,
    /// Environment beyond PATH (logged).
    pub env: Vec<(String, String)>,
    /// Credentials (never logged).
    pub secret_env: Vec<(String, String)>,
    /// Files written before the start: (path, content).
    pub files: Vec<(PathBuf, String)>,
}

/// The task as the last argument: one starting with `-` would be read as a flag.
pub fn prompt_arg(task: &str) -> String {
    if task.starts_with('-') {
        format!(" {task}")
    } else {
        task.to_owned()
    }
}

/// Builds the invocation of `cli`.
pub fn invocation(cli: Cli, l: &Launch<'_>) -> Invocation {
    match cli {
        Cli::ClaudeCode => claude::invocation(l),
        Cli::Codex => codex::invocation(l),
        Cli::Pi => pi::invocation(l),
    }
}

fn parser(cli: Cli, settings: &CliSettings) -> Box<dyn StreamParser> {
    match cli {
        Cli::ClaudeCode => Box::<claude::Parser>::default(),
        Cli::Codex => Box::new(codex::Parser::new(settings.max_retries)),
        Cli::Pi => Box::<pi::Parser>::default(),
    }
}

/// An agent run by a coding-agent CLI.
pub struct CliWorker {
    /// Which CLI and model.
    pub backend: Backend,
    /// The program to run.
    pub program: PathBuf,
    /// The CLI's settings.
    pub settings: CliSettings,
    /// Claude Code's hook command.
    pub policy_hook: Option<String>,
    /// Programs agents may run.
    pub allow_commands: Vec<String>,
    /// Where the CLIs' homes go.
    pub state_dir: PathBuf,
    /// The tree the agent works in.
    pub workspace: Arc<Workspace>,
    /// Where transcripts (and the raw streams) go.
    pub transcript_dir: Option<PathBuf>,
    /// Standard or YOLO.
    pub mode: Mode,
    /// The run's budget.
    pub budget: Arc<Budget>,
    /// The price of the model in baton's table (`None`: unpriced).
    pub price: Option<Price>,
    /// Turn limit when the definition sets none.
    pub default_max_turns: u32,
    /// Timeout when the definition sets none.
    pub default_timeout: Duration,
    /// Cancellation.
    pub cancel: CancellationToken,
    /// Progress events.
    pub on_event: Option<EventFn>,
    /// Cost ledger entries.
    pub on_call: Option<CallFn>,
}

/// Why baton stopped a run.
#[derive(Debug, Clone, PartialEq)]
enum Stop {
    Cancelled,
    Timeout(Duration),
    Stall(Duration),
    Budget(String),
    MaxTurns(u32),
    Fatal(String),
}

/// Where the cost came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostSource {
    /// The CLI reported it.
    Cli,
    /// baton's price table.
    PriceTable,
    /// No price known: counted as 0.
    Unpriced,
}

/// Where the live CLI workers' process groups are recorded, under the CLIs' state directory
/// (`.baton/cli/workers/`).
pub fn workers_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("workers")
}

/// Ends the CLI workers a killed baton left running on the project whose CLI state directory is
/// `state_dir` (SIGTERM to each recorded group, SIGKILL after a grace period); call it before a
/// run starts. Workers of a baton that still runs are left alone. Returns a notice per group.
pub async fn end_orphaned_workers(state_dir: &Path) -> Vec<String> {
    let grace = CliSettings::default().grace;
    crate::process::end_orphaned_groups(&workers_dir(state_dir), grace)
        .await
        .into_iter()
        .map(|pgid| {
            format!("ended a coding-agent CLI (process group {pgid}) a killed run left running")
        })
        .collect()
}

/// Whether `program` can be started from `root`: a bare name found on PATH, or a path (relative
/// ones from `root`, where the CLI runs).
fn program_exists(program: &Path, root: &Path) -> bool {
    if program.components().count() == 1 && !program.is_absolute() {
        return program.to_str().is_some_and(|n| find_on_path(n).is_some());
    }
    root.join(program).is_file()
}

/// The raw stream file beside transcript `t` (`dev-1.jsonl` → `dev-1.stream.jsonl`).
pub fn stream_path(transcript: &Path) -> PathBuf {
    transcript.with_extension("stream.jsonl")
}

const STDERR_TAIL: usize = 4096;

impl CliWorker {
    fn emit(&self, e: AgentEvent) {
        if let Some(f) = &self.on_event {
            f(&e);
        }
    }

    /// Whether the CLI's own cost figure means anything: Claude Code prices every model as
    /// Claude, so not when it talks to another server; pi prices from its `models.json`, which
    /// has no prices for a server baton configured; Codex reports none.
    fn cli_cost_meaningful(&self, t: &Tally) -> bool {
        match self.backend.cli {
            Cli::ClaudeCode => self.settings.base_url.is_none(),
            Cli::Pi => t.cli_cost.is_some_and(|c| c > 0.0),
            Cli::Codex => false,
        }
    }

    fn cost(&self, t: &Tally) -> (f64, CostSource) {
        match (t.cli_cost, &self.price) {
            (Some(c), _) if self.cli_cost_meaningful(t) => (c, CostSource::Cli),
            (_, Some(p)) => (
                cost_usd_split(&t.usage, t.one_hour_cache_writes, p),
                CostSource::PriceTable,
            ),
            _ => (0.0, CostSource::Unpriced),
        }
    }

    /// Runs `job` to its outcome.
    pub async fn run_job(&self, job: &Job) -> Outcome {
        let def = &job.agent;
        let mut transcript = match &self.transcript_dir {
            Some(dir) => Transcript::create(dir, &def.name).unwrap_or_else(|_| Transcript::none()),
            None => Transcript::none(),
        };
        let before = self.workspace.snapshot().await;
        self.emit(AgentEvent::Started {
            agent: def.name.clone(),
            model: self.backend.to_string(),
        });
        let system = format!("{}\n\n{}", def.prompt, self.mode.system_line());
        let max_turns = def.max_turns.unwrap_or(self.default_max_turns).max(1);
        let timeout = def
            .timeout
            .map_or(self.default_timeout, Duration::from_secs);
        transcript.write(
            "system",
            serde_json::json!({ "agent": def.name, "model": self.backend.to_string(), "prompt": system }),
        );
        transcript.write("task", serde_json::json!({ "text": job.task }));
        let mut tally = Tally::default();
        let (status, reason) = match self
            .drive(
                def,
                &system,
                &job.task,
                max_turns,
                timeout,
                &mut tally,
                &mut transcript,
            )
            .await
        {
            Ok(()) => match halt_reason(&tally.summary) {
                Some(r) => (Status::Halted, Some(r)),
                None => (Status::Completed, None),
            },
            Err((status, why)) => (status, Some(why)),
        };
        for w in &tally.warnings {
            transcript.write("warning", serde_json::json!({ "text": w }));
        }
        let (cost, source) = self.cost(&tally);
        self.budget.add(Spend {
            usd: cost,
            input_tokens: tally.usage.total_input(),
            output_tokens: tally.usage.output_tokens,
        });
        let record = CallRecord {
            agent: def.name.clone(),
            model: self.backend.to_string(),
            usage: tally.usage,
            cost_usd: cost,
            estimated: false,
        };
        transcript.write(
            "usage",
            serde_json::json!({ "agent": def.name, "model": self.backend.to_string(), "usage": tally.usage, "cost_usd": cost, "cost_source": source }),
        );
        if let Some(f) = &self.on_call {
            f(&record);
        }
        self.emit(AgentEvent::Usage {
            agent: def.name.clone(),
            usage: tally.usage,
            cost_usd: cost,
            estimated: false,
        });
        let files_changed = self.workspace.changed_since(&before).await;
        let outcome = Outcome {
            agent: def.name.clone(),
            model: self.backend.to_string(),
            status,
            reason,
            summary: tally.summary,
            files_changed,
            usage: tally.usage,
            cost_usd: cost,
            turns: tally.turns,
            transcript: transcript.path().map(Path::to_path_buf),
            escalation: None,
            usage_estimated: false,
            stop: match status {
                Status::Cancelled if tally.budget_stop => Some(crate::outcome::Stop::Budget),
                Status::Cancelled => Some(crate::outcome::Stop::Cancelled),
                _ => None,
            },
            // A coding-agent CLI manages its own context.
            compaction: Default::default(),
        };
        transcript.write("outcome", &outcome);
        self.emit(AgentEvent::Finished {
            agent: def.name.clone(),
            status,
        });
        outcome
    }

    /// A fresh home for this run under the state directory.
    fn home(&self, agent: &str) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.state_dir)?;
        for n in 1..100_000 {
            let dir = self
                .state_dir
                .join(format!("{agent}-{}-{n}", self.backend.cli));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other(
            "too many CLI homes in the state directory",
        ))
    }

    #[allow(clippy::too_many_arguments)]
    async fn drive(
        &self,
        def: &crate::definition::AgentDef,
        system: &str,
        task: &str,
        max_turns: u32,
        timeout: Duration,
        tally: &mut Tally,
        transcript: &mut Transcript,
    ) -> Result<(), (Status, String)> {
        let fail = |why: String| (Status::Failed, why);
        if self.settings.project_config == ProjectConfig::Refuse {
            let found = project::present(self.backend.cli, self.workspace.root());
            if !found.is_empty() {
                return Err(fail(project::refusal(self.backend.cli, &found)));
            }
        }
        let home = self.home(&def.name).map_err(|e| {
            fail(format!(
                "cannot create the CLI's home under `{}`: {e}",
                self.state_dir.display()
            ))
        })?;
        let launch = Launch {
            model: &self.backend.model,
            provider: self.backend.provider.as_deref(),
            settings: &self.settings,
            system,
            task,
            read_only: def.is_read_only(),
            max_turns,
            root: self.workspace.root(),
            home: &home,
            policy_hook: self.policy_hook.as_deref(),
            allow_commands: &self.allow_commands,
        };
        let inv = invocation(self.backend.cli, &launch);
        for (path, content) in &inv.files {
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(path, content));
            written.map_err(|e| fail(format!("cannot write `{}`: {e}", path.display())))?;
        }
        transcript.write(
            "cli",
            serde_json::json!({
                "program": self.program,
                "args": inv.args,
                "env": inv.env,
                "credentials": inv.secret_env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            }),
        );
        let secrets: Vec<String> = inv
            .secret_env
            .iter()
            .map(|(_, v)| v.clone())
            .filter(|v| v.len() >= 4)
            .collect();
        let mut raw = transcript
            .path()
            .and_then(|p| std::fs::File::create(stream_path(p)).ok());

        // Through `setpriv --pdeathsig KILL` where it is available, so the CLI dies with baton
        // (crate::process explains the choice).
        let wrapper = crate::process::parent_death_wrapper();
        if wrapper.is_some() && !program_exists(&self.program, self.workspace.root()) {
            return Err(fail(format!(
                "cannot start {} (`{}`): not found",
                self.backend.cli,
                self.program.display()
            )));
        }
        let mut cmd = match wrapper {
            Some(setpriv) => {
                let mut cmd = tokio::process::Command::new(setpriv);
                cmd.args(["--pdeathsig", "KILL", "--"]).arg(&self.program);
                cmd
            }
            None => tokio::process::Command::new(&self.program),
        };
        cmd.args(&inv.args)
            .current_dir(self.workspace.root())
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin")),
            )
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .envs(inv.env.iter().map(|(k, v)| (k, v)))
            .envs(inv.secret_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            fail(format!(
                "cannot start {} (`{}`): {e}",
                self.backend.cli,
                self.program.display()
            ))
        })?;
        // Recorded while it runs, so a run after a killed baton ends what it left (declared
        // before the killer: on an early drop the group is killed first, then unrecorded).
        let record = GroupRecord::create(&workers_dir(&self.state_dir), child.id());
        let mut killer = GroupKiller::new(child.id());
        let stderr_tail = Arc::new(Mutex::new(Vec::<u8>::new()));
        let stderr_task = child.stderr.take().map(|mut err| {
            let tail = stderr_tail.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut t) = tail.lock() {
                        t.extend_from_slice(&buf[..n]);
                        let excess = t.len().saturating_sub(STDERR_TAIL);
                        t.drain(..excess);
                    }
                }
            })
        });
        let Some(mut stdout) = child.stdout.take() else {
            return Err(fail("the CLI's output could not be read".into()));
        };

        let started = Instant::now();
        let far = Duration::from_secs(365 * 24 * 3600);
        let deadline = started
            .checked_add(timeout)
            .unwrap_or_else(|| started + far);
        let stall = self.settings.stall_timeout;
        let mut stall_at = started.checked_add(stall).unwrap_or_else(|| started + far);
        let mut parser = parser(self.backend.cli, &self.settings);
        let mut splitter = stream::LineSplitter::default();
        let mut buf = vec![0u8; 64 * 1024];
        let mut exit: Option<Option<i32>> = None;
        let mut warned = false;
        let mut take = |line: &[u8],
                        tally: &mut Tally,
                        parser: &mut Box<dyn StreamParser>,
                        transcript: &mut Transcript,
                        stall_at: &mut Instant|
         -> Option<Stop> {
            if let Some(f) = raw.as_mut() {
                let mut text = String::from_utf8_lossy(line).into_owned();
                for s in &secrets {
                    if text.contains(s.as_str()) {
                        text = text.replace(s.as_str(), "***");
                    }
                }
                let text = baton_core::secrets::redact(&text);
                if writeln!(f, "{text}").is_err() {
                    raw = None;
                }
            }
            let ev = stream::parse_line(line)?;
            let before = tally.usage;
            if parser.event(&ev, tally) == Activity::Progress {
                *stall_at = Instant::now().checked_add(stall).unwrap_or(*stall_at);
            }
            for note in std::mem::take(&mut tally.notes) {
                match note {
                    Note::Turn(turn) => self.emit(AgentEvent::Turn {
                        agent: def.name.clone(),
                        turn,
                    }),
                    Note::ToolCall(tool) => {
                        transcript.write("tool_call", serde_json::json!({ "name": tool }));
                        self.emit(AgentEvent::ToolCall {
                            agent: def.name.clone(),
                            tool,
                        });
                    }
                    Note::Refused { tool, reason } => {
                        transcript.write("guard", serde_json::json!({ "verdict": "deny", "tool": tool, "reason": reason }));
                        self.emit(AgentEvent::Refused {
                            agent: def.name.clone(),
                            tool,
                            reason,
                        });
                    }
                }
            }
            if let Some(why) = tally.fatal.take() {
                return Some(Stop::Fatal(why));
            }
            if tally.turns > max_turns {
                return Some(Stop::MaxTurns(max_turns));
            }
            if tally.usage != before {
                let (usd, _) = self.cost(tally);
                let spend = Spend {
                    usd,
                    input_tokens: tally.usage.total_input(),
                    output_tokens: tally.usage.output_tokens,
                };
                match self.budget.check(spend) {
                    BudgetState::Exhausted(why) => return Some(Stop::Budget(why)),
                    BudgetState::Warn(why) if !warned => {
                        warned = true;
                        self.emit(AgentEvent::BudgetWarning {
                            agent: def.name.clone(),
                            message: why,
                        });
                    }
                    _ => {}
                }
            }
            None
        };

        // After the CLI exited, its output is drained for a moment (a grandchild may hold the
        // pipe open).
        let mut drain_until: Option<Instant> = None;
        let stop = loop {
            tokio::select! {
                _ = self.cancel.cancelled() => break Some(Stop::Cancelled),
                _ = tokio::time::sleep_until(deadline) => break Some(Stop::Timeout(timeout)),
                _ = tokio::time::sleep_until(stall_at), if exit.is_none() => break Some(Stop::Stall(stall)),
                _ = tokio::time::sleep_until(drain_until.unwrap_or(deadline)), if drain_until.is_some() => break None,
                status = child.wait(), if exit.is_none() => {
                    exit = Some(status.ok().and_then(|s| s.code()));
                    drain_until = Some(Instant::now() + Duration::from_secs(2));
                }
                read = stdout.read(&mut buf) => {
                    let n = match read {
                        Ok(0) | Err(_) => break None,
                        Ok(n) => n,
                    };
                    let mut stop = None;
                    for line in splitter.push(&buf[..n]) {
                        stop = take(&line, tally, &mut parser, transcript, &mut stall_at);
                        if stop.is_some() {
                            break;
                        }
                    }
                    if stop.is_some() {
                        break stop;
                    }
                }
            }
        };
        let stop = match stop {
            Some(s) => Some(s),
            None => splitter
                .finish()
                .and_then(|line| take(&line, tally, &mut parser, transcript, &mut stall_at)),
        };
        if stop.is_some() {
            killer.terminate();
        }
        let exit = match exit {
            Some(e) => e,
            None => {
                let wait = if stop.is_some() {
                    self.settings.grace
                } else {
                    deadline.saturating_duration_since(Instant::now())
                };
                match tokio::time::timeout(wait, child.wait()).await {
                    Ok(status) => status.ok().and_then(|s| s.code()),
                    Err(_) => {
                        killer.kill();
                        child.wait().await.ok().and_then(|s| s.code())
                    }
                }
            }
        };
        // Whatever the CLI left running in its group goes with it, and so does its home (its
        // sessions, caches and state databases; what matters is in the transcript).
        killer.kill();
        drop(record);
        let _ = std::fs::remove_dir_all(&home);
        if let Some(task) = stderr_task {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
        let mut stderr = stderr_tail
            .lock()
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap_or_default();
        for s in &secrets {
            stderr = stderr.replace(s.as_str(), "***");
        }
        let stderr = baton_core::secrets::redact(&stderr).into_owned();
        if !stderr.trim().is_empty() {
            transcript.write("stderr", serde_json::json!({ "tail": stderr }));
        }
        for e in &tally.errors {
            transcript.write("cli_error", serde_json::json!({ "text": e }));
        }
        let last_error = || tally.errors.last().cloned();
        match stop {
            None => parser
                .verdict(tally, exit, stderr.trim())
                .map_err(|why| (Status::Failed, why)),
            Some(Stop::Cancelled) => Err((Status::Cancelled, "cancelled".into())),
            Some(Stop::Fatal(why)) => Err((Status::Failed, why)),
            Some(Stop::Budget(why)) => {
                tally.budget_stop = true;
                Err((Status::Cancelled, format!("budget: {why}")))
            }
            Some(Stop::MaxTurns(n)) => Err((
                Status::Failed,
                format!("reached max_turns ({n}) without a final answer"),
            )),
            Some(Stop::Timeout(t)) => Err((
                Status::TimedOut,
                match last_error() {
                    Some(e) => format!("no final answer within {} s; last error: {e}", t.as_secs()),
                    None => format!("no final answer within {} s", t.as_secs()),
                },
            )),
            Some(Stop::Stall(t)) => match last_error() {
                Some(e) => Err((
                    Status::Failed,
                    format!(
                        "no progress for {} s, the model server looks unreachable: {e}",
                        t.as_secs()
                    ),
                )),
                None => Err((
                    Status::TimedOut,
                    format!(
                        "no event from {} for {} s (stall timeout)",
                        self.backend.cli,
                        t.as_secs()
                    ),
                )),
            },
        }
    }
}

impl Worker for CliWorker {
    fn run<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run_job(job))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A captured stream under `tests/fixtures/cli-streams/`.
    pub fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/cli-streams")
            .join(name)
    }

    /// Feeds a captured stream, cut into odd-sized pieces, through `parser`.
    pub fn replay(
        mut parser: impl StreamParser,
        name: &str,
        exit: Option<i32>,
    ) -> (Tally, Result<(), String>) {
        let bytes = std::fs::read(fixture(name)).unwrap();
        let mut tally = Tally::default();
        let mut splitter = stream::LineSplitter::default();
        let mut lines = Vec::new();
        for piece in bytes.chunks(97) {
            lines.extend(splitter.push(piece));
        }
        lines.extend(splitter.finish());
        for line in lines {
            if let Some(ev) = stream::parse_line(&line) {
                parser.event(&ev, &mut tally);
            }
        }
        let verdict = parser.verdict(&tally, exit, "");
        (tally, verdict)
    }

    #[test]
    fn model_strings_name_backends() {
        let b = Backend::parse("claude-code/claude-sonnet-4-5")
            .unwrap()
            .unwrap();
        assert_eq!(
            (b.cli, b.model.as_str()),
            (Cli::ClaudeCode, "claude-sonnet-4-5")
        );
        let b = Backend::parse("pi/anthropic/claude-x").unwrap().unwrap();
        assert_eq!(b.provider.as_deref(), Some("anthropic"));
        assert_eq!(b.to_string(), "pi/anthropic/claude-x");
        assert!(Backend::parse("anthropic/claude").is_none());
        assert!(Backend::parse("pi/just-model").unwrap().is_err());
        assert!(
            Backend::parse("codex/--dangerously-bypass-approvals-and-sandbox")
                .unwrap()
                .is_err()
        );
        assert_eq!(Backend::parse("codex").unwrap().unwrap().model, "");
    }

    #[test]
    fn secrets_do_not_show_in_debug() {
        let s = CliSettings {
            api_key: Some(Secret::new("sk-very-secret")),
            ..CliSettings::default()
        };
        assert!(!format!("{s:?}").contains("very-secret"));
    }

    #[test]
    fn a_task_that_looks_like_a_flag_is_not_one() {
        assert_eq!(prompt_arg("--help me"), " --help me");
        assert_eq!(prompt_arg("fix it"), "fix it");
    }
}
