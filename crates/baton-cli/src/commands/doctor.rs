//! `baton doctor`: what baton would work with, and whether it works.
//!
//! For each provider the agents use or `baton.toml` declares: whether it answers, the models it
//! lists, whether it streams usage, and whether a one-shot tool call comes back (the network
//! probes are skipped with `--offline`); plus git, the test command, the sprint file baton will
//! use, and the `baton.toml` and trust in effect. Nothing is written. Exit 0 when nothing is
//! wrong, 1 with the problems listed.

use crate::cli::DoctorArgs;
use crate::commands::Code;
use crate::config::Config;
use anyhow::Result;
use baton_agent::workspace::git::Git;
use baton_core::key::KeyKind;
use baton_llm::probe::{self, ToolProbe};
use baton_llm::registry::{self, ProviderConfig, ProviderKind};
use baton_llm::{LlmError, ModelSpec};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Longest a probe may take: enough for a small local model to answer a few tokens.
const PROBE_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest the model list may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The whole report (`--json` prints it as is).
#[derive(Debug, Serialize)]
struct Report {
    project: String,
    config: ConfigView,
    git: GitView,
    test_command: Option<Vec<String>>,
    /// Whether `baton.toml`'s test command is set aside until the project is trusted.
    test_command_needs_trust: bool,
    /// What the project's files propose when `baton.toml` sets no test command (as `baton init`
    /// would write it).
    proposed_test_command: Option<baton_config::test_command::Proposal>,
    sprint: SprintView,
    providers: Vec<ProviderView>,
    /// Coding-agent CLIs agents use or `baton.toml` configures (left out when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    clis: Vec<crate::cli_workers::CliView>,
    /// What stops baton from working (exit 1).
    problems: Vec<String>,
    /// What works, but less well than it could.
    warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
struct ConfigView {
    /// `baton.toml`, or `None` when the project has none (defaults apply).
    file: Option<String>,
    /// Whether the project is trusted to supply its own agents.
    trusted: bool,
    /// Agents found, by source.
    agents: usize,
    /// `[agents] model` or none.
    agents_model: Option<String>,
    /// The output cap of agents without their own.
    max_tokens: u32,
    /// Limits of the run's budget that are set.
    budget: Vec<String>,
}

#[derive(Debug, Serialize)]
struct GitView {
    repository: bool,
    /// Changed files that are not baton's own (a sprint refuses them without --allow-dirty).
    uncommitted: Vec<String>,
    /// What of baton's state git would commit: `.baton/` when it exists and git does not
    /// ignore it, and files under it that are committed already.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    state_not_ignored: Vec<String>,
}

#[derive(Debug, Serialize)]
struct SprintView {
    path: String,
    exists: bool,
    stories: Option<usize>,
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct ProviderView {
    name: String,
    kind: ProviderKind,
    base_url: Option<String>,
    /// The `provider/model`s agents use on it.
    used_by: Vec<String>,
    tool_choice: Option<&'static str>,
    max_tokens: Option<u32>,
    /// Whether the probes ran (not with `--offline`, not for the script provider).
    probed: bool,
    reachable: Option<bool>,
    models: Option<Vec<String>>,
    streams_usage: Option<bool>,
    /// `ok`, `dropped`, `bad_arguments`, or `error`.
    tools: Option<&'static str>,
    /// What the tool probe saw, when it was not `ok`.
    tools_detail: Option<String>,
    error: Option<String>,
}

/// Runs `baton doctor`.
pub fn run(root: &Path, args: &DoctorArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = rt.block_on(build(root, &cfg, args))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&report);
    }
    Ok(if report.problems.is_empty() {
        Code::Ok
    } else {
        Code::Error
    })
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

async fn build(root: &Path, cfg: &Config, args: &DoctorArgs) -> Result<Report> {
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let found = super::agents::discover(root);
    let toml = root.join(crate::config::FILE_NAME);
    let config = ConfigView {
        file: toml.is_file().then(|| crate::config::FILE_NAME.to_owned()),
        trusted: crate::trust::is_trusted(root),
        agents: found.agents.len(),
        agents_model: cfg.agent_model.clone(),
        max_tokens: cfg
            .agent_max_tokens
            .unwrap_or(baton_engine::setup::DEFAULT_MAX_TOKENS),
        budget: budget_lines(cfg),
    };
    for e in &found.errors {
        problems.push(format!("agent definition skipped: {e}"));
    }

    let git = Git::new(root, Vec::new());
    let repository = git.is_repo().await;
    let mut uncommitted = Vec::new();
    let mut state_not_ignored = Vec::new();
    if repository {
        let owned =
            baton_engine::sprint::recovery::OwnedFiles::new(root, &cfg.sprint_status, &cfg.stories);
        if let Ok(prefix) = git.prefix().await
            && let Ok(status) = git.status(&prefix).await
        {
            uncommitted = status
                .files
                .into_iter()
                .filter(|p| !owned.contains(p))
                .collect();
        }
        state_not_ignored = state_in_git(&git, root).await;
        if !state_not_ignored.is_empty() {
            problems.push(format!(
                "git would commit baton's state ({}): `git add -A` takes journals, transcripts \
                 and worktrees; write `.baton/.gitignore` holding `*` (any baton command that \
                 makes state writes it) and `git rm -r --cached .baton` what is committed",
                state_not_ignored
                    .iter()
                    .take(5)
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    } else {
        problems.push(
            "not a git repository: `baton sprint` commits every stage; run `git init`".into(),
        );
    }
    if !uncommitted.is_empty() {
        problems.push(format!(
            "uncommitted changes ({}): `baton sprint` refuses them; commit or stash them, or pass --allow-dirty",
            uncommitted.len()
        ));
    }

    let test_command = cfg.sprint.test_command.clone();
    let test_command_needs_trust = cfg
        .ignored
        .iter()
        .any(|l| l.starts_with("[sprint] test_command"));
    let proposed_test_command = (test_command.is_none() && !test_command_needs_trust)
        .then(|| baton_config::test_command::detect(root).into_iter().next())
        .flatten();
    if test_command_needs_trust {
        warnings.push(
            "`[sprint] test_command` in baton.toml applies once you trust the project (`baton trust`); until then stories are reviewed without the project's tests".into(),
        );
    } else if test_command.is_none() {
        let fix = match &proposed_test_command {
            Some(p) => format!("{}, so add `{}` under `[sprint]`", p.reason, p.setting()),
            None => "set `[sprint] test_command` to the command that runs them".to_owned(),
        };
        warnings.push(format!(
            "no `[sprint] test_command` in baton.toml: stories are reviewed without the project's tests; {fix}"
        ));
    }

    let sprint = sprint_view(root, cfg);
    if let Some(e) = &sprint.error {
        problems.push(e.clone());
    } else if sprint.stories == Some(0) {
        warnings
            .push("the sprint file holds no story yet: `baton sprint` has nothing to work".into());
    }

    let mut used: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cli_used: BTreeMap<baton_agent::worker::cli::Cli, Vec<String>> = BTreeMap::new();
    for def in found.agents.values() {
        let model = cfg
            .role_models
            .get(&def.role)
            .or(cfg.agent_model.as_ref())
            .cloned()
            .unwrap_or_else(|| def.model.clone());
        match baton_agent::worker::cli::Backend::parse(&model) {
            Some(Ok(b)) => {
                cli_used.entry(b.cli).or_default().push(def.name.clone());
                continue;
            }
            Some(Err(why)) => {
                problems.push(format!("agent `{}`: {why}", def.name));
                continue;
            }
            None => {}
        }
        match ModelSpec::parse(&model) {
            Some(spec) => {
                let list = used.entry(spec.provider.clone()).or_default();
                if !list.contains(&model) {
                    list.push(model);
                }
            }
            None => problems.push(format!(
                "agent `{}`: model `{model}` is not `provider/model`",
                def.name
            )),
        }
    }
    for name in cfg.declared_providers.clone() {
        used.entry(name).or_default();
    }
    let mut providers = Vec::new();
    for (name, models) in used {
        let view = provider_view(root, cfg, &name, models, args.offline).await;
        if let Some(p) = provider_problem(&view) {
            problems.push(p);
        }
        if view.streams_usage == Some(false) {
            warnings.push(format!(
                "provider `{name}` streams no usage: token counts, costs and token budgets are estimated from the text"
            ));
        }
        providers.push(view);
    }
    let (clis, cli_problems) = crate::cli_workers::cli_views(cfg, &cli_used).await;
    problems.extend(cli_problems);
    Ok(Report {
        clis,
        project: root.display().to_string(),
        config,
        git: GitView {
            repository,
            uncommitted,
            state_not_ignored,
        },
        test_command,
        test_command_needs_trust,
        proposed_test_command,
        sprint,
        providers,
        problems,
        warnings,
    })
}

/// What of `.baton/` git would commit: the directory itself when it exists and its journal would
/// not be ignored (`git check-ignore`), and the files under it that are tracked.
async fn state_in_git(git: &Git, root: &Path) -> Vec<String> {
    let dir = crate::config::STATE_DIR;
    let mut out = Vec::new();
    if root.join(dir).is_dir() {
        let probe = format!("{dir}/baton.db");
        // Exit 1: not ignored; 0: ignored; anything else (no answer) says nothing.
        if let Err(baton_agent::workspace::git::GitError::Failed { stderr, .. }) =
            git.run(&["check-ignore", "-q", "--", &probe]).await
            && !stderr.contains("fatal")
        {
            out.push(format!("{dir}/"));
        }
    }
    if let Ok(tracked) = git.run(&["ls-files", "-z", "--", dir]).await {
        out.extend(
            tracked
                .split('\0')
                .filter(|p| !p.is_empty())
                .map(str::to_owned),
        );
    }
    out
}

fn budget_lines(cfg: &Config) -> Vec<String> {
    let b = &cfg.budget;
    let mut out = Vec::new();
    if let Some(v) = b.warn_usd {
        out.push(format!("warn at ${v}"));
    }
    if let Some(v) = b.hard_usd {
        out.push(format!("stop at ${v}"));
    }
    if let Some(v) = b.max_input_tokens {
        out.push(format!("{v} input tokens"));
    }
    if let Some(v) = b.max_output_tokens {
        out.push(format!("{v} output tokens"));
    }
    out
}

fn sprint_view(root: &Path, cfg: &Config) -> SprintView {
    let path = rel(root, &cfg.sprint_status);
    if !cfg.sprint_status.is_file() {
        return SprintView {
            path: path.clone(),
            exists: false,
            stories: None,
            error: Some(format!(
                "no sprint file at `{path}`: run `baton init`, or set `paths.sprint_status`"
            )),
        };
    }
    match baton_store::sprint_file::SprintDoc::load(&cfg.sprint_status) {
        Ok(doc) => SprintView {
            path,
            exists: true,
            stories: Some(
                doc.sprint()
                    .unique()
                    .filter(|e| matches!(e.key.kind(), KeyKind::Story { .. }))
                    .count(),
            ),
            error: None,
        },
        Err(e) => SprintView {
            path,
            exists: true,
            stories: None,
            error: Some(format!("the sprint file does not load: {e}")),
        },
    }
}

async fn provider_view(
    root: &Path,
    cfg: &Config,
    name: &str,
    used_by: Vec<String>,
    offline: bool,
) -> ProviderView {
    let resolved = registry::resolve_provider(name, &cfg.providers);
    let mut view = ProviderView {
        name: name.to_owned(),
        kind: ProviderKind::OpenAi,
        base_url: None,
        used_by,
        tool_choice: None,
        max_tokens: None,
        probed: false,
        reachable: None,
        models: None,
        streams_usage: None,
        tools: None,
        tools_detail: None,
        error: None,
    };
    let config = match resolved {
        Ok(c) => c,
        Err(e) => {
            view.error = Some(e.to_string());
            return view;
        }
    };
    view.kind = config.kind;
    view.base_url = match config.kind {
        ProviderKind::Script => config.script_dir.as_ref().map(|d| rel(root, &root.join(d))),
        _ => config.base_url.clone(),
    };
    view.tool_choice = config.tool_choice.map(|c| c.as_str());
    view.max_tokens = config.max_tokens;
    if config.kind == ProviderKind::Script {
        return view;
    }
    let key = match probe::api_key(name, &config) {
        Ok(key) => key,
        Err(e) => {
            view.error = Some(e.to_string());
            return view;
        }
    };
    if offline {
        return view;
    }
    view.probed = true;
    probe_provider(&mut view, name, &config, key).await;
    view
}

async fn probe_provider(
    view: &mut ProviderView,
    name: &str,
    config: &ProviderConfig,
    key: Option<String>,
) {
    match probe::list_models(name, config, key.as_deref(), LIST_TIMEOUT).await {
        Ok(models) => {
            view.reachable = Some(true);
            view.models = Some(models);
        }
        Err(e @ LlmError::Connection { .. }) => {
            view.reachable = Some(false);
            view.error = Some(e.to_string());
            return;
        }
        // It answered, but not with a list: reachable; the chat probes say more.
        Err(e) => {
            view.reachable = Some(true);
            view.error = Some(format!("listing models: {e}"));
        }
    }
    let model = view
        .used_by
        .first()
        .and_then(|m| ModelSpec::parse(m))
        .map(|s| s.model)
        .or_else(|| view.models.as_ref().and_then(|m| m.first().cloned()));
    let Some(model) = model else {
        view.error
            .get_or_insert_with(|| "no model to probe: no agent uses it and it lists none".into());
        return;
    };
    let client = match probe::probe_client(name, config, key, PROBE_TIMEOUT) {
        Ok(Some(c)) => c,
        Ok(None) => return,
        Err(e) => {
            view.error = Some(e.to_string());
            return;
        }
    };
    match probe::probe_usage(client.as_ref(), &model).await {
        Ok(usage) => view.streams_usage = Some(usage.is_some()),
        Err(e) => {
            view.error = Some(format!("a short answer failed: {e}"));
            return;
        }
    }
    match probe::probe_tools(client.as_ref(), &model).await {
        Ok(ToolProbe::Ok) => view.tools = Some("ok"),
        Ok(ToolProbe::Dropped { answer }) => {
            view.tools = Some("dropped");
            view.tools_detail = Some(format!("answered in prose: {answer:?}"));
        }
        Ok(ToolProbe::BadArguments { arguments }) => {
            view.tools = Some("bad_arguments");
            view.tools_detail = Some(format!("arguments are not JSON: {arguments:?}"));
        }
        Err(e) => {
            view.tools = Some("error");
            view.tools_detail = Some(e.to_string());
        }
    }
}

fn provider_problem(v: &ProviderView) -> Option<String> {
    let name = &v.name;
    if v.reachable == Some(false) {
        return Some(format!(
            "provider `{name}` is not reachable at {}: start its server, or fix `base_url` in `[providers.{name}]`",
            v.base_url.as_deref().unwrap_or("its URL")
        ));
    }
    if let Some(e) = &v.error
        && v.reachable.is_none()
    {
        return Some(e.clone());
    }
    match v.tools {
        Some("dropped") => Some(format!(
            "provider `{name}`: no tool call came back, so agents would answer in prose; see \"Local models\" in docs/providers.md"
        )),
        Some("bad_arguments") => Some(format!(
            "provider `{name}`: the tool call's arguments are not JSON"
        )),
        Some(_) if v.tools_detail.is_some() => Some(format!(
            "provider `{name}`: the tool probe failed: {}",
            v.tools_detail.as_deref().unwrap_or_default()
        )),
        _ => v
            .error
            .as_ref()
            .filter(|_| v.streams_usage.is_none() && v.probed)
            .map(|e| format!("provider `{name}`: {e}")),
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn print_human(r: &Report) {
    println!("project   {}", r.project);
    let c = &r.config;
    println!(
        "config    {}; project {}",
        c.file
            .as_deref()
            .map_or("no baton.toml (defaults)".to_owned(), |f| f.to_owned()),
        if c.trusted {
            "trusted (.baton/agents/ and all of baton.toml apply)"
        } else {
            "not trusted (.baton/agents/ ignored, baton.toml may only narrow; `baton trust` after \
             reviewing them)"
        }
    );
    println!(
        "agents    {}{}; output cap {} tokens a turn; budget: {}",
        super::team::plural(c.agents as u64, "agent", "agents"),
        c.agents_model
            .as_deref()
            .map(|m| format!(", all on {m}"))
            .unwrap_or_default(),
        c.max_tokens,
        if c.budget.is_empty() {
            "no limits".to_owned()
        } else {
            c.budget.join(", ")
        }
    );
    println!(
        "git       {}",
        match (r.git.repository, r.git.uncommitted.len()) {
            (false, _) => "not a repository".to_owned(),
            (true, 0) => "repository, nothing uncommitted (baton's own files aside)".to_owned(),
            (true, n) => format!(
                "repository, {} uncommitted: {}",
                super::team::plural(n as u64, "file", "files"),
                r.git
                    .uncommitted
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    );
    println!(
        "tests     {}",
        r.test_command.as_ref().map_or_else(
            || match &r.proposed_test_command {
                Some(p) => format!(
                    "none ([sprint] test_command; the project's files propose `{}`)",
                    p.display()
                ),
                None => "none ([sprint] test_command)".to_owned(),
            },
            |t| t.join(" ")
        )
    );
    println!(
        "sprint    {}{}",
        r.sprint.path,
        match (r.sprint.exists, r.sprint.stories) {
            (false, _) => " (missing)".to_owned(),
            (true, Some(n)) => format!(": {}", super::team::plural(n as u64, "story", "stories")),
            (true, None) => " (does not load)".to_owned(),
        }
    );
    crate::cli_workers::print_clis(&r.clis);
    for p in &r.providers {
        let kind = match p.kind {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Script => "script",
        };
        println!(
            "provider  {} ({kind}{})",
            p.name,
            p.base_url
                .as_deref()
                .map(|u| format!(", {u}"))
                .unwrap_or_default()
        );
        if !p.used_by.is_empty() {
            println!("  used by   {}", p.used_by.join(", "));
        }
        let mut settings = Vec::new();
        if let Some(c) = p.tool_choice {
            settings.push(format!("tool_choice = {c}"));
        }
        if let Some(m) = p.max_tokens {
            settings.push(format!("max_tokens = {m}"));
        }
        if !settings.is_empty() {
            println!("  settings  {}", settings.join(", "));
        }
        if !p.probed {
            match &p.error {
                Some(e) => println!("  error     {e}"),
                None if p.kind == ProviderKind::Script => {
                    println!("  probes    none (replays files)")
                }
                None => println!("  probes    skipped (--offline)"),
            }
            continue;
        }
        if let Some(reachable) = p.reachable {
            println!("  reachable {}", yes_no(reachable));
        }
        if let Some(models) = &p.models {
            println!(
                "  models    {}",
                if models.is_empty() {
                    "none listed".to_owned()
                } else {
                    models.join(", ")
                }
            );
        }
        if let Some(usage) = p.streams_usage {
            println!(
                "  usage     {}",
                if usage {
                    "streamed"
                } else {
                    "not streamed: token counts and budgets will be estimates"
                }
            );
        }
        if let Some(tools) = p.tools {
            println!(
                "  tools     {tools}{}",
                p.tools_detail
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_else(|| if tools == "ok" {
                        ": a tool call came back".to_owned()
                    } else {
                        String::new()
                    })
            );
        }
        if let Some(e) = &p.error {
            println!("  error     {e}");
        }
    }
    if !r.warnings.is_empty() {
        println!("\nwarnings:");
        for w in &r.warnings {
            println!("  - {w}");
        }
    }
    if r.problems.is_empty() {
        println!("\nno problems found");
    } else {
        println!("\nproblems:");
        for p in &r.problems {
            println!("  - {p}");
        }
    }
}
