//! The `baton.toml` that `baton init` writes: every setting, commented, at its default.
//!
//! Kept beside the parser so that a test holds it to the schema: it must parse, and resolve to
//! the same settings as no file at all. [`with_test_command`] writes into it the test command the
//! project's files propose ([`crate::test_command`]), and a test holds that to the schema too.

use crate::test_command::Proposal;

/// The `baton.toml` that `baton init` writes: every setting, commented, at its default.
pub const TEMPLATE: &str = r#"# baton configuration. Every setting is optional. Commented values are the defaults, except in
# [budget] and [agents] model, which have no default (no limit, each agent's own model).

[paths]
# sprint_status = "_bmad-output/implementation-artifacts/sprint-status.yaml"
# stories = "_bmad-output/implementation-artifacts"
# planning = "_bmad-output/planning-artifacts"

[sprint]
# Write baton's extended story states (needs-intervention, e2e-verify, ...) literally into
# sprint-status.yaml. Off: the file keeps BMad's canonical status plus a `# baton: ...` comment.
# write_extended_statuses = false
# Move an epic to `done` when all its stories are done (BMad leaves this to a human).
# auto_epic_done = true
# Warn when the sprint file has not been updated for this many days.
# stale_days = 7
# The test command the orchestrator runs itself after every dev and fix step (no shell).
# test_command = ["cargo", "test"]
# test_timeout_secs = 900
# max_review_rounds = 3
# min_findings = 3
# story_review = false
# qa = false
# batch = 3
# Stories in flight at once, each in its own git worktree and merged through one lane.
# parallel = 1
# In standard mode a story enters these statuses only after a human confirms.
# checkpoints = ["done"]
# story_timeout_secs = 7200
# run_timeout_secs = 28800
# Hold an epic's retrospective (scrum master) when its last story is done.
# retrospective = false

[budget]
# warn_usd = 5.0
# hard_usd = 20.0
# max_input_tokens = 5000000
# max_output_tokens = 500000

[agents]
# model = "anthropic/claude-sonnet-4-5"   # replaces every agent's own model
# max_turns = 40
# timeout_secs = 1800
# Output cap of one model turn, in tokens; a provider's `max_tokens` lowers it.
# max_tokens = 8192
# Old tool results become short stubs (what they were, how to get them again) once those still
# sent in full pass this many bytes; 0 or "off": never. See docs/agents.md, "Context".
# compact_after_bytes = 16384
# [agents.overrides.dev]
# max_tokens = 16384

[team]
# concurrency = 4

[commands]
# Programs agents may run (no shell; arguments are passed as a list).
# allow = ["cargo", "git", "ls", "cat", "echo", "python3", "npm", "node", "make", "go", "pytest"]
# timeout_secs = 300
# max_output_bytes = 30000

[sandbox]
# Files agents may neither read nor write.
# deny = [".env*", "*.pem", "*.key", "id_*"]

[tdd]
# The test-first guard: off, tdd or atdd (`baton tdd on|off|atdd` overrides this). See docs/tdd.md.
# mode = "off"
# exempt = ["*.d.ts", "*.config.*", "migrations/**", "docs/**", "*.md", "*.lock", ...]
# Commands that count as test runs, added to the defaults (cargo test, npm test, pytest, go test, ...).
# test_commands = [["make", "check"]]
# [tdd.overrides]
# "src/legacy/*.rs" = "tests/legacy_{stem}.rs"

[rules]
# Context rules remind agents of the process when their own words show they are about to skip it.
# enabled = true

[memory]
# What the team learned (retrospectives, resolved review findings, answers, `baton remember`),
# recalled into agent tasks where it applies: docs/memory.md.
# enabled = true
# recall_tokens = 300
# max_per_scope = 500
# skip = ["review"]              # kinds of step that get no memories
# external = ["memory-bridge"]   # an external backend run as a program (trusted projects only)

