//! `baton demo`: the sprint loop end to end on a bundled example project.
//!
//! A tiny Rust crate (two epics, three stories) is written into a fresh directory, put under git,
//! and driven by `baton sprint --yolo`. By default the model is a recorded session replayed by the
//! script provider, so the run needs no API key and no network — but the files, the `cargo test`
//! runs, the commits and the journal are all real.

use super::example_project::{example, write_example};
use crate::cli::{DemoArgs, RunArgs, SprintArgs, StatusArgs};
use crate::commands::Code;
use anyhow::{Context, Result, bail};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The example project's files.
const FILES: &[(&str, &str)] = &[
    example!("Cargo.toml"),
    example!(".gitignore"),
    example!("baton.toml"),
    example!("src/lib.rs"),
    example!("_bmad-output/planning-artifacts/epics.md"),
    example!("_bmad-output/implementation-artifacts/sprint-status.yaml"),
    example!(".baton/scripts/demo.yaml"),
];

fn target_dir(args: &DemoArgs) -> Result<PathBuf> {
    if let Some(d) = &args.dir {
        if d.exists()
            && fs::read_dir(d)
                .map(|mut r| r.next().is_some())
                .unwrap_or(true)
        {
            bail!(
                "`{}` exists and is not empty; give a new directory",
                d.display()
            );
        }
        return Ok(d.clone());
    }
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
    Ok(std::env::temp_dir().join(format!("baton-demo-{stamp}-{}", std::process::id())))
}

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=baton",
            "-c",
            "user.email=baton@localhost",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .context("cannot run git; the demo needs git installed")?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Writes the example project into `dir` and commits it.
pub fn prepare(dir: &Path) -> Result<()> {
    write_example(
        dir,
        FILES,
        "tally: the example project, planned and ready for its sprint",
        git,
    )
}

/// Runs `baton demo`.
pub fn run(args: &DemoArgs) -> Result<Code> {
    let dir = target_dir(args)?;
    fs::create_dir_all(&dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    if args.plan {
        return super::demo_plan::run(&dir, args.model.clone(), git);
    }
    prepare(&dir)?;
    let say = |line: &str| {
        if !args.json {
            eprintln!("{line}");
        }
    };
    say(&format!(
        "baton demo: the example project `tally` is in `{}`",
        dir.display()
    ));
    match &args.model {
        None => say(
            "The model is REPLAYED from a recorded session (script/demo): no API is called.\n\
             The files, `cargo test` runs, git commits and journal are real.\n\
             To run the same demo with a live model: baton demo --model anthropic/claude-sonnet-4-5\n",
        ),
        Some(m) => say(&format!("The agents run on the live model `{m}`.\n")),
    }
    let cfg = crate::project::config(&dir)?;
    let settings = super::sprint::settings(&cfg, Some(3), None, None, false)?;
    let sprint_args = SprintArgs {
        batch: Some(3),
        parallel: None,
        stories: None,
        yolo: true,
        run: RunArgs {
            model: args.model.clone(),
            allow_dirty: false,
            budget: Default::default(),
            json: args.json,
        },
    };
    let report = super::sprint::run_sprint(&dir, &cfg, &sprint_args, settings)?;
    super::sprint::print_report(&report, args.json)?;
    if !args.json {
        println!();
        super::status::run(
            &dir,
            &StatusArgs {
                json: false,
                validate: false,
            },
        )?;
        let log = Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(["log", "--oneline", "--reverse"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        println!("\ncommits:\n{}", log.trim_end());
        println!("\nartifacts:");
        println!("  project      {}", dir.display());
        println!("  sprint       {}", cfg.sprint_status.display());
        println!("  stories      {}", cfg.stories.display());
        println!(
            "  journal      {}   (baton -C {} log)",
            cfg.journal_path().display(),
            dir.display()
        );
        println!("  transcripts  {}", cfg.runs_dir().display());
    }
    Ok(super::sprint::exit_code(&report))
}
