//! Agent definitions: markdown with YAML frontmatter, the body being the system prompt.
//!
//! Frontmatter keys: `name`, `description`, `role`, `model` (`provider/model`), `tools` (a list,
//! or a comma-separated string as coding-agent CLIs write it), optional `max_turns` and `timeout`
//! (seconds). Unknown keys are rejected with the file's name so a typo never silently drops a
//! setting.

use baton_store::frontmatter::{Document, FrontmatterError};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The longest agent `timeout` accepted, in seconds (a year): larger values would overflow the
/// clock arithmetic of a deadline.
pub const MAX_TIMEOUT_SECS: u64 = 365 * 24 * 3600;

/// Where a definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "path", rename_all = "kebab-case")]
pub enum Source {
    /// Compiled into baton.
    Bundled,
    /// The user's directory (`~/.config/baton/agents/`).
    User(PathBuf),
    /// The project's `.baton/agents/` (loaded only once the project is trusted).
    Project(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Bundled => f.write_str("bundled"),
            Source::User(p) => write!(f, "user: {}", p.display()),
            Source::Project(p) => write!(f, "project: {}", p.display()),
        }
    }
}

/// An agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentDef {
    /// Unique name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Its role (`developer`, `reviewer`, `scout`…).
    pub role: String,
    /// `provider/model`.
    pub model: String,
    /// Tool names it may use.
    pub tools: Vec<String>,
    /// Turn limit.
    pub max_turns: Option<u32>,
    /// Timeout in seconds.
    pub timeout: Option<u64>,
    /// Whether a turn may end in prose alone, without a tool call (`converses: true`): an agent
    /// that talks to a user through baton, such as the one running BMad's conversational skills.
    /// Otherwise an agent with writing tools that never calls one has failed.
    pub converses: bool,
    /// The system prompt.
    #[serde(skip)]
    pub prompt: String,
    /// Where it came from.
    pub source: Source,
}

impl AgentDef {
    /// Roles that must never write (reviewers, scouts, the router).
    pub fn is_read_only(&self) -> bool {
        matches!(self.role.as_str(), "reviewer" | "scout" | "router")
    }
}

/// A definition that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    /// The frontmatter is missing or invalid.
    #[error(transparent)]
    Frontmatter(#[from] FrontmatterError),
    /// A required key is missing or a value is wrong.
    #[error("agent definition `{origin}`: {message}")]
    Invalid {
        /// File (or bundled name).
        origin: String,
        /// What is wrong.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolList {
    List(Vec<String>),
    Comma(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Front {
    name: String,
    description: String,
    role: String,
    model: String,
    #[serde(default)]
    tools: Option<ToolList>,
    max_turns: Option<u32>,
    timeout: Option<u64>,
    #[serde(default)]
    converses: bool,
}

/// Parses one definition.
pub fn parse(origin: &str, text: &str, source: Source) -> Result<AgentDef, DefinitionError> {
    let invalid = |message: String| DefinitionError::Invalid {
        origin: origin.to_owned(),
        message,
    };
    let doc = Document::parse(origin, text)?;
    let Some(yaml) = doc.frontmatter() else {
        return Err(invalid(
            "no YAML frontmatter (`---` … `---`) with name, description, role, model, tools".into(),
        ));
    };
    let front: Front = serde_saphyr::from_str(yaml).map_err(|e| {
        invalid(
            e.to_string()
                .lines()
                .next()
                .unwrap_or("invalid frontmatter")
                .to_owned(),
        )
    })?;
    let tools = match front.tools {
        None => Vec::new(),
        Some(ToolList::List(v)) => v,
        Some(ToolList::Comma(s)) => s
            .split(',')
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect(),
    };
    if front.name.is_empty()
        || !front
            .name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(invalid(format!(
            "name `{}` must be lowercase letters, digits and `-`",
            front.name
        )));
    }
    if baton_llm::ModelSpec::parse(&front.model).is_none() {
        return Err(invalid(format!(
            "model `{}` must be `provider/model`",
            front.model
        )));
    }
    if front.max_turns == Some(0) {
        return Err(invalid("max_turns must be at least 1".into()));
    }
    if let Some(t) = front.timeout
        && !(1..=MAX_TIMEOUT_SECS).contains(&t)
    {
        return Err(invalid(format!(
            "timeout must be between 1 and {MAX_TIMEOUT_SECS} seconds (a year), not {t}"
        )));
    }
    let prompt = doc.body().trim().to_owned();
    if prompt.is_empty() {
        return Err(invalid("the body (system prompt) is empty".into()));
    }
    Ok(AgentDef {
        name: front.name,
        description: front.description,
        role: front.role,
        model: front.model,
        tools,
        max_turns: front.max_turns,
        timeout: front.timeout,
        converses: front.converses,
        prompt,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "---\nname: scout\ndescription: looks around\nrole: scout\nmodel: script/demo\ntools: read_file, grep\nmax_turns: 5\n---\nYou explore.\n";

    #[test]
    fn parses_a_definition_with_comma_tools() {
        let d = parse("scout.md", OK, Source::Bundled).unwrap();
        assert_eq!(d.tools, ["read_file", "grep"]);
        assert_eq!(d.max_turns, Some(5));
        assert_eq!(d.prompt, "You explore.");
        assert!(d.is_read_only());
    }

    #[test]
    fn rejects_unknown_keys_bad_models_and_empty_bodies() {
        let e = parse(
            "a.md",
            &OK.replace("max_turns: 5", "max_turn: 5"),
            Source::Bundled,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("a.md") && e.contains("max_turn"), "{e}");
        let e = parse("a.md", &OK.replace("script/demo", "demo"), Source::Bundled)
            .unwrap_err()
            .to_string();
        assert!(e.contains("provider/model"), "{e}");
        let e = parse("a.md", "---\nname: x\n---\n", Source::Bundled).unwrap_err();
        assert!(e.to_string().contains("a.md"));
        assert!(parse("a.md", "no frontmatter", Source::Bundled).is_err());
    }

    /// A timeout the clock cannot add to `now` used to panic when the agent started.
    #[test]
    fn rejects_timeouts_outside_one_second_to_a_year() {
        for t in ["0", "31536001", "18446744073709551615"] {
            let text = OK.replace("max_turns: 5", &format!("max_turns: 5\ntimeout: {t}"));
            let e = parse("a.md", &text, Source::Bundled)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("a.md") && e.contains("timeout must be between"),
                "{t}: {e}"
            );
        }
        let text = OK.replace("max_turns: 5", "max_turns: 5\ntimeout: 31536000");
        assert_eq!(
            parse("a.md", &text, Source::Bundled).unwrap().timeout,
            Some(MAX_TIMEOUT_SECS)
        );
    }
}
