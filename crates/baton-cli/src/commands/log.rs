//! `baton log`: the journal's status events.

use crate::cli::LogArgs;
use crate::commands::Code;
use anyhow::Result;
use baton_store::journal::{EventFilter, Journal};
use comfy_table::{Table, presets::NOTHING};
use std::path::Path;

/// Runs `baton log`.
pub fn run(root: &Path, args: &LogArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let journal = crate::project::journal(&cfg)?;
    let events = journal.events(&EventFilter {
        key: args.key.clone(),
        all_states: args.all,
        limit: args.limit,
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&events)?);
        return Ok(Code::Ok);
    }
    if events.is_empty() {
        println!("no events yet; `baton set KEY STATUS` records one");
        return Ok(Code::Ok);
    }
    let mut table = Table::new();
    table.load_style(NOTHING);
    let mut header = vec!["#", "time", "actor", "key", "change", "reason"];
    if args.all {
        header.push("state");
    }
    table.set_header(header);
    for e in &events {
        let from = e.from.as_deref().unwrap_or("(new)");
        let forced = if e.forced { " (forced)" } else { "" };
        let mut row = vec![
            e.id.to_string(),
            e.at.clone(),
            e.actor.clone(),
            e.key.clone(),
            format!("{from} → {}{forced}", e.to),
            e.reason.clone(),
        ];
        if args.all {
            row.push(e.state.as_str().to_owned());
        }
        table.add_row(row);
    }
    println!("{table}");
    Ok(Code::Ok)
}
