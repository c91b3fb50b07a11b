//! Context rules: short markdown reminders injected when an agent's own words show it is about
//! to cut a corner.
//!
//! A rule is a markdown file with frontmatter — `name`, `trigger` (a regex), `priority` (higher
//! first), `frequency` (`once`, `per-turn` or `cooldown:N`) — and a body, the text the agent
//! gets. Before each model call the last ~2,000 characters of the agent's recent output are
//! matched against every trigger (compiled once, when the rule is loaded); the bodies of the
//! rules that fire are added as one late user-context message, and each firing is journaled.
//! Rules come bundled (`test-first`, `yagni`, `no-impl-before-spec`), from the user's rule folder
//! and, in a trusted project only, from `.baton/rules/`; a later layer replaces a rule of the
//! same name.

use crate::guard::ContextSource;
use baton_store::frontmatter::Document;
use baton_store::journal::{GuardState, NewGuardRecord};
use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The bundled rules.
const BUNDLED: &[(&str, &str)] = &[
    ("test-first.md", include_str!("../rules/test-first.md")),
    ("yagni.md", include_str!("../rules/yagni.md")),
    (
        "no-impl-before-spec.md",
        include_str!("../rules/no-impl-before-spec.md"),
    ),
];

/// How often a rule may fire in one agent run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frequency {
    /// At most once.
    Once,
    /// Before every model call whose input matches.
    PerTurn,
    /// At most once every N model calls.
    Cooldown(u32),
}

impl Frequency {
    fn parse(s: &str) -> Option<Frequency> {
        match s.trim() {
            "once" => Some(Frequency::Once),
            "per-turn" => Some(Frequency::PerTurn),
            other => other
                .strip_prefix("cooldown:")
                .and_then(|n| n.trim().parse().ok())
                .filter(|n| *n >= 1)
                .map(Frequency::Cooldown),
        }
    }
}

/// One rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its name.
    pub name: String,
    /// Its trigger, compiled.
    pub trigger: Regex,
    /// Higher fires first.
    pub priority: i64,
    /// How often it may fire.
    pub frequency: Frequency,
    /// The text the agent gets.
    pub body: String,
    /// Where it came from (a file name or path).
    pub origin: String,
}

/// A rule file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// The file is not a valid rule.
    #[error("rule `{origin}`: {message}")]
    Invalid {
        /// The file.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// The folder or a file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The path.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Front {
    name: String,
    trigger: String,
    #[serde(default)]
    priority: i64,
    #[serde(default)]
    frequency: Option<String>,
}

/// Parses one rule file.
///
/// # Errors
///
/// [`RuleError::Invalid`] naming the file and the field at fault.
pub fn parse(origin: &str, text: &str) -> Result<Rule, RuleError> {
    let invalid = |message: String| RuleError::Invalid {
        origin: origin.to_owned(),
        message,
    };
    let doc = Document::parse(origin, text).map_err(|e| invalid(e.to_string()))?;
    let yaml = doc
        .frontmatter()
        .ok_or_else(|| invalid("no frontmatter (`---` … `---`) with name and trigger".into()))?;
    let front: Front = serde_saphyr::from_str(yaml).map_err(|e| {
        invalid(
            e.to_string()
                .lines()
                .next()
                .unwrap_or("invalid frontmatter")
                .to_owned(),
        )
    })?;
    if front.name.trim().is_empty() {
        return Err(invalid("`name` is empty".into()));
    }
    let trigger = RegexBuilder::new(&front.trigger)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| invalid(format!("`trigger` is not a valid regex: {e}")))?;
    let frequency = match &front.frequency {
        None => Frequency::Once,
        Some(f) => Frequency::parse(f).ok_or_else(|| {
            invalid(format!(
                "`frequency` is `{f}`; expected once, per-turn or cooldown:N (N ≥ 1)"
            ))
        })?,
    };
    let body = doc.body().trim().to_owned();
    if body.is_empty() {
        return Err(invalid(
            "the body (the text the agent gets) is empty".into(),
        ));
    }
    Ok(Rule {
        name: front.name.trim().to_owned(),
        trigger,
        priority: front.priority,
        frequency,
        body,
        origin: origin.to_owned(),
    })
}

/// The bundled rules.
pub fn bundled() -> Vec<Rule> {
    BUNDLED
        .iter()
        .filter_map(|(origin, text)| parse(origin, text).ok())
        .collect()
}

/// The rules in `dir` (`*.md`, in name order); none if the folder does not exist.
///
/// # Errors
///
/// [`RuleError`] for the first file that cannot be read or parsed.
pub fn load_dir(dir: &Path) -> Result<Vec<Rule>, RuleError> {
    let io = |path: &Path, source| RuleError::Io {
        path: path.display().to_string(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir, e)),
    };
    let mut paths: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let text = baton_store::bounded::read_to_string(p, baton_store::bounded::CONFIG_LIMIT)
                .map_err(|e| io(p, e))?;
            parse(&p.display().to_string(), &text)
        })
        .collect()
}

