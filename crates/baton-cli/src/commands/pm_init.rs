//! `baton pm init`: writes the GitHub Actions workflows that run the pipeline.

use crate::cli::PmInitArgs;
use crate::commands::Code;
use anyhow::{Result, bail};
use std::path::Path;

/// Runs `baton pm init`.
pub fn init(_root: &Path, _args: &PmInitArgs) -> Result<Code> {
    bail!("`baton pm init` is not available yet")
}
