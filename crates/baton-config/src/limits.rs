//! Ranges of `baton.toml` values, checked when the file is loaded.
//!
//! Timeouts become deadlines (`now + timeout`), counts become loop bounds and allocations: a value
//! the clock or memory cannot hold (`run_timeout_secs = 18446744073709551615`) must be refused
//! here with the file, line and key named, never reach arithmetic that panics. Deny patterns are
//! compiled here too, so an invalid glob is reported against `baton.toml` and its key.

use crate::error::ConfigError;
use crate::raw::RawConfig;
use baton_llm::registry::ProviderKind;
use std::path::Path;

/// The longest timeout accepted anywhere, in seconds: a year.
pub const MAX_TIMEOUT_SECS: u64 = 365 * 24 * 3600;
/// The most output kept per command, in bytes.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;
/// The most tokens `[memory] recall_tokens` may give recalled memories in one task.
pub const MAX_RECALL_TOKENS: u64 = 8_000;

/// The most stories `[sprint] parallel` may put in flight at once.
pub const MAX_PARALLEL: usize = 16;

/// The largest count accepted for turns, rounds, findings, batch size and concurrency.
pub const MAX_COUNT: u64 = 100_000;

struct Check<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Check<'_> {
    fn fail(&self, section: &str, key: &str, message: String) -> ConfigError {
        ConfigError::value(self.path, self.text, section, key, message)
    }

    fn range(
        &self,
        section: &str,
        key: &str,
        value: Option<u64>,
        min: u64,
        max: u64,
        unit: &str,
    ) -> Result<(), ConfigError> {
        match value {
            Some(v) if v < min || v > max => Err(self.fail(
                section,
                key,
                format!("must be between {min} and {max}{unit}, not {v}"),
            )),
            _ => Ok(()),
        }
    }

    fn money(&self, section: &str, key: &str, value: Option<f64>) -> Result<(), ConfigError> {
        match value {
            Some(v) if !v.is_finite() || v < 0.0 => Err(self.fail(
                section,
                key,
                format!("must be a finite amount of at least 0, not {v}"),
            )),
            _ => Ok(()),
        }
    }
}

fn wide<T: TryInto<u64>>(v: Option<T>) -> Option<u64> {
    v.map(|v| v.try_into().unwrap_or(u64::MAX))
}