/// Layers merged: a later layer's rule replaces an earlier one of the same name.
pub fn merge(layers: Vec<Vec<Rule>>) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    for layer in layers {
        for r in layer {
            out.retain(|o| o.name != r.name);
            out.push(r);
        }
    }
    out.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.name.cmp(&b.name)));
    out
}

/// The rules of one agent run, as a context source.
pub struct ContextRules {
    rules: Vec<Rule>,
    fired: Mutex<HashMap<String, u32>>,
    journal: Option<(Arc<Mutex<dyn GuardState + Send>>, String)>,
    agent: String,
}

impl ContextRules {
    /// `rules` for agent `agent`, journaling firings under `scope` if a journal is given.
    pub fn new(
        rules: Vec<Rule>,
        agent: &str,
        journal: Option<(Arc<Mutex<dyn GuardState + Send>>, String)>,
    ) -> ContextRules {
        ContextRules {
            rules,
            fired: Mutex::new(HashMap::new()),
            journal,
            agent: agent.to_owned(),
        }
    }
}

impl ContextSource for ContextRules {
    fn name(&self) -> &'static str {
        "rules"
    }

    fn context(&self, recent: &str, turn: u32) -> Option<String> {
        if recent.trim().is_empty() {
            return None;
        }
        let Ok(mut fired) = self.fired.lock() else {
            return None;
        };
        let mut parts = Vec::new();
        for r in &self.rules {
            let last = fired.get(&r.name).copied();
            let may = match (r.frequency, last) {
                (_, None) | (Frequency::PerTurn, _) => true,
                (Frequency::Once, Some(_)) => false,
                (Frequency::Cooldown(n), Some(at)) => turn >= at.saturating_add(n),
            };
            if !may || !r.trigger.is_match(recent) {
                continue;
            }
            fired.insert(r.name.clone(), turn);
            if let Some((j, scope)) = &self.journal
                && let Ok(mut j) = j.lock()
            {
                let _ = j.record_guard(&NewGuardRecord {
                    scope: scope.clone(),
                    guard: "rules".into(),
                    kind: "rule".into(),
                    tool: String::new(),
                    path: r.origin.clone(),
                    detail: format!("{} (agent {}, turn {turn})", r.name, self.agent),
                    exit_code: None,
                });
            }
            parts.push(format!("[context rule: {}]\n{}", r.name, r.body));
        }
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_rules_parse_and_the_test_first_rule_catches_the_excuse() {
        let rules = bundled();
        let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["test-first", "yagni", "no-impl-before-spec"]);
        let tf = &rules[0];
        assert!(tf.trigger.is_match("This is simple enough to skip tests."));
        assert!(tf.trigger.is_match("We can skip the tests here"));
        assert!(!tf.trigger.is_match("I wrote the test and ran it."));
    }

    #[test]
    fn bad_rules_name_the_file_and_field() {
        let err = parse("r.md", "---\nname: x\ntrigger: '('\n---\nbody\n").unwrap_err();
        assert!(
            err.to_string().starts_with("rule `r.md`: `trigger`"),
            "{err}"
        );
        let err = parse(
            "r.md",
            "---\nname: x\ntrigger: a\nfrequency: sometimes\n---\nb\n",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("`frequency` is `sometimes`"),
            "{err}"
        );
        let err = parse("r.md", "---\nname: x\ntrigger: a\n---\n\n").unwrap_err();
        assert!(err.to_string().contains("body"), "{err}");
        assert!(parse("r.md", "---\nname: x\ntrigger: a\nextra: 1\n---\nb\n").is_err());
    }

    fn rule(name: &str, freq: &str) -> Rule {
        parse(
            "r.md",
            &format!("---\nname: {name}\ntrigger: skip\nfrequency: '{freq}'\n---\n{name} body\n"),
        )
        .unwrap()
    }

    #[test]
    fn frequencies_bound_the_firings() {
        let fires = |freq: &str| -> Vec<u32> {
            let c = ContextRules::new(vec![rule("r", freq)], "a", None);
            (1..=6)
                .filter(|t| c.context("skip", *t).is_some())
                .collect()
        };
        assert_eq!(fires("once"), [1]);
        assert_eq!(fires("per-turn"), [1, 2, 3, 4, 5, 6]);
        assert_eq!(fires("cooldown:2"), [1, 3, 5]);
        let c = ContextRules::new(vec![rule("r", "per-turn")], "a", None);
        assert_eq!(c.context("nothing here", 1), None);
    }

    #[test]
    fn a_later_layer_replaces_a_rule_of_the_same_name() {
        let mut user = rule("test-first", "once");
        user.body = "mine".into();
        let merged = merge(vec![bundled(), vec![user]]);
        assert_eq!(merged.iter().filter(|r| r.name == "test-first").count(), 1);
        assert!(merged.iter().any(|r| r.body == "mine"));
    }
}
