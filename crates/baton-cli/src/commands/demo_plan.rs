//! `baton demo --plan`: the planning pipeline end to end on the bundled example project.
//!
//! The example crate is written without its plan, put under git, and `baton plan --yolo` turns
//! one idea into the brief, PRD, architecture, epics, readiness report and `sprint-status.yaml`
//! with a recorded planning session (`.baton/scripts/plan.yaml`) replayed by the script
//! provider. The plan is committed, checked by `baton check`, and shown on the board; the
//! sprint demo's recorded session then builds it with `baton sprint --yolo`.

use super::example_project::{example, write_example};
use crate::cli::StatusArgs;
use crate::commands::Code;
use crate::plan_args::{CheckArgs, PlanArgs};
use anyhow::Result;
use std::path::Path;

/// The example project without its plan, plus both recorded sessions.
const FILES: &[(&str, &str)] = &[
    example!("Cargo.toml"),
    example!(".gitignore"),
    example!("baton.toml"),
    example!("src/lib.rs"),
    example!(".baton/scripts/demo.yaml"),
    example!(".baton/scripts/plan.yaml"),
];

/// The idea the demo plans.
pub const IDEA: &str = "A Rust library that counts the words and lines of a text and prints a \
                        one-line summary other programs can parse";

/// The recorded planning session's model.
const PLAN_MODEL: &str = "script/plan";

type Git = fn(&Path, &[&str]) -> Result<()>;

/// Runs the planning demo in the empty directory `dir`.
pub fn run(dir: &Path, model: Option<String>, git: Git) -> Result<Code> {
    write_example(dir, FILES, "tally: an empty crate and an idea", git)?;
    eprintln!(
        "baton demo --plan: the example project `tally` is in `{}`",
        dir.display()
    );
    match &model {
        None => eprintln!(
            "The planning agents are REPLAYED from a recorded session ({PLAN_MODEL}): no API is \
             called. The documents, the check and the sprint file are real.\n"
        ),
        Some(m) => eprintln!("The planning agents run on the live model `{m}`.\n"),
    }
    println!("$ baton plan \"{IDEA}\" --yolo");
    let args = PlanArgs {
        idea: Some(IDEA.to_owned()),
        yolo: true,
        model: Some(model.unwrap_or_else(|| PLAN_MODEL.to_owned())),
        ..PlanArgs::default()
    };
    let code = super::plan::run(dir, &args)?;
    if code != Code::Ok {
        return Ok(code);
    }
    git(dir, &["add", "-A"])?;
    git(
        dir,
        &[
            "commit",
            "-q",
            "-m",
            "plan: brief, PRD, architecture, epics, readiness report, sprint status",
        ],
    )?;
    println!("\n$ baton check");
    let check = super::check::run(
        dir,
        &CheckArgs {
            json: false,
            epics: None,
        },
    )?;
    println!("\n$ baton status");
    super::status::run(
        dir,
        &StatusArgs {
            json: false,
            validate: false,
        },
    )?;
    println!(
        "\nThe plan is committed. Build it with the recorded sprint session:\n  baton -C {} sprint --yolo",
        dir.display()
    );
    Ok(check)
}
