//! `baton plan` and `baton chat`: the planning pipeline from an idea to a sprint plan.

use crate::commands::Code;
use crate::plan_args::PlanArgs;
use anyhow::{Result, bail};
use std::path::Path;

/// Runs `baton plan`.
pub fn run(_root: &Path, _args: &PlanArgs) -> Result<Code> {
    bail!("not yet")
}
