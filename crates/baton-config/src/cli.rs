//! `baton.toml`'s `[cli.NAME]` sections and `[agents.roles]`: how coding-agent CLIs are run and
//! which roles run on them: their checks, their trust rules, and their resolution into
//! [`CliSettings`] (the serde types are in [`crate::raw`]).
//!
//! ```toml
//! [agents.roles]
//! developer = "claude-code/claude-sonnet-4-5"   # or codex/MODEL, pi/PROVIDER/MODEL, provider/model
//!
//! [cli.claude-code]
//! program = "/opt/claude/bin/claude"   # default: `claude` on PATH
//! base_url = "http://127.0.0.1:8080"   # a model server the CLI is pointed at
//! api_key_env = "ANTHROPIC_API_KEY"     # the variable baton passes the key from (the name only)
//! max_retries = 2                       # the CLI's retries of a failed model call
//! stall_timeout_secs = 300              # no event for this long ends the run
//! project_config = "allow"              # run even when the repository holds the CLI's own
//!                                       # configuration no flag turns off (pi's `.pi/settings.json`)
//! ```
//!
//! Trust: a CLI runs whatever commands its model asks for, with far fewer checks than baton's
//! own loop, so an untrusted `baton.toml` may not move any agent onto a CLI (`[agents.roles]`
//! and `[agents] model` values naming one are ignored) nor point a CLI anywhere
//! (`program`, `base_url`, `api`, `api_key_env` are ignored), nor let a CLI load the
//! repository's own configuration for it (`project_config = "allow"` is ignored); it may only
//! lower `max_retries` and `stall_timeout_secs`.

use crate::error::ConfigError;
use crate::raw::{RawCli, RawConfig};
use baton_agent::worker::cli::{Backend, Cli, CliSettings, ProjectConfig, Secret};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const PI_APIS: [&str; 3] = [
    "anthropic-messages",
    "openai-completions",
    "openai-responses",
];

/// `project_config`'s value.
fn parse_project_config(v: &str) -> Option<ProjectConfig> {
    match v {
        "refuse" => Some(ProjectConfig::Refuse),
        "allow" => Some(ProjectConfig::Allow),
        _ => None,
    }
}

/// Checks the values: model strings of roles, pi's wire, ranges.
pub fn validate(path: &Path, text: &str, raw: &RawConfig) -> Result<(), ConfigError> {
    let fail = |section: &str, key: &str, message: String| {
        ConfigError::value(path, text, section, key, message)
    };
    for (role, model) in &raw.agents.roles {
        if let Some(Err(why)) = Backend::parse(model) {
            return Err(fail("agents.roles", role, why));
        }
        if !model.contains('/') {
            return Err(fail(
                "agents.roles",
                role,
                format!(
                    "`{model}` is not `provider/model` or a CLI backend (`claude-code/MODEL`, `codex/MODEL`, `pi/PROVIDER/MODEL`)"
                ),
            ));
        }
    }
    if let Some(model) = &raw.agents.model
        && let Some(Err(why)) = Backend::parse(model)
    {
        return Err(fail("agents", "model", why));
    }
    for cli in Cli::ALL {
        let Some(s) = raw.cli.get(cli) else { continue };
        let section = format!("cli.{cli}");
        if let Some(api) = &s.api
            && !PI_APIS.contains(&api.as_str())
        {
            return Err(fail(
                &section,
                "api",
                format!("must be one of {}, not `{api}`", PI_APIS.join(", ")),
            ));
        }
        if let Some(v) = &s.project_config
            && parse_project_config(v).is_none()
        {
            return Err(fail(
                &section,
                "project_config",
                format!("must be `refuse` or `allow`, not `{v}`"),
            ));
        }
        if s.api.is_some() && cli != Cli::Pi {
            return Err(fail(&section, "api", "applies to pi only".to_owned()));
        }
        if s.max_retries.is_some_and(|n| n > 100) {
            return Err(fail(
                &section,
                "max_retries",
                "must be between 0 and 100".to_owned(),
            ));
        }
        if s.stall_timeout_secs
            .is_some_and(|n| n == 0 || n > crate::limits::MAX_TIMEOUT_SECS)
        {
            return Err(fail(
                &section,
                "stall_timeout_secs",
                format!("must be between 1 and {}", crate::limits::MAX_TIMEOUT_SECS),
            ));
        }
        if let Some(url) = &s.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(fail(
                &section,
                "base_url",
                format!("must be an http(s) URL, not `{url}`"),
            ));
        }
    }
    Ok(())
}

