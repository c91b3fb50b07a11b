//! Precedence, in one place: bundled defaults < the project's `baton.toml` < flags.
//!
//! [`Config::load_as`] reads the project's file (bounded, strictly parsed, range-checked), applies
//! the trust rules to it unless the project is trusted ([`crate::narrow`]: an untrusted file may
//! narrow, never widen), and resolves it over the bundled defaults. Flags come last, from the
//! front end: the run's cost limits ([`BudgetFlags`]) and the model for every agent
//! ([`Config::agent_models`]). Nothing here prints: what an untrusted project did not get is
//! returned in [`Config::ignored`] for the front end to show.
//!
//! There is no user-wide `baton.toml` between the bundled defaults and the project's file yet.
//! Before one is read, narrowing must compare an untrusted file with the layers beneath it
//! rather than with the bundled defaults alone: otherwise such a file could replace a user's
//! stricter choice (a lower `hard_usd`, an extra deny pattern) with a default one.

use crate::FILE_NAME;
use crate::error::ConfigError;
use crate::raw::PathsSet;
use crate::raw::{RawConfig, parse};
use crate::resolve::Config;
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

impl Config {
    /// Loads `root/baton.toml` (defaults if absent) and resolves paths against `root`, applying
    /// the trust rules unless `trusted`. Prints nothing.
    pub fn load_as(root: &Path, trusted: bool) -> Result<Config, ConfigError> {
        let path = root.join(FILE_NAME);
        let (mut raw, text) =
            match baton_store::bounded::read_to_string(&path, baton_store::bounded::CONFIG_LIMIT) {
                Ok(text) => (parse(&path, &text)?, text),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    (RawConfig::default(), String::new())
                }
                Err(source) => return Err(ConfigError::Io { path, source }),
            };
        crate::limits::validate(&path, &text, &raw)?;
        crate::cli::validate(&path, &text, &raw)?;
        // As written: a path or provider the trust rules drop was still asked for.
        let paths_set = PathsSet::of(&raw.paths);
        let declared_providers = raw.providers.keys().cloned().collect();
        let ignored = if trusted {
            Vec::new()
        } else {
            crate::narrow::narrow(&mut raw)
        };
        let mut cfg = Self::resolve(root, raw);
        cfg.trusted = trusted;
        cfg.ignored = ignored;
        cfg.paths_set = paths_set;
        cfg.declared_providers = declared_providers;
        Ok(cfg)
    }

    /// This configuration with the command line's cost limits in place of `[budget]`'s.
    pub fn with_budget(mut self, flags: &BudgetFlags) -> Config {
        if flags.warn_usd.is_some() {
            self.budget.warn_usd = flags.warn_usd;
        }
        if flags.hard_usd.is_some() {
            self.budget.hard_usd = flags.hard_usd;
        }
        self.budget.allow_over_budget |= flags.allow_over_budget;
        self
    }

    /// The models agents run on, given the command line's `--model`: it wins over everything,
    /// `[agents.roles]` over `[agents] model`.
    pub fn agent_models(&self, flag: Option<String>) -> AgentModels {
        AgentModels {
            role_models: if flag.is_none() {
                self.role_models.clone()
            } else {
                BTreeMap::new()
            },
            model_override: flag.or(self.agent_model.clone()),
        }
    }
}

/// The models agents run on, after the flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentModels {
    /// A model (or CLI backend) per role.
    pub role_models: BTreeMap<String, String>,
    /// The model of every agent without a role model.
    pub model_override: Option<String>,
}

/// The command line's cost limits (`--warn-usd`, `--hard-usd`, `--allow-over-budget`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetFlags {
    /// `--warn-usd`.
    pub warn_usd: Option<f64>,
    /// `--hard-usd`.
    pub hard_usd: Option<f64>,
    /// `--allow-over-budget`.
    pub allow_over_budget: bool,
}

/// A flag's value out of its range.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{flag} {value}: give a number of US dollars, 0 or more")]
pub struct FlagError {
    /// The flag, as typed (`--hard-usd`).
    pub flag: &'static str,
    /// Its value.
    pub value: f64,
}

impl BudgetFlags {
    /// Checks the limits like `[budget]`'s.
    pub fn check(&self) -> Result<(), FlagError> {
        for (flag, v) in [("--warn-usd", self.warn_usd), ("--hard-usd", self.hard_usd)] {
            if let Some(value) = v
                && !(value.is_finite() && value >= 0.0)
            {
                return Err(FlagError { flag, value });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(toml: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), toml).unwrap();
        dir
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_the_defaults() {
        let dir = project("[budget]\nwarn_usd = 1.0\nhard_usd = 2.0\n");
        let cfg = Config::load_as(dir.path(), true).unwrap();
        assert_eq!(cfg.budget.hard_usd, Some(2.0));
        let cfg = cfg.with_budget(&BudgetFlags {
            hard_usd: Some(5.0),
            ..BudgetFlags::default()
        });
        assert_eq!(
            (cfg.budget.warn_usd, cfg.budget.hard_usd),
            (Some(1.0), Some(5.0))
        );
        assert!(!cfg.budget.allow_over_budget);
    }

    #[test]
    fn the_model_flag_wins_over_roles_and_roles_over_the_agents_model() {
        let dir = project(
            "[agents]\nmodel = \"anthropic/a\"\n[agents.roles]\ndeveloper = \"openai/b\"\n",
        );
        let cfg = Config::load_as(dir.path(), true).unwrap();
        let m = cfg.agent_models(None);
        assert_eq!(m.role_models["developer"], "openai/b");
        assert_eq!(m.model_override.as_deref(), Some("anthropic/a"));
        let m = cfg.agent_models(Some("script/x".to_owned()));
        assert!(m.role_models.is_empty());
        assert_eq!(m.model_override.as_deref(), Some("script/x"));
    }

    #[test]
    fn an_untrusted_file_is_narrowed_and_says_what_it_did_not_get() {
        let dir = project("[commands]\nallow = [\"sh\"]\n[providers.evil]\nkind = \"openai\"\n");
        let cfg = Config::load_as(dir.path(), false).unwrap();
        assert!(cfg.commands.allow.is_empty());
        assert!(!cfg.providers.contains_key("evil"));
        assert_eq!(cfg.declared_providers, vec!["evil".to_owned()]);
        let warning = cfg.ignored_warning().unwrap();
        assert!(warning.starts_with("warning: `"), "{warning}");
        assert!(
            warning.contains("\n  - [commands] allow: `sh`"),
            "{warning}"
        );
        assert!(
            warning.ends_with("run `baton trust` to apply them."),
            "{warning}"
        );
        let trusted = Config::load_as(dir.path(), true).unwrap();
        assert!(trusted.ignored_warning().is_none());
        assert!(trusted.providers.contains_key("evil"));
    }

    #[test]
    fn flags_out_of_range_are_refused() {
        let err = BudgetFlags {
            hard_usd: Some(-1.0),
            ..BudgetFlags::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "--hard-usd -1: give a number of US dollars, 0 or more"
        );
        assert!(BudgetFlags::default().check().is_ok());
    }
}