/// Checks every range of `raw`, read from `text` at `path`.
pub fn validate(path: &Path, text: &str, raw: &RawConfig) -> Result<(), ConfigError> {
    let c = Check { path, text };
    if let Some(mode) = &raw.tdd.mode
        && baton_agent::tdd::TddMode::parse(mode).is_none()
    {
        return Err(c.fail(
            "tdd",
            "mode",
            format!("must be off, tdd or atdd, not `{mode}`"),
        ));
    }
    if let Some(exempt) = &raw.tdd.exempt
        && let Err(e) = baton_agent::tdd::map::Mapper::new(exempt, &[])
    {
        return Err(c.fail(
            "tdd",
            "exempt",
            format!("`{}` is not a valid glob: {}", e.glob, e.message),
        ));
    }
    if raw
        .tdd
        .test_commands
        .iter()
        .flatten()
        .any(|c| c.first().is_none_or(|p| p.trim().is_empty()))
    {
        return Err(c.fail(
            "tdd",
            "test_commands",
            "each command needs a program".to_owned(),
        ));
    }
    let year = " seconds (a year)";
    let s = &raw.sprint;
    for (key, v) in [
        ("test_timeout_secs", s.test_timeout_secs),
        ("story_timeout_secs", s.story_timeout_secs),
        ("run_timeout_secs", s.run_timeout_secs),
    ] {
        c.range("sprint", key, v, 1, MAX_TIMEOUT_SECS, year)?;
    }
    c.range(
        "sprint",
        "stale_days",
        wide(s.stale_days),
        0,
        36_500,
        " days",
    )?;
    c.range(
        "sprint",
        "max_review_rounds",
        wide(s.max_review_rounds),
        0,
        MAX_COUNT,
        "",
    )?;
    c.range(
        "sprint",
        "min_findings",
        wide(s.min_findings),
        0,
        MAX_COUNT,
        "",
    )?;
    c.range("sprint", "batch", wide(s.batch), 1, MAX_COUNT, "")?;
    c.range(
        "sprint",
        "parallel",
        wide(s.parallel),
        1,
        MAX_PARALLEL as u64,
        "",
    )?;
    let m = &raw.memory;
    c.range(
        "memory",
        "recall_tokens",
        wide(m.recall_tokens),
        0,
        MAX_RECALL_TOKENS,
        " tokens",
    )?;
    c.range(
        "memory",
        "max_per_scope",
        wide(m.max_per_scope),
        1,
        MAX_COUNT,
        "",
    )?;
    c.range(
        "memory",
        "external_timeout_secs",
        m.external_timeout_secs,
        1,
        3600,
        "",
    )?;
    if let Some(cmd) = &m.external
        && cmd.first().is_none_or(|p| p.trim().is_empty())
    {
        return Err(c.fail(
            "memory",
            "external",
            "must name a program first, e.g. `[\"memory-bridge\"]`".to_owned(),
        ));
    }
    if let Some(cmd) = &s.test_command
        && cmd.first().is_none_or(|p| p.trim().is_empty())
    {
        return Err(c.fail(
            "sprint",
            "test_command",
            "must name a program first, e.g. `[\"cargo\", \"test\"]`".to_owned(),
        ));
    }
    c.range(
        "commands",
        "timeout_secs",
        raw.commands.timeout_secs,
        1,
        MAX_TIMEOUT_SECS,
        year,
    )?;
    c.range(
        "commands",
        "max_output_bytes",
        wide(raw.commands.max_output_bytes),
        1,
        MAX_OUTPUT_BYTES as u64,
        " bytes",
    )?;
    c.range(
        "agents",
        "max_turns",
        wide(raw.agents.max_turns),
        1,
        MAX_COUNT,
        "",
    )?;
    c.range(
        "agents",
        "timeout_secs",
        raw.agents.timeout_secs,
        1,
        MAX_TIMEOUT_SECS,
        year,
    )?;
    c.range(
        "team",
        "concurrency",
        wide(raw.team.concurrency),
        1,
        1024,
        "",
    )?;
    let b = &raw.budget;
    c.money("budget", "warn_usd", b.warn_usd)?;
    c.money("budget", "hard_usd", b.hard_usd)?;
    for (name, p) in &raw.providers {
        let section = format!("providers.{name}");
        c.range(
            &section,
            "timeout_secs",
            p.timeout_secs,
            1,
            MAX_TIMEOUT_SECS,
            year,
        )?;
        c.range(&section, "max_retries", wide(p.max_retries), 0, 100, "")?;
        c.range(
            &section,
            "max_answer_bytes",
            p.max_answer_bytes,
            1024,
            1 << 30,
            " bytes",
        )?;
        // Each cache setting is a parameter of one wire; on another it would silently do nothing.
        for (key, set, wire) in [
            ("cache", p.cache.is_some(), ProviderKind::Anthropic),
            ("cache_key", p.cache_key.is_some(), ProviderKind::OpenAi),
            (
                "cache_prompt",
                p.cache_prompt.is_some(),
                ProviderKind::OpenAi,
            ),
        ] {
            if set && p.kind != wire {
                let (wire, other) = match wire {
                    ProviderKind::Anthropic => ("anthropic", "`cache_key` and `cache_prompt`"),
                    _ => ("openai", "`cache`"),
                };
                return Err(c.fail(
                    &section,
                    key,
                    format!(
                        "applies only to `{wire}`-kind providers; remove it, or use {other} \
                         for this provider's kind"
                    ),
                ));
            }
        }
    }
    for (model, p) in &raw.prices {
        let section = format!("prices.\"{model}\"");
        for (key, v) in [
            ("input_per_mtok", p.input_per_mtok),
            ("output_per_mtok", p.output_per_mtok),
            ("cache_read_per_mtok", p.cache_read_per_mtok),
            ("cache_write_per_mtok", p.cache_write_per_mtok),
            ("cache_write_1h_per_mtok", p.cache_write_1h_per_mtok),
        ] {
            c.money(&section, key, Some(v))?;
        }
    }
    if let Some(deny) = &raw.sandbox.deny {
        for pattern in deny {
            if let Err(e) = baton_agent::sandbox::Sandbox::check_pattern(pattern) {
                return Err(c.fail(
                    "sandbox",
                    "deny",
                    format!("has an invalid pattern `{pattern}`: {}", e.kind()),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, parse};

    fn check(toml: &str) -> Result<(), String> {
        let path = Path::new("/p/baton.toml");
        let raw = parse(path, toml).map_err(|e| e.to_string())?;
        validate(path, toml, &raw).map_err(|e| e.to_string())
    }

    /// Regression (issue 8): this value panicked with "overflow when adding duration to
    /// instant".
    #[test]
    fn regression_a_huge_run_timeout_is_refused_naming_file_line_and_key() {
        let err =
            check("[sprint]\nbatch = 2\nrun_timeout_secs = 18446744073709551615\n").unwrap_err();
        assert_eq!(
            err,
            "/p/baton.toml:3: `[sprint] run_timeout_secs` must be between 1 and 31536000 \
             seconds (a year), not 18446744073709551615"
        );
    }

    #[test]
    fn every_range_is_checked() {
        for (toml, key) in [
            (
                "[sprint]\nstory_timeout_secs = 0\n",
                "[sprint] story_timeout_secs",
            ),
            (
                "[sprint]\ntest_timeout_secs = 99999999999\n",
                "[sprint] test_timeout_secs",
            ),
            ("[sprint]\nbatch = 0\n", "[sprint] batch"),
            ("[sprint]\nstale_days = 4000000000\n", "[sprint] stale_days"),
            ("[sprint]\ntest_command = []\n", "[sprint] test_command"),
            (
                "[commands]\ntimeout_secs = 18446744073709551615\n",
                "[commands] timeout_secs",
            ),
            (
                "[commands]\nmax_output_bytes = 0\n",
                "[commands] max_output_bytes",
            ),
            ("[agents]\nmax_turns = 0\n", "[agents] max_turns"),
            (
                "[agents]\ntimeout_secs = 18446744073709551615\n",
                "[agents] timeout_secs",
            ),
            ("[team]\nconcurrency = 0\n", "[team] concurrency"),
            ("[budget]\nhard_usd = -1.0\n", "[budget] hard_usd"),
            ("[budget]\nwarn_usd = nan\n", "[budget] warn_usd"),
            ("[budget]\nhard_usd = inf\n", "[budget] hard_usd"),
            (
                "[providers.ollama]\nkind = \"openai\"\ntimeout_secs = 18446744073709551615\n",
                "[providers.ollama] timeout_secs",
            ),
            (
                "[prices.\"a/b\"]\ninput_per_mtok = -1.0\noutput_per_mtok = 1.0\n",
                "[prices.\"a/b\"] input_per_mtok",
            ),
            ("[sandbox]\ndeny = [\"ok\", \"bad[\"]\n", "[sandbox] deny"),
        ] {
            let err = check(toml).expect_err(toml);
            assert!(err.contains(&format!("`{key}`")), "{toml}: {err}");
            assert!(err.starts_with("/p/baton.toml:"), "{err}");
        }
        assert!(check(crate::TEMPLATE).is_ok());
    }

    #[test]
    fn cache_settings_are_refused_on_the_wrong_kind_with_their_line() {
        let err = check("[providers.ollama]\nkind = \"openai\"\ncache = \"1h\"\n").unwrap_err();
        assert!(
            err.starts_with(
                "/p/baton.toml:3: `[providers.ollama] cache` applies only to `anthropic`-kind \
                 providers"
            ),
            "{err}"
        );
        let err = check("[providers.gw]\nkind = \"anthropic\"\n\ncache_key = true\n").unwrap_err();
        assert!(
            err.starts_with("/p/baton.toml:4: `[providers.gw] cache_key` applies only to `openai`"),
            "{err}"
        );
        let err = check("[providers.gw]\nkind = \"script\"\ncache_prompt = true\n").unwrap_err();
        assert!(err.contains("`[providers.gw] cache_prompt`"), "{err}");
        let ok = "[providers.anthropic]\nkind = \"anthropic\"\ncache = \"off\"\n\
                  [providers.llamacpp]\nkind = \"openai\"\ncache_key = false\ncache_prompt = true\n";
        assert!(check(ok).is_ok());
        // A misspelt key or an unknown lifetime is refused when the file is parsed, with its line.
        let err =
            check("[providers.anthropic]\nkind = \"anthropic\"\ncache_ttl = \"1h\"\n").unwrap_err();
        assert!(
            err.starts_with("/p/baton.toml:3: unknown field `cache_ttl`"),
            "{err}"
        );
        let err =
            check("[providers.anthropic]\nkind = \"anthropic\"\n\ncache = \"10m\"\n").unwrap_err();
        assert!(err.starts_with("/p/baton.toml:4:"), "{err}");
        assert!(err.contains("`5m`, `1h`"), "{err}");
    }

    #[test]
    fn an_invalid_deny_glob_names_the_file_key_and_pattern() {
        let err = check("[sandbox]\n\ndeny = [\"*.pem\", \"secrets/[x\"]\n").unwrap_err();
        assert!(
            err.starts_with(
                "/p/baton.toml:3: `[sandbox] deny` has an invalid pattern `secrets/[x`"
            ),
            "{err}"
        );
    }

    #[test]
    fn loading_never_panics_on_extreme_values() {
        let dir = tempfile::tempdir().unwrap();
        for toml in [
            "[sprint]\nrun_timeout_secs = 18446744073709551615\n",
            "[team]\nconcurrency = 18446744073709551615\n",
            "[commands]\nmax_output_bytes = 18446744073709551615\n",
            "[sprint]\nmin_findings = 18446744073709551615\n",
        ] {
            std::fs::write(dir.path().join("baton.toml"), toml).unwrap();
            let err = Config::load_as(dir.path(), true).unwrap_err();
            assert!(err.to_string().contains("baton.toml:"), "{err}");
        }
    }
}