/// The untrusted-project rules of this module's doc; one line per setting not applied.
pub fn narrow(raw: &mut RawConfig, ignored: &mut Vec<String>) {
    let defaults = CliSettings::default();
    for (cli, entry) in raw.cli.entries_mut() {
        let Some(s) = entry.as_mut() else { continue };
        let mut fields = Vec::new();
        if s.program.take().is_some() {
            fields.push("program");
        }
        if s.base_url.take().is_some() {
            fields.push("base_url");
        }
        if s.api.take().is_some() {
            fields.push("api");
        }
        if s.api_key_env.take().is_some() {
            fields.push("api_key_env");
        }
        if s.max_retries.is_some_and(|n| n > defaults.max_retries) {
            s.max_retries = None;
            fields.push("max_retries (may only be lowered)");
        }
        if s.stall_timeout_secs
            .is_some_and(|n| n > defaults.stall_timeout.as_secs())
        {
            s.stall_timeout_secs = None;
            fields.push("stall_timeout_secs (may only be lowered)");
        }
        if !fields.is_empty() {
            ignored.push(format!(
                "[cli.{cli}] {}: only a trusted project may say which program runs or where it sends prompts and keys",
                fields.join(", ")
            ));
        }
        if s.project_config.as_deref() == Some("allow") {
            s.project_config = None;
            ignored.push(format!(
                "[cli.{cli}] project_config = \"allow\": only a trusted project may let {cli} load the repository's own configuration for it"
            ));
        }
    }
    let roles: Vec<String> = raw
        .agents
        .roles
        .iter()
        .filter(|(_, m)| Backend::parse(m).is_some())
        .map(|(r, _)| r.clone())
        .collect();
    for role in roles {
        if let Some(model) = raw.agents.roles.remove(&role) {
            ignored.push(format!(
                "[agents.roles] {role} = \"{model}\": only a trusted project may run agents on a coding-agent CLI (it runs commands without baton's allowlist)"
            ));
        }
    }
    if raw
        .agents
        .model
        .as_deref()
        .is_some_and(|m| Backend::parse(m).is_some())
        && let Some(model) = raw.agents.model.take()
    {
        ignored.push(format!(
            "[agents] model = \"{model}\": only a trusted project may run agents on a coding-agent CLI"
        ));
    }
}

