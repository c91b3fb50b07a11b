//! `baton tdd`: the test-first guard's mode and one-time allowances, and how the guard and the
//! context rules are built from a project's settings.
//!
//! The mode set with `baton tdd on|off|atdd` lives in the project's journal; `[tdd] mode` in
//! `baton.toml` applies when no mode was set that way. In a project the user has not trusted,
//! the guard is the stricter of the two, so a cloned repository can turn it on but never off.

use crate::cli::{TddAction, TddArgs};
use crate::commands::Code;
use crate::config::Config;
use anyhow::{Context, Result};
use baton_agent::rules::Rule;
use baton_agent::tdd::{BASH_WRITE, MODE_SETTING, TddCore, TddMode};
use baton_store::journal::SqliteJournal;
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The mode in force, and where it comes from.
pub fn effective_mode(cfg: &Config, journal: &SqliteJournal) -> Result<(TddMode, String)> {
    let recorded = journal
        .guard_setting(MODE_SETTING)?
        .and_then(|m| TddMode::parse(&m));
    Ok(cfg.tdd_mode(recorded))
}

/// The guard for `cfg` keeping its state in `journal` under `scope`; `None` when it is off.
pub fn core(
    cfg: &Config,
    journal: Arc<Mutex<SqliteJournal>>,
    scope: &str,
) -> Result<Option<TddCore>> {
    let mode = {
        let j = journal
            .lock()
            .map_err(|_| anyhow::anyhow!("the journal is unavailable"))?;
        effective_mode(cfg, &j)?.0
    };
    if mode == TddMode::Off {
        return Ok(None);
    }
    let core = TddCore::new(cfg.tdd_settings(mode), &cfg.root, journal, scope)
        .with_context(|| format!("`{}`", cfg.root.join(crate::config::FILE_NAME).display()))?;
    Ok(Some(core))
}

/// The context rules in force ([`Config::context_rules`]), with the user's configuration
/// directory as the environment names it.
pub fn context_rules(cfg: &Config) -> Result<Vec<Rule>> {
    Ok(cfg.context_rules(crate::env::config_dir().as_deref())?)
}

/// Runs `baton tdd`.
pub fn run(root: &Path, args: &TddArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let mut journal = crate::project::journal(&cfg)?;
    let set = |journal: &mut SqliteJournal, mode: TddMode| -> Result<Code> {
        journal.set_guard_setting(MODE_SETTING, mode.as_str())?;
        let (now, from) = effective_mode(&cfg, journal)?;
        if now == mode {
            println!("test-first guard: {}", mode.as_str());
        } else {
            println!(
                "test-first guard: {} recorded, but {} is in force (from {from})",
                mode.as_str(),
                now.as_str()
            );
        }
        Ok(Code::Ok)
    };
    match &args.action {
        TddAction::On => set(&mut journal, TddMode::Tdd),
        TddAction::Off => set(&mut journal, TddMode::Off),
        TddAction::Atdd => set(&mut journal, TddMode::Atdd),
        TddAction::AllowBashWrite { how, reason } => {
            anyhow::ensure!(
                how == "once",
                "`baton tdd allow-bash-write` grants one write at a time: \
                 `baton tdd allow-bash-write once \"reason\"`"
            );
            anyhow::ensure!(
                !reason.trim().is_empty(),
                "say why the shell may write an implementation file (the reason is journaled)"
            );
            let id = journal.grant_allowance(BASH_WRITE, reason.trim())?;
            println!(
                "allowance {id}: the next shell write into an implementation file is let through once"
            );
            Ok(Code::Ok)
        }
        TddAction::Status { json, limit } => {
            let (mode, from) = effective_mode(&cfg, &journal)?;
            let s = cfg.tdd_settings(mode);
            let open: Vec<_> = journal
                .allowances()?
                .into_iter()
                .filter(|a| a.consumed_at.is_none())
                .collect();
            let log = journal.guard_records(None, Some(*limit))?;
            let rules: Vec<String> = context_rules(&cfg)?
                .into_iter()
                .map(|r| format!("{} ({})", r.name, r.origin))
                .collect();
            if *json {
                let doc = json!({
                    "mode": mode.as_str(),
                    "source": from,
                    "trusted": cfg.trusted,
                    "test_commands": s.test_commands,
                    "exempt": s.exempt,
                    "open_allowances": open,
                    "rules": rules,
                    "log": log,
                });
                println!("{}", serde_json::to_string_pretty(&doc)?);
                return Ok(Code::Ok);
            }
            println!("test-first guard: {} (from {from})", mode.as_str());
            println!(
                "test commands: {}",
                s.test_commands
                    .iter()
                    .map(|c| c.join(" "))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            println!("open shell-write allowances: {}", open.len());
            println!("context rules: {}", rules.join(", "));
            for r in &log {
                println!(
                    "  {} {} {} {} {}{}",
                    r.at,
                    r.scope,
                    r.kind,
                    if r.path.is_empty() { "-" } else { &r.path },
                    r.detail,
                    r.exit_code
                        .map(|c| format!(" (exit {c})"))
                        .unwrap_or_default()
                );
            }
            Ok(Code::Ok)
        }
    }
}
