//! Coding-agent CLIs in the binary: the hook command Claude Code is given for baton's policy
//! (this very program), and what `baton doctor` says about each CLI.
//!
//! `[cli.NAME]` and `[agents.roles]` are read, checked, narrowed for an untrusted project and
//! resolved by [`baton_config::cli`].

use crate::config::Config;
use baton_agent::worker::cli::{Cli, CliConfig, CliSettings};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The hook command Claude Code runs for baton's policy: this very binary, `guard --policy`,
/// in the project.
pub fn policy_hook(root: &Path) -> String {
    let exe = std::env::current_exe()
        .ok()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "baton".to_owned());
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    // The CLI's HOME is not the user's: the hook gets baton's configuration directory, where
    // the project's trust is recorded.
    let config = crate::env::config_dir()
        .map(|d| {
            format!(
                "{}={} ",
                crate::env::BATON_CONFIG_DIR,
                quote(&d.display().to_string())
            )
        })
        .unwrap_or_default();
    format!(
        "{config}{} -C {} guard --policy",
        quote(&exe),
        quote(&root.display().to_string())
    )
}

/// The engine's CLI settings for a run of `cfg`.
pub fn config(cfg: &Config) -> CliConfig {
    cfg.cli_config(Some(policy_hook(&cfg.root)))
}

/// What `baton doctor` says about one coding-agent CLI.
#[derive(Debug, serde::Serialize)]
pub struct CliView {
    /// The backend name (`claude-code`, `codex`, `pi`).
    pub name: String,
    /// The program baton would run.
    pub program: Option<String>,
    /// Found and runnable.
    pub installed: bool,
    /// What `--version` printed.
    pub version: Option<String>,
    /// The version baton is tested against.
    pub tested_version: String,
    /// The agents (or roles) that run on it.
    pub used_by: Vec<String>,
    /// The model server it is pointed at.
    pub base_url: Option<String>,
    /// `set (VAR)`, `not set (VAR is empty)` or `none configured` — never the value.
    pub credentials: String,
    /// The command line baton gives it (for a writing role; placeholders in angle brackets).
    pub flags: String,
}

/// The CLIs `baton doctor` reports: those agents use and those `baton.toml` configures. `used`
/// maps a CLI to the agents on it.
pub async fn cli_views(
    cfg: &Config,
    used: &BTreeMap<Cli, Vec<String>>,
) -> (Vec<CliView>, Vec<String>) {
    let mut views = Vec::new();
    let mut problems = Vec::new();
    let clis = CliConfig {
        settings: cfg.cli.clone(),
        policy_hook: Some("<baton> -C <project> guard --policy".to_owned()),
        state_dir: None,
    };
    for cli in Cli::ALL {
        let settings = clis.settings(cli);
        let used_by = used.get(&cli).cloned().unwrap_or_default();
        let configured = settings != CliSettings::default();
        // Only CLIs the project uses or configures: what happens to be installed on this
        // machine is no part of the project's setup.
        if used_by.is_empty() && !configured {
            continue;
        }
        let program = clis.program(cli);
        let version = match &program {
            Some(p) => version_of(p).await,
            None => None,
        };
        let installed = version.is_some();
        if !installed && !used_by.is_empty() {
            let (pkg, v) = cli.package();
            problems.push(format!(
                "{cli} is used by {} but {}; install it with `npm install -g {pkg}@{v}` or set `[cli.{cli}] program`",
                used_by.join(", "),
                match &program {
                    Some(p) => format!("`{} --version` fails", p.display()),
                    None => format!("`{}` is not on PATH", cli.program()),
                }
            ));
        }
        let credentials = match (&settings.api_key_env, &settings.api_key) {
            (Some(var), Some(_)) => format!("set (from {var})"),
            (Some(var), None) => format!("not set ({var} is empty or unset)"),
            (None, _) if settings.base_url.is_some() => {
                "none configured (a placeholder is sent to the server)".to_owned()
            }
            (None, _) => format!(
                "none configured: baton passes no credential to the CLI (set `[cli.{cli}] api_key_env`, e.g. {})",
                cli.default_key_env()
            ),
        };
        let home = PathBuf::from("<home>");
        let launch = baton_agent::worker::cli::Launch {
            model: "<model>",
            provider: Some("<provider>"),
            settings: &settings,
            system: "<agent prompt>",
            task: "<task>",
            read_only: false,
            max_turns: cfg.max_turns,
            root: &cfg.root,
            home: &home,
            policy_hook: clis.policy_hook.as_deref(),
            allow_commands: &cfg.commands.allow,
        };
        let inv = baton_agent::worker::cli::invocation(cli, &launch);
        let flags = inv
            .args
            .iter()
            .map(|a| {
                if a.is_empty() || a.contains(' ') {
                    format!("{a:?}")
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        views.push(CliView {
            name: cli.name().to_owned(),
            program: program.map(|p| p.display().to_string()),
            installed,
            version,
            tested_version: cli.package().1.to_owned(),
            used_by,
            base_url: settings.base_url.clone(),
            credentials,
            flags,
        });
    }
    (views, problems)
}

/// The first line `program --version` prints, within a few seconds.
async fn version_of(program: &Path) -> Option<String> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(20), cmd.output())
        .await
        .ok()?
        .ok()?;
    // pi prints its version on stderr, without a newline.
    let text = match String::from_utf8_lossy(&out.stdout).trim() {
        "" => String::from_utf8_lossy(&out.stderr).into_owned(),
        t => t.to_owned(),
    };
    let line = text.lines().next()?.trim().to_owned();
    (out.status.success() && !line.is_empty()).then_some(line)
}

/// Prints the CLI part of `baton doctor`.
pub fn print_clis(views: &[CliView]) {
    for v in views {
        println!(
            "cli       {} ({})",
            v.name,
            match (&v.program, &v.version) {
                (Some(p), Some(ver)) => format!("{p}, {ver}; tested with {}", v.tested_version),
                (Some(p), None) => format!("{p}, does not run"),
                (None, _) => "not installed".to_owned(),
            }
        );
        if !v.used_by.is_empty() {
            println!("  used by   {}", v.used_by.join(", "));
        }
        if let Some(u) = &v.base_url {
            println!("  server    {u}");
        }
        println!("  key       {}", v.credentials);
        println!("  flags     {}", v.flags);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_command_quotes_its_paths() {
        let cmd = policy_hook(Path::new("/it's here"));
        assert!(cmd.ends_with(r"-C '/it'\''s here' guard --policy"), "{cmd}");
    }
}