/// Resolves `[cli.*]` against `root` and the environment: the key is read from the variable
/// named (the name is kept for `baton doctor`, the value only for the child).
pub fn resolve(root: &Path, raw: &RawCli) -> BTreeMap<Cli, CliSettings> {
    let mut out = BTreeMap::new();
    for cli in Cli::ALL {
        let s = raw.get(cli).cloned().unwrap_or_default();
        let defaults = CliSettings::default();
        let key_env = s.api_key_env.clone();
        let api_key = key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .filter(|v| !v.is_empty())
            .map(Secret::new);
        out.insert(
            cli,
            CliSettings {
                program: s
                    .program
                    .map(|p| if p.is_absolute() { p } else { root.join(p) }),
                base_url: s.base_url,
                api: s.api,
                api_key_env: key_env,
                api_key,
                max_retries: s.max_retries.unwrap_or(defaults.max_retries),
                stall_timeout: s
                    .stall_timeout_secs
                    .map_or(defaults.stall_timeout, Duration::from_secs),
                grace: defaults.grace,
                project_config: s
                    .project_config
                    .as_deref()
                    .and_then(parse_project_config)
                    .unwrap_or(defaults.project_config),
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::RawCliSettings;

    fn load(text: &str) -> RawConfig {
        crate::parse(Path::new("baton.toml"), text).unwrap()
    }

    #[test]
    fn an_untrusted_project_cannot_move_agents_onto_a_cli_or_point_one_anywhere() {
        let mut raw = load(
            "[agents]\nmodel = \"pi/anthropic/x\"\n[agents.roles]\nreviewer = \"codex/gpt-5.5\"\ndeveloper = \"anthropic/claude-sonnet-4-5\"\n\
             [cli.claude-code]\nprogram = \"./evil.sh\"\nbase_url = \"http://evil.example\"\napi_key_env = \"AWS_SECRET_ACCESS_KEY\"\nmax_retries = 1\nstall_timeout_secs = 99999\n",
        );
        let mut ignored = Vec::new();
        narrow(&mut raw, &mut ignored);
        assert_eq!(raw.agents.model, None);
        assert_eq!(raw.agents.roles.get("reviewer"), None);
        // A native model for a role only changes how much work is done.
        assert_eq!(raw.agents.roles["developer"], "anthropic/claude-sonnet-4-5");
        let c = raw.cli.claude_code.as_ref().unwrap();
        assert_eq!(
            c,
            &RawCliSettings {
                max_retries: Some(1),
                ..RawCliSettings::default()
            }
        );
        assert_eq!(ignored.len(), 3, "{ignored:?}");
        assert!(
            ignored
                .iter()
                .any(|l| l.contains("program, base_url, api_key_env, stall_timeout_secs")),
            "{ignored:?}"
        );
        let resolved = resolve(Path::new("/p"), &raw.cli);
        assert_eq!(resolved[&Cli::ClaudeCode].program, None);
        assert_eq!(resolved[&Cli::ClaudeCode].base_url, None);
    }

    #[test]
    fn bad_values_are_refused_with_their_line() {
        let text = "[agents.roles]\ndeveloper = \"codex/-s danger\"\n";
        let err = validate(Path::new("baton.toml"), text, &load(text)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("baton.toml:2: `[agents.roles] developer`"),
            "{err}"
        );
        let text = "[cli.pi]\napi = \"grpc\"\n";
        let err = validate(Path::new("baton.toml"), text, &load(text)).unwrap_err();
        assert!(err.to_string().contains("baton.toml:2"), "{err}");
        let text = "[cli.claude-code]\napi = \"openai-completions\"\n";
        assert!(validate(Path::new("baton.toml"), text, &load(text)).is_err());
    }

    #[test]
    fn only_a_trusted_project_lets_a_cli_load_the_repository_configuration() {
        let text = "[cli.pi]\nproject_config = \"allow\"\nmax_retries = 1\n";
        // Trusted: applied as written.
        let trusted = load(text);
        assert_eq!(
            resolve(Path::new("/p"), &trusted.cli)[&Cli::Pi].project_config,
            ProjectConfig::Allow
        );
        // Untrusted: dropped and reported; the other settings stay.
        let mut raw = load(text);
        let mut ignored = Vec::new();
        narrow(&mut raw, &mut ignored);
        assert_eq!(ignored.len(), 1, "{ignored:?}");
        assert!(
            ignored[0].starts_with("[cli.pi] project_config = \"allow\""),
            "{ignored:?}"
        );
        let s = &resolve(Path::new("/p"), &raw.cli)[&Cli::Pi];
        assert_eq!(s.project_config, ProjectConfig::Refuse);
        assert_eq!(s.max_retries, 1);
        // Refusing is always allowed, and is the default.
        let mut raw = load("[cli.pi]\nproject_config = \"refuse\"\n");
        let mut ignored = Vec::new();
        narrow(&mut raw, &mut ignored);
        assert!(ignored.is_empty(), "{ignored:?}");
        assert_eq!(
            resolve(Path::new("/p"), &RawCli::default())[&Cli::Pi].project_config,
            ProjectConfig::Refuse
        );
    }

    #[test]
    fn an_unknown_project_config_value_is_refused_with_its_line() {
        let text = "[cli.pi]\nmax_retries = 1\nproject_config = \"yes\"\n";
        let err = validate(Path::new("baton.toml"), text, &load(text)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("baton.toml:3"), "{msg}");
        assert!(msg.contains("must be `refuse` or `allow`"), "{msg}");
    }

    #[test]
    fn keys_come_from_the_named_variable_and_relative_programs_from_the_project() {
        let raw = load("[cli.codex]\nprogram = \"bin/codex\"\napi_key_env = \"PATH\"\n");
        let s = &resolve(Path::new("/p"), &raw.cli)[&Cli::Codex];
        assert_eq!(s.program.as_deref(), Some(Path::new("/p/bin/codex")));
        assert!(s.api_key.is_some());
        assert_eq!(s.api_key_env.as_deref(), Some("PATH"));
    }
}
