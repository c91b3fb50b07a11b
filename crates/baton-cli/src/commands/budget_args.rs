//! The cost limits a run command takes on its command line (`--warn-usd`, `--hard-usd`,
//! `--allow-over-budget`): checked like `[budget]`'s, and put in its place for that run.

use crate::cli::BudgetArgs;
use crate::config::Config;
use anyhow::Result;

/// `cfg` with the command line's cost limits in place of `[budget]`'s.
pub fn with_budget(cfg: Config, b: &BudgetArgs) -> Config {
    cfg.with_budget(&budget_flags(b))
}

/// Checks the command line's cost limits like `[budget]`'s.
pub fn check_budget_args(b: &BudgetArgs) -> Result<()> {
    Ok(budget_flags(b).check()?)
}

fn budget_flags(b: &BudgetArgs) -> baton_config::BudgetFlags {
    baton_config::BudgetFlags {
        warn_usd: b.warn_usd,
        hard_usd: b.hard_usd,
        allow_over_budget: b.allow_over_budget,
    }
}