# Providers: bundled ones are openai, anthropic, ollama, vllm, llamacpp, openrouter, script.
# [providers.ollama]
# kind = "openai"
# base_url = "http://localhost:11434/v1"
# max_tokens = 4096        # output cap of one turn on this provider
# tool_choice = "auto"     # sent with tools: auto, required or none (OpenAI-compatible only)
# cache_key = false        # send a prompt_cache_key (OpenAI-compatible only; on for `openai`)
# cache_prompt = false     # send cache_prompt: true (llama.cpp's server; on for `llamacpp`)
#
# [providers.anthropic]
# kind = "anthropic"
# api_key_env = "ANTHROPIC_API_KEY"
# cache = "5m"             # prompt-cache breakpoints: 5m, 1h (long runs) or off

# Prices in US dollars per million tokens (bundled for common models).
# [prices."openai/gpt-4o"]
# input_per_mtok = 2.5
# output_per_mtok = 10.0
"#;

/// The template's commented `test_command` line.
const TEST_COMMAND_LINE: &str = "# test_command = [\"cargo\", \"test\"]\n";
/// The template's commented `[commands] allow` line.
const ALLOW_PREFIX: &str = "# allow = [";

/// `template` with `proposal` written as `[sprint] test_command`, under a comment naming the
/// files it came from. When its program is not on the default command allowlist, `[commands]
/// allow` is written too, as the defaults and that program: agents are told the test command and
/// must be able to run it, and the orchestrator of an untrusted project runs only an allowlisted
/// program (both apply once the project is trusted).
pub fn with_test_command(template: &str, proposal: &Proposal) -> String {
    let files: Vec<String> = proposal.files.iter().map(|f| format!("`{f}`")).collect();
    let mut text = template.replacen(
        TEST_COMMAND_LINE,
        &format!(
            "# Proposed by `baton init` from {}.\n{}\n",
            files.join(" and "),
            proposal.setting()
        ),
        1,
    );
    if let Some(program) = proposal.program_off_the_allowlist()
        && let Some(start) = text.find(ALLOW_PREFIX)
    {
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let mut allow = baton_agent::tools::CommandPolicy::default().allow;
        allow.push(program.to_owned());
        text.replace_range(
            start..end,
            &format!(
                "# `{program}` added by `baton init` for the test command.\nallow = {}",
                crate::test_command::toml_array(&allow)
            ),
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, RawConfig, parse};
    use std::path::Path;

    fn written(command: &[&str]) -> Config {
        let proposal = Proposal {
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            ecosystem: "python",
            files: vec!["pyproject.toml".to_owned(), "uv.lock".to_owned()],
            reason: String::new(),
        };
        let text = with_test_command(TEMPLATE, &proposal);
        assert!(
            text.contains("# Proposed by `baton init` from `pyproject.toml` and `uv.lock`.\n"),
            "{text}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(crate::FILE_NAME), &text).unwrap();
        Config::load_as(dir.path(), true).unwrap()
    }

    #[test]
    fn a_proposed_test_command_is_written_and_allowed() {
        let cargo = written(&["cargo", "test"]);
        assert_eq!(
            cargo.sprint.test_command,
            Some(vec!["cargo".to_owned(), "test".to_owned()])
        );
        // On the allowlist already: the list stays at its default, commented.
        assert_eq!(
            cargo.commands.allow,
            baton_agent::tools::CommandPolicy::default().allow
        );
        let uv = written(&["uv", "run", "pytest"]);
        assert_eq!(
            uv.sprint.test_command.as_deref().map(<[String]>::len),
            Some(3)
        );
        let mut allow = baton_agent::tools::CommandPolicy::default().allow;
        allow.push("uv".to_owned());
        assert_eq!(uv.commands.allow, allow);
        let gradle = written(&["./gradlew", "test"]);
        assert!(gradle.commands.allow.contains(&"./gradlew".to_owned()));
    }

    #[test]
    fn the_template_parses_to_defaults() {
        let raw = parse(Path::new("baton.toml"), TEMPLATE).unwrap();
        let a = Config::resolve(Path::new("/p"), raw);
        let b = Config::resolve(Path::new("/p"), RawConfig::default());
        assert_eq!(a.sprint_status, b.sprint_status);
        assert_eq!(a.providers.len(), b.providers.len());
        assert_eq!(a.max_turns, b.max_turns);
        assert_eq!(a.compaction, b.compaction);
        assert_eq!(a.sandbox_deny, b.sandbox_deny);
    }
}
