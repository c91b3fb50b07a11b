//! `baton check`: the plan's documents cross-referenced by code, every finding with file and line.

use crate::commands::Code;
use crate::plan_args::CheckArgs;
use anyhow::{Result, bail};
use baton_core::plan::check::{Finding, Severity, has_high};
use baton_store::planning::{self, shown};
use serde::Serialize;
use std::path::Path;

/// Version of the `--json` schema.
const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
struct Report<'a> {
    schema_version: u32,
    planning: String,
    prd: Option<String>,
    architecture: Option<String>,
    epics: Option<String>,
    /// Every epics document read, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    epics_documents: Vec<String>,
    high: usize,
    medium: usize,
    low: usize,
    findings: &'a [Finding],
}

/// Prints findings as `severity file:line message` lines.
pub fn print_findings(findings: &[Finding]) {
    for f in findings {
        println!(
            "  {:<6}  {}:{}  {}",
            f.severity.as_str(),
            f.file,
            f.line,
            f.message
        );
    }
}

/// Runs `baton check`.
pub fn run(root: &Path, args: &CheckArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let version = super::sprint_plan::version(args.epics.as_deref());
    let plan = planning::load_choosing(&cfg.planning, root, version)?;
    if let Some(question) = super::sprint_plan::undecided(root, &plan, "baton check") {
        bail!("{question}");
    }
    let Some(findings) = plan.check() else {
        bail!(
            "no epics document in `{}` (looked for `*epic*.md` and `epics/index.md`); \
             write one, or run `baton plan`",
            shown(root, &cfg.planning)
        );
    };
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let report = Report {
        schema_version: SCHEMA_VERSION,
        planning: shown(root, &cfg.planning),
        prd: plan.docs.prd.as_deref().map(|p| shown(root, p)),
        architecture: plan.docs.architecture.as_deref().map(|p| shown(root, p)),
        epics: plan.docs.epics.as_deref().map(|p| shown(root, p)),
        epics_documents: plan
            .epics
            .as_ref()
            .filter(|e| e.documents.len() > 1)
            .map(|e| e.documents.iter().map(|d| d.name.clone()).collect())
            .unwrap_or_default(),
        high: count(Severity::High),
        medium: count(Severity::Medium),
        low: count(Severity::Low),
        findings: &findings,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let missing: Vec<&str> = [
            ("PRD", report.prd.is_none()),
            ("architecture", report.architecture.is_none()),
        ]
        .iter()
        .filter(|(_, m)| *m)
        .map(|(n, _)| *n)
        .collect();
        if !report.epics_documents.is_empty() {
            println!(
                "epics read from {} documents: {}",
                report.epics_documents.len(),
                report.epics_documents.join(", ")
            );
        }
        if !missing.is_empty() {
            println!(
                "note: no {} in `{}`; its references are not checked",
                missing.join(" and no "),
                report.planning
            );
        }
        if findings.is_empty() {
            println!("The plan is consistent: no findings.");
        } else {
            println!(
                "{} finding{} ({} high, {} medium, {} low):",
                findings.len(),
                if findings.len() == 1 { "" } else { "s" },
                report.high,
                report.medium,
                report.low
            );
            print_findings(&findings);
        }
    }
    Ok(if has_high(&findings) {
        Code::Error
    } else {
        Code::Ok
    })
}
