//! Which context rules are in force: bundled < the user's < a trusted project's.
//!
//! Rules only add guidance, so an untrusted project may not switch them off (`[rules] enabled =
//! false` is narrowed away), but its own rules (`.baton/rules/`) are not loaded until it is
//! trusted: a rule's text reaches the agents' context.

use crate::resolve::Config;
use baton_agent::rules::{self, Rule, RuleError};
use std::path::Path;

impl Config {
    /// The context rules in force: bundled, the user's (`<user_dir>/rules/`) and, in a trusted
    /// project, the project's (`.baton/rules/`); none if `[rules] enabled = false`.
    pub fn context_rules(&self, user_dir: Option<&Path>) -> Result<Vec<Rule>, RuleError> {
        if !self.rules_enabled {
            return Ok(Vec::new());
        }
        let mut layers = vec![rules::bundled()];
        if let Some(dir) = user_dir {
            layers.push(rules::load_dir(&dir.join("rules"))?);
        }
        if self.trusted {
            layers.push(rules::load_dir(&self.state_dir.join("rules"))?);
        }
        Ok(rules::merge(layers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: &str = "---\nname: house\ntrigger: (?i)quick hack\n---\nNo quick hacks here.\n";

    fn names(cfg: &Config, user: Option<&Path>) -> Vec<String> {
        cfg.context_rules(user)
            .unwrap()
            .into_iter()
            .map(|r| r.name)
            .collect()
    }

    #[test]
    fn a_project_s_rules_load_only_when_it_is_trusted_and_the_user_s_always() {
        let project = tempfile::tempdir().unwrap();
        let rules_dir = project.path().join(".baton/rules");
        std::fs::create_dir_all(&rules_dir).unwrap();
        std::fs::write(rules_dir.join("house.md"), RULE).unwrap();
        let untrusted = Config::load_as(project.path(), false).unwrap();
        assert!(!names(&untrusted, None).contains(&"house".to_owned()));
        assert!(!names(&untrusted, None).is_empty(), "bundled rules load");
        let trusted = Config::load_as(project.path(), true).unwrap();
        assert!(names(&trusted, None).contains(&"house".to_owned()));
        let user = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(user.path().join("rules")).unwrap();
        std::fs::write(
            user.path().join("rules/mine.md"),
            RULE.replace("house", "mine"),
        )
        .unwrap();
        assert!(names(&untrusted, Some(user.path())).contains(&"mine".to_owned()));
    }

    #[test]
    fn rules_switched_off_by_a_trusted_project_are_none() {
        let project = tempfile::tempdir().unwrap();
        std::fs::write(
            project.path().join(crate::FILE_NAME),
            "[rules]\nenabled = false\n",
        )
        .unwrap();
        let trusted = Config::load_as(project.path(), true).unwrap();
        assert!(names(&trusted, None).is_empty());
        let untrusted = Config::load_as(project.path(), false).unwrap();
        assert!(!names(&untrusted, None).is_empty());
    }
}
