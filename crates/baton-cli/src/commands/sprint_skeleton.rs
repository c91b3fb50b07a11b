//! The sprint-status file of a project that has none yet: its commented header (what each
//! status means) and the project's name and story folder written as YAML scalars that read back
//! as the same strings.

/// `s` as a YAML plain scalar when it reads back as the same string, else single-quoted: a
/// directory named `null`, `#x`, `app: two` or `@acme` must not become a null, a comment, a
/// mapping or a syntax error in the sprint file.
pub fn yaml_scalar(s: &str) -> String {
    const RESERVED: &[&str] = &[
        "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".nan", ".inf", "-.inf",
    ];
    let plain = !s.is_empty()
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str())
        && !s.starts_with(|c: char| "#@&*!|>'\"%`[]{},?:-<=".contains(c) || c.is_whitespace())
        && !s.ends_with(|c: char| c.is_whitespace() || c == ':')
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.contains(['\t', '\n', '\r'])
        && s.parse::<f64>().is_err();
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

/// The sprint-status skeleton of a new project.
pub fn skeleton(project: &str, story_location: &str, now: &str) -> String {
    let project = yaml_scalar(project);
    let story_location = yaml_scalar(story_location);
    format!(
        "# Sprint status: the machine-readable queue of the implementation phase.\n\
#\n\
# STATUS DEFINITIONS:\n\
# ==================\n\
# Epic Status:\n\
#   - backlog: epic not yet started\n\
#   - in-progress: epic actively being worked on\n\
#   - done: all stories in the epic completed\n\
#\n\
# Story Status:\n\
#   - backlog: story only exists in the epics file\n\
#   - ready-for-dev: story file created, ready for development\n\
#   - in-progress: developer actively working on the implementation\n\
#   - review: implementation complete, ready for code review\n\
#   - done: story completed\n\
#\n\
# Retrospective Status:\n\
#   - optional: can be held, not required\n\
#   - done: retrospective completed\n\
#\n\
# WORKFLOW NOTES:\n\
# ===============\n\
# - An epic moves to 'in-progress' when its first story leaves 'backlog'\n\
# - Stories may be worked in parallel; the next story is usually created once the previous is 'done'\n\
# - The developer moves a story to 'review'; code review runs in a fresh context, ideally another model\n\
\n\
generated: {now}\n\
last_updated: {now}\n\
project: {project}\n\
project_key: NOKEY\n\
tracking_system: file-system\n\
story_location: {story_location}\n\
\n\
development_status:\n"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_project_name_that_yaml_would_misread_is_quoted() {
        for (name, written) in [
            ("tally", "tally"),
            ("my-app", "my-app"),
            ("null", "'null'"),
            ("#x", "'#x'"),
            ("app: two", "'app: two'"),
            ("@acme", "'@acme'"),
            ("it's", "it's"),
            ("'q", "'''q'"),
            ("2024", "'2024'"),
        ] {
            assert_eq!(super::yaml_scalar(name), written, "{name}");
        }
    }
}
