//! `baton agents` and `baton trust`.

use crate::cli::{AgentsArgs, TrustArgs};
use crate::commands::Code;
use anyhow::Result;
use baton_agent::discovery::{self, Discovery, Locations};
use comfy_table::{Table, presets::NOTHING};
use std::path::Path;

/// Discovers the agents of the project at `root`.
pub fn discover(root: &Path) -> Discovery {
    discovery::discover(&Locations {
        user_dir: crate::env::config_dir().map(|d| d.join("agents")),
        project_dir: root.join(crate::config::STATE_DIR).join("agents"),
        trusted: crate::trust::is_trusted(root),
    })
}

/// Runs `baton agents`.
pub fn run(root: &Path, args: &AgentsArgs) -> Result<Code> {
    let found = discover(root);
    let mut errors: Vec<String> = found.errors.iter().map(|e| e.to_string()).collect();
    // The agents do not depend on `baton.toml`, but every command that runs them does: an
    // invalid file is an error here too, not something to find out later.
    if let Err(e) = crate::config::load(root) {
        errors.push(e.to_string());
    }
    // `[agents] model` runs every agent on one model: show the model that will run.
    let model_override = crate::project::config(root)
        .ok()
        .and_then(|cfg| cfg.agent_model);
    if args.json {
        let out = serde_json::json!({
            "agents": found.agents.values().collect::<Vec<_>>(),
            "model_override": model_override,
            "notices": found.notices,
            "errors": errors,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(Code::Ok);
    }
    let mut table = Table::new();
    table.load_style(NOTHING);
    table.set_header(vec!["agent", "role", "model", "tools", "from"]);
    for a in found.agents.values() {
        table.add_row(vec![
            a.name.clone(),
            a.role.clone(),
            match &model_override {
                Some(m) if *m != a.model => format!("{m} (own: {})", a.model),
                _ => a.model.clone(),
            },
            a.tools.join(", "),
            a.source.to_string(),
        ]);
    }
    println!("{table}");
    if let Some(m) = &model_override {
        println!(
            "every agent runs on {m} (`[agents] model` in baton.toml; `--model` on `baton team` and `baton sprint` overrides it)"
        );
    }
    for n in &found.notices {
        eprintln!("note: {n}");
    }
    for e in &errors {
        eprintln!("error: {e}");
    }
    Ok(if errors.is_empty() {
        Code::Ok
    } else {
        Code::Error
    })
}

/// Runs `baton trust`.
pub fn trust(root: &Path, args: &TrustArgs) -> Result<Code> {
    let changed = crate::trust::set(root, !args.revoke)?;
    let what = if args.revoke {
        "no longer trusted"
    } else {
        "trusted"
    };
    if changed {
        println!("`{}` is now {what}", root.display());
        if !args.revoke {
            println!(
                "its `.baton/agents/` and all of its `baton.toml` (providers, command allowlist, \
                 deny list, test command, paths) now apply"
            );
        }
    } else {
        println!("`{}` was already {what}; nothing changed", root.display());
    }
    Ok(Code::Ok)
}
