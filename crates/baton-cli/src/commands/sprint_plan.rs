//! `baton sprint-plan`: `sprint-status.yaml` generated from the epics documents, or the epics
//! merged into it (BMAD-FORMAT.md R5). Every epics document of the planning folder is read, as
//! BMad's sprint planning passes every epic file to its script; a document both whole and sharded
//! is a question for the person (`--epics whole|sharded`), never a guess.

use crate::commands::Code;
use crate::plan_args::SprintPlanArgs;
use anyhow::{Context, Result, bail};
use baton_store::journal::SqliteJournal;
use baton_store::ledger::Now;
use baton_store::lock::FileLock;
use baton_store::planning::{self, EpicsVersion, LoadedPlan, shown};
use baton_store::sprint_file::plan::{
    PlanJournal, PlanReport, plan_sprint, plan_warnings, planned_from,
};
use std::path::Path;

/// The version `--epics` names.
pub fn version(flag: Option<&str>) -> EpicsVersion {
    match flag {
        Some("whole") => EpicsVersion::Whole,
        Some("sharded") => EpicsVersion::Sharded,
        _ => EpicsVersion::Undecided,
    }
}

/// The question to ask when an epics document exists both whole and sharded and nobody said
/// which is current: `None` when there is nothing to ask.
pub fn undecided(root: &Path, loaded: &LoadedPlan, command: &str) -> Option<String> {
    let pairs: Vec<String> = loaded
        .undecided
        .iter()
        .map(|t| {
            format!(
                "`{}` and `{}`",
                shown(root, &t.whole),
                shown(root, &t.sharded)
            )
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    Some(format!(
        "which epics are current? {} hold the same document, whole and sharded, and planning \
         from the wrong one would lose or invent stories. Say which: `{command} --epics whole` \
         or `{command} --epics sharded` (or remove the one that is out of date)",
        pairs.join(", ")
    ))
}

/// Plans the sprint from the epics in the planning folder; the report of what changed.
pub fn plan(root: &Path, cfg: &crate::config::Config) -> Result<PlanReport> {
    plan_choosing(root, cfg, EpicsVersion::Undecided)
}

/// [`plan`], reading `version` of a document both whole and sharded; refused, with the question,
/// when there is one and nobody said.
pub fn plan_choosing(
    root: &Path,
    cfg: &crate::config::Config,
    version: EpicsVersion,
) -> Result<PlanReport> {
    let loaded = planning::load_choosing(&cfg.planning, root, version)?;
    if let Some(question) = undecided(root, &loaded, "baton sprint-plan") {
        bail!("{question}");
    }
    let Some(epics) = loaded.epics else {
        bail!(
            "no epics document in `{}` (looked for `*epic*.md` and `epics/index.md`)",
            shown(root, &cfg.planning)
        );
    };
    if epics.epics.is_empty() {
        bail!(
            "`{}` has no `## Epic N: title` heading; nothing to plan",
            epics.path
        );
    }
    let plan = planned_from(&epics, &cfg.stories);
    let now = Now::system();
    let project = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".to_owned());
    let story_location = shown(root, &cfg.stories);
    let header =
        super::sprint_skeleton::skeleton(&project, &story_location, &now.stamp.to_string());
    let _lock = FileLock::acquire(&cfg.lock_path())
        .with_context(|| format!("cannot lock `{}`", shown(root, &cfg.sprint_status)))?;
    let mut journal = SqliteJournal::open(&cfg.journal_path())?;
    let mut pj = PlanJournal {
        journal: &mut journal,
        at: jiff::Timestamp::now().to_string(),
        run_id: None,
    };
    let mut report = plan_sprint(&cfg.sprint_status, &header, &plan, now.stamp, Some(&mut pj))?;
    report.warnings = plan_warnings(&epics);
    if epics.documents.len() > 1 {
        report.documents = epics.documents.iter().map(|d| d.name.clone()).collect();
    }
    Ok(report)
}

/// Prints what a planning run did.
pub fn print_report(root: &Path, path: &Path, r: &PlanReport) {
    let file = shown(root, path);
    if !r.documents.is_empty() {
        println!(
            "Planned from {} epics documents: {}.",
            r.documents.len(),
            r.documents.join(", ")
        );
    }
    if r.created {
        println!("Created {file} with {} entries.", r.added.len());
    } else if r.added.is_empty() && r.raised.is_empty() {
        println!(
            "{file} is in sync with the epics ({} entries kept).",
            r.kept
        );
    } else {
        println!(
            "Updated {file}: {} added, {} raised, {} kept as they were.",
            r.added.len(),
            r.raised.len(),
            r.kept
        );
    }
    if !r.created {
        for (k, s) in &r.added {
            println!("  + {k}: {s}");
        }
    }
    for (k, from, to) in &r.raised {
        println!("  ↑ {k}: {from} → {to} (story file exists)");
    }
    if !r.renamed.is_empty() {
        println!("Renamed in the epics (kept under the key in the file, with its status):");
        for (old, new) in &r.renamed {
            println!("  ~ {old} (now titled as {new})");
        }
    }
    for w in &r.warnings {
        println!("warning: {w}");
    }
    if !r.orphans.is_empty() {
        println!("Kept, but no longer in the epics (re-key or remove them by hand):");
        for (k, s) in &r.orphans {
            println!("  ? {k}: {s}");
        }
    }
}

/// Runs `baton sprint-plan`.
pub fn run(root: &Path, args: &SprintPlanArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let report = plan_choosing(root, &cfg, version(args.epics.as_deref()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(root, &cfg.sprint_status, &report);
    }
    Ok(Code::Ok)
}
