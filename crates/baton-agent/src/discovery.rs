//! Finding agents: bundled < user (`~/.config/baton/agents/`) < project (`.baton/agents/`).
//!
//! Later sources override earlier ones by name. Project agents are code the repository ships, so
//! they are loaded only after `baton trust` recorded the project (outside the project, so a
//! repository cannot trust itself); until then they are skipped with a notice.

use crate::definition::{self, AgentDef, DefinitionError, Source};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The agents compiled into baton.
pub const BUNDLED: &[(&str, &str)] = &[
    ("bmad-master", include_str!("../agents/bmad-master.md")),
    ("analyst", include_str!("../agents/analyst.md")),
    ("pm", include_str!("../agents/pm.md")),
    ("architect", include_str!("../agents/architect.md")),
    ("scrum-master", include_str!("../agents/scrum-master.md")),
    ("developer", include_str!("../agents/developer.md")),
    ("reviewer", include_str!("../agents/reviewer.md")),
    ("qa", include_str!("../agents/qa.md")),
    ("implementer", include_str!("../agents/implementer.md")),
    ("spec-reviewer", include_str!("../agents/spec-reviewer.md")),
    (
        "quality-reviewer",
        include_str!("../agents/quality-reviewer.md"),
    ),
    (
        "security-reviewer",
        include_str!("../agents/security-reviewer.md"),
    ),
    (
        "performance-reviewer",
        include_str!("../agents/performance-reviewer.md"),
    ),
    ("scout", include_str!("../agents/scout.md")),
    ("bmad-skill", include_str!("../agents/bmad-skill.md")),
];

/// The result of discovery.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Agents by name.
    pub agents: BTreeMap<String, AgentDef>,
    /// Things the user should know (skipped untrusted project agents).
    pub notices: Vec<String>,
    /// Definitions that failed to load (the others are still usable).
    pub errors: Vec<DefinitionError>,
}

/// Where to look.
#[derive(Debug, Clone)]
pub struct Locations {
    /// The user's agent directory, if any.
    pub user_dir: Option<PathBuf>,
    /// The project's agent directory.
    pub project_dir: PathBuf,
    /// Whether the project is trusted.
    pub trusted: bool,
}

fn load_dir(dir: &Path, source: impl Fn(PathBuf) -> Source, out: &mut Discovery) {
    let Ok(read) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    for path in paths {
        let text =
            match baton_store::bounded::read_to_string(&path, baton_store::bounded::CONFIG_LIMIT) {
                Ok(t) => t,
                Err(e) => {
                    out.errors.push(DefinitionError::Invalid {
                        origin: path.display().to_string(),
                        message: e.to_string(),
                    });
                    continue;
                }
            };
        match definition::parse(&path.display().to_string(), &text, source(path.clone())) {
            Ok(def) => {
                out.agents.insert(def.name.clone(), def);
            }
            Err(e) => out.errors.push(e),
        }
    }
}

/// Discovers every agent.
pub fn discover(loc: &Locations) -> Discovery {
    let mut out = Discovery::default();
    for (name, text) in BUNDLED {
        match definition::parse(&format!("bundled agent `{name}`"), text, Source::Bundled) {
            Ok(def) => {
                out.agents.insert(def.name.clone(), def);
            }
            Err(e) => out.errors.push(e),
        }
    }
    if let Some(dir) = &loc.user_dir {
        load_dir(dir, Source::User, &mut out);
    }
    let has_project_agents = fs::read_dir(&loc.project_dir)
        .map(|mut r| r.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "md"))))
        .unwrap_or(false);
    if has_project_agents {
        if loc.trusted {
            load_dir(&loc.project_dir, Source::Project, &mut out);
        } else {
            out.notices.push(format!(
                "project agents in `{}` were skipped: this project is not trusted; run `baton trust` after reviewing them",
                loc.project_dir.display()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_agent_parses() {
        let d = discover(&Locations {
            user_dir: None,
            project_dir: PathBuf::from("/nonexistent"),
            trusted: false,
        });
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.agents.len(), BUNDLED.len());
        for def in d.agents.values() {
            if def.is_read_only() {
                for w in [
                    "write_file",
                    "edit_file",
                    "run_command",
                    "update_sprint_status",
                ] {
                    assert!(!def.tools.iter().any(|t| t == w), "{} has {w}", def.name);
                }
            }
        }
    }

    /// What the prompts tell agents to pass to a tool is what the tool accepts: every
    /// `` `name: value` `` they write is an argument of one of the agent's tools, and the agents
    /// that read documents are told to read them by section with `read_file`'s own names.
    #[test]
    fn bundled_prompts_name_tool_arguments_as_the_schemas_do() {
        let tools = crate::tools::Toolbox::standard();
        let read_file = tools.get("read_file").unwrap().spec();
        let props = read_file.parameters["properties"].as_object().unwrap();
        assert_eq!(props["outline"]["type"], "boolean");
        assert_eq!(props["section"]["type"], "string");
        for name in [
            "`outline: true`",
            "`section`",
            "docs/architecture.md#Data Model",
        ] {
            assert!(read_file.description.contains(name), "{name}");
        }
        let d = discover(&Locations {
            user_dir: None,
            project_dir: PathBuf::from("/nonexistent"),
            trusted: false,
        });
        let assignment = regex::Regex::new(r"`([a-z_]+): [^`]+`").unwrap();
        let readers = [
            "scrum-master",
            "developer",
            "reviewer",
            "qa",
            "architect",
            "pm",
            "implementer",
            "spec-reviewer",
            "scout",
            "bmad-master",
        ];
        for def in d.agents.values() {
            for c in assignment.captures_iter(&def.prompt) {
                let arg = &c[1];
                assert!(
                    def.tools.iter().any(|t| tools
                        .get(t)
                        .is_some_and(|t| t.spec().parameters["properties"].get(arg).is_some())),
                    "{}: `{arg}` is no argument of its tools",
                    def.name
                );
            }
            if readers.contains(&def.name.as_str()) {
                assert!(def.tools.iter().any(|t| t == "read_file"), "{}", def.name);
                for said in ["`read_file`", "`outline: true`", "`section`", ".md#"] {
                    assert!(
                        def.prompt.contains(said),
                        "{} does not say {said}",
                        def.name
                    );
                }
            }
        }
    }

    #[test]
    fn project_agents_need_trust_and_override_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let agent = "---\nname: scout\ndescription: mine\nrole: scout\nmodel: script/x\ntools: [read_file]\n---\nLocal scout.\n";
        fs::write(dir.path().join("scout.md"), agent).unwrap();
        let mut loc = Locations {
            user_dir: None,
            project_dir: dir.path().to_path_buf(),
            trusted: false,
        };
        let d = discover(&loc);
        assert_eq!(d.agents["scout"].source, Source::Bundled);
        assert_eq!(d.notices.len(), 1);
        loc.trusted = true;
        let d = discover(&loc);
        assert!(matches!(d.agents["scout"].source, Source::Project(_)));
        assert_eq!(d.agents["scout"].prompt, "Local scout.");
    }
}
