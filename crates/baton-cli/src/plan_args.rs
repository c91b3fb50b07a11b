//! The command-line grammar of the planning commands: `baton plan`, `baton chat`, `baton check`
//! and `baton sprint-plan`.

use clap::Args;
use std::path::PathBuf;

/// `baton plan` (and `baton chat`, which is `baton plan` without an idea).
#[derive(Debug, Args, Default)]
pub struct PlanArgs {
    /// The idea to plan, in your own words. Without one (and without `--continue`), the router
    /// explains where the plan stands and what comes next.
    pub idea: Option<String>,
    /// Read the idea from a file.
    #[arg(long, value_name = "FILE", conflicts_with = "idea")]
    pub idea_file: Option<PathBuf>,
    /// Run every step straight through, without stopping after each artifact.
    #[arg(long)]
    pub yolo: bool,
    /// Go on with the next step after a stop (the next agent reads the files as they are now).
    #[arg(long = "continue")]
    pub resume: bool,
    /// Redo from this step on (brief, prd, architecture, epics, readiness, sprint-planning,
    /// quick-spec); each old artifact is kept as a checkpoint copy under `.baton/checkpoints/`.
    #[arg(long, value_name = "STEP")]
    pub from: Option<String>,
    /// Use this tier (0–4) instead of the suggested one.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=4))]
    pub tier: Option<u8>,
    /// Model for every agent (`provider/model`), overriding the agents' own.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
}

/// `baton check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Which version of an epics document that exists both whole (`epics.md`) and sharded
    /// (`epics/`) is current.
    #[arg(long, value_name = "VERSION", value_parser = ["whole", "sharded"])]
    pub epics: Option<String>,
}

/// `baton sprint-plan`.
#[derive(Debug, Args)]
pub struct SprintPlanArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Which version of an epics document that exists both whole (`epics.md`) and sharded
    /// (`epics/`) is current.
    #[arg(long, value_name = "VERSION", value_parser = ["whole", "sharded"])]
    pub epics: Option<String>,
}
