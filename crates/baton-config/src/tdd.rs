//! The test-first guard's settings from `[tdd]` (and the sprint's test command), after the trust
//! rules, and which mode is in force.
//!
//! The mode set with `baton tdd on|off|atdd` is recorded in the project's journal; `[tdd] mode`
//! applies when none was recorded. In a project the user has not trusted the stricter of the two
//! wins, so a cloned repository can turn the guard on but never off, and its test commands
//! (`[tdd] test_commands`, `[sprint] test_command`) never count as test runs.

use crate::resolve::Config;
use baton_agent::tdd::map::Override;
use baton_agent::tdd::{TddMode, TddSettings};

impl Config {
    /// The mode in force given the one recorded with `baton tdd`, and where it comes from.
    pub fn tdd_mode(&self, recorded: Option<TddMode>) -> (TddMode, String) {
        let toml = self.tdd.mode.as_deref().and_then(TddMode::parse);
        match (recorded, toml) {
            (Some(u), Some(t)) if !self.trusted && t > u => (
                t,
                "baton.toml (an untrusted project may make the guard stricter)".to_owned(),
            ),
            (Some(u), _) => (u, "`baton tdd`".to_owned()),
            (None, Some(t)) => (t, "baton.toml".to_owned()),
            (None, None) => (TddMode::Off, "default".to_owned()),
        }
    }

    /// The guard's settings in `mode`, after the trust rules.
    pub fn tdd_settings(&self, mode: TddMode) -> TddSettings {
        let mut s = TddSettings::defaults(mode);
        if let Some(exempt) = &self.tdd.exempt {
            s.exempt = exempt.clone();
        }
        if self.trusted {
            if let Some(extra) = &self.tdd.test_commands {
                s.test_commands.extend(extra.iter().cloned());
            }
            if let Some(cmd) = &self.sprint.test_command
                && !cmd.is_empty()
            {
                s.test_commands.push(cmd.clone());
            }
        }
        s.overrides = self
            .tdd
            .overrides
            .iter()
            .flatten()
            .map(|(glob, test)| Override {
                glob: glob.clone(),
                test: test.clone(),
            })
            .collect();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(toml: &str, trusted: bool) -> Config {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(crate::FILE_NAME), toml).unwrap();
        Config::load_as(dir.path(), trusted).unwrap()
    }

    #[test]
    fn an_untrusted_project_may_make_the_guard_stricter_only() {
        let cfg = load("[tdd]\nmode = \"atdd\"\n", false);
        assert_eq!(cfg.tdd_mode(Some(TddMode::Off)).0, TddMode::Atdd);
        let cfg = load("[tdd]\nmode = \"off\"\n", false);
        assert_eq!(cfg.tdd_mode(None).0, TddMode::Off);
        assert_eq!(cfg.tdd_mode(Some(TddMode::Tdd)).0, TddMode::Tdd);
        let trusted = load("[tdd]\nmode = \"atdd\"\n", true);
        assert_eq!(trusted.tdd_mode(Some(TddMode::Off)).0, TddMode::Off);
        assert_eq!(trusted.tdd_mode(None).1, "baton.toml");
    }

    #[test]
    fn only_a_trusted_project_adds_test_commands() {
        let toml = "[sprint]\ntest_command = [\"cargo\", \"test\"]\n\
                    [tdd]\ntest_commands = [[\"make\", \"check\"]]\n";
        let make = vec!["make".to_owned(), "check".to_owned()];
        let trusted = load(toml, true).tdd_settings(TddMode::Tdd);
        assert!(trusted.test_commands.contains(&make));
        let untrusted = load(toml, false).tdd_settings(TddMode::Tdd);
        assert!(!untrusted.test_commands.contains(&make));
        assert_eq!(
            untrusted.test_commands,
            TddSettings::defaults(TddMode::Tdd).test_commands
        );
    }
}
