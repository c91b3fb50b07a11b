//! Snapshots of everything the `baton` binary shows a user: the `--help` of every command, the
//! board and its JSON, `set`, `log`, `agents`, `init`, `escalations`, every documented error (exit
//! codes 1 to 4), and a few short sprint runs on the script provider.
//!
//! Each snapshot holds the exit code, stdout and stderr of one run, after filters replace what
//! varies from run to run: temp paths, run ids, timestamps, durations and costs. A changed output
//! fails the test with a diff; review and accept it as CONTRIBUTING.md says (`INSTA_UPDATE=always`
//! or `cargo insta review`). The sprint runs are kept few, as the sprint command's output is the
//! likeliest to change.

use super::common::{Project, Run, SPRINT_REL, sprint};
use super::sprint::{Script, call, command, git_init, pass_verdict, re, run_guarded, verdict};
use serde_json::json;

/// Where the sprint tests put story files.
const STORIES: &str = "_bmad-output/implementation-artifacts";

/// The story of the sprint snapshots.
const KEY: &str = "1-1-alpha";

/// Every command with its own `--help`.
const COMMANDS: [&str; 20] = [
    "demo",
    "init",
    "status",
    "set",
    "agents",
    "trust",
    "team",
    "sprint",
    "sdd",
    "escalations",
    "answer",
    "serve",
    "log",
    "doctor",
    "tdd",
    "guard",
    "plan",
    "chat",
    "check",
    "sprint-plan",
];

/// The subcommands of `baton tdd`, each with its own `--help`.
const TDD_COMMANDS: [&str; 5] = ["on", "off", "atdd", "status", "allow-bash-write"];

// ---------------------------------------------------------------------------------------------
// Running and rendering.

/// `baton -C root ARGS` as the other tests run it (UTC, no user configuration, stdin closed),
/// with a fixed help width and no forced colours, under the hang guard.
fn run(p: &Project, args: &[&str]) -> Run {
    let mut cmd = command(p, args);
    cmd.env("COLUMNS", "100")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    run_guarded(cmd, args)
}

/// The text of a snapshot: the command, its exit code, stdout and stderr.
fn render(run: &Run) -> String {
    let code = run
        .code
        .map_or_else(|| "killed by a signal".to_owned(), |c| c.to_string());
    format!(
        "$ baton {}\nexit: {code}\n--- stdout ---\n{}--- stderr ---\n{}",
        run.args, run.stdout, run.stderr
    )
}

/// Regex metacharacters of a literal path escaped.
fn literal(text: &str) -> String {
    re(text)
}

/// Table padding collapsed to two spaces and trailing blanks dropped, for tables whose column
/// widths follow values the filters replace (timestamps, durations).
fn collapse_columns(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut spaces = 0;
        for c in line.trim_end().chars() {
            if c == ' ' {
                spaces += 1;
                continue;
            }
            if spaces > 0 {
                out.push_str(if spaces > 1 { "  " } else { " " });
                spaces = 0;
            }
            out.push(c);
        }
        out.push('\n');
    }
    out
}

/// Asserts the snapshot `name` of `text`, with the varying parts of a run on `p` filtered.
#[track_caller]
fn check(name: &str, p: &Project, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    let root = p.root().display().to_string();
    settings.add_filter(&literal(&root), "[ROOT]");
    // Any other temp directory (the demo's, a canonicalised root).
    settings.add_filter(r"/[^\s`']*/\.tmp[A-Za-z0-9]+", "[TMP]");
    // Run ids and the transcript directories named after them.
    settings.add_filter(r"(sprint|team|sdd|plan)-\d{8}T\d{6}Z-\d+", "[RUN]");
    // Dated artifact names (`implementation-readiness-report-2026-11-26.md`).
    settings.add_filter(r"-\d{4}-\d{2}-\d{2}\.md\b", "-[DATE].md");
    // Commit hashes in notes.
    settings.add_filter(r"\(base [0-9a-f]{12}\)", "(base [HASH])");
    // Journal timestamps (RFC 3339) and sprint-file stamps (`MM-DD-YYYY HH:MM`).
    settings.add_filter(
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "[TIME]",
    );
    settings.add_filter(r"\b\d{2}-\d{2}-\d{4} \d{2}:\d{2}\b", "[STAMP]");
    settings.add_filter(r"last updated \d+ days? ago", "last updated [N] days ago");
    // Durations.
    settings.add_filter(r"\b\d+(\.\d+)? ?(ms|s)\b", "[DURATION]");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// Runs `baton ARGS` on `p` and checks the snapshot `name` of the run.
#[track_caller]
pub(super) fn snap(name: &str, p: &Project, args: &[&str]) -> Run {
    let r = run(p, args);
    check(name, p, &render(&r));
    r
}

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// A small sprint: two epics, every story status, a retrospective done, a note, a comment.
fn board() -> String {
    sprint(
        "  # epic 1: accounts\n  epic-1: in-progress\n  1-1-login: done\n  \
         1-2-logout: review # needs a second look\n  1-3-reset: in-progress\n  \
         1-4-profile: ready-for-dev\n  epic-1-retrospective: optional\n\n  \
         epic-2: backlog\n  2-1-search: backlog\n  2-2-filters: backlog\n  \
         epic-2-retrospective: optional\n",
    )
}

/// The board as a project.
fn board_project() -> Project {
    Project::with_sprint(&board())
}

/// A sprint file with warnings only (a legacy status, a foreign one, an opaque key).
fn warnings_project() -> Project {
    Project::with_sprint(&sprint(
        "  epic-1: in-progress\n  1-1-login: drafted\n  1-2-logout: awaiting-operator\n  \
         notes-for-later: keep\n",
    ))
}

/// A sprint file with one error of each common kind, on lines 9 to 13.
fn invalid_project() -> Project {
    Project::with_sprint(&sprint(
        "  epic-1: in-progress\n  1-1-a: finished\n  1-x-b: backlog\n  2-1-c: backlog\n  \
         1-1-a: done\n  epic-3-retrospective: optional\n",
    ))
}

/// Options of `sprint_project`.
#[derive(Default, Clone, Copy)]
struct Extra<'a> {
    /// Lines added to `[sprint]`.
    sprint: &'a str,
    /// Tables after `[agents]`.
    tail: &'a str,
}

/// A git repository with `baton.toml` (test command `cat tests-pass`, every agent on
/// `script/t`), a sprint file holding [`KEY`] in backlog, and `script`.
fn sprint_project(extra: Extra<'_>, script: &Script) -> Project {
    let p = Project::empty();
    p.write(
        "baton.toml",
        &format!(
            "[sprint]\ntest_command = [\"cat\", \"tests-pass\"]\n{}\n\n[agents]\nmodel = \"script/t\"\n\n{}\n",
            extra.sprint, extra.tail
        ),
    );
    p.write(
        SPRINT_REL,
        &sprint(&format!(
            "  epic-1: backlog\n  {KEY}: backlog\n  epic-1-retrospective: optional\n"
        )),
    );
    p.write(".baton/.gitignore", "*\n");
    p.write("src/lib.txt", "the product\n");
    script.install(&p);
    git_init(&p);
    p
}

/// The scrum master writes the story file of [`KEY`].
fn create(script: Script) -> Script {
    let path = format!("{STORIES}/{KEY}.md");
    let story = format!(
        "# Story {KEY}\n\nStatus: ready-for-dev\n\n## Story\n\nAs a tester, I want `{KEY}`.\n\n\
         ## Acceptance Criteria\n\n1. `src/{KEY}.rs` exists.\n\n## Tasks / Subtasks\n\n\
         - [ ] Task 1: write it (AC: 1)\n\n## Dev Notes\n\n- nothing special\n\n\
         ## Dev Agent Record\n\n### Agent Model Used\n\n### Completion Notes List\n\n### File List\n"
    );
    script
        .turn(
            "scrum-master",
            &re(&format!("Create the story file for story `{KEY}`")),
            "I will write the story from the epics.",
            vec![call(
                "write_file",
                json!({ "path": path, "content": story }),
            )],
        )
        .turn(
            "scrum-master",
            &re(&format!("to `{path}`")),
            &format!("Story `{KEY}` is written to `{path}`."),
            vec![],
        )
}

/// The developer implements [`KEY`] and makes the tests pass.
fn develop(script: Script) -> Script {
    script
        .turn(
            "developer",
            &re(&format!("Implement story `{KEY}` (mode: dev)")),
            "Red first: the test, then the code.",
            vec![
                call(
                    "write_file",
                    json!({ "path": format!("src/{KEY}.rs"), "content": "// alpha\n" }),
                ),
                call(
                    "edit_file",
                    json!({
                        "path": format!("{STORIES}/{KEY}.md"),
                        "old_string": "### File List\n",
                        "new_string": format!("### File List\n\n- src/{KEY}.rs\n"),
                    }),
                ),
                call(
                    "write_file",
                    json!({ "path": "tests-pass", "content": "ok\n" }),
                ),
            ],
        )
        .turn(
            "developer",
            &re(&format!("to `src/{KEY}.rs`")),
            &format!("Implemented `{KEY}`. All tests pass."),
            vec![],
        )
}

/// The reviewer's answer to review round `round`.
fn review(script: Script, round: u32, answer: &str) -> Script {
    script.turn(
        "reviewer",
        &re(&format!(
            "Review story `{KEY}`, review round {round} (mode:"
        )),
        answer,
        vec![],
    )
}

/// Fix round `round`: a new file, tests still passing.
fn fix(script: Script, round: u32) -> Script {
    let file = format!("src/{KEY}-fix{round}.rs");
    script
        .turn(
            "developer",
            &re(&format!("Fix story `{KEY}`, fix round {round} (mode: fix)")),
            "Addressing the findings.",
            vec![call(
                "write_file",
                json!({ "path": file, "content": format!("// fix {round}\n") }),
            )],
        )
        .turn(
            "developer",
            &re(&format!("to `{file}`")),
            &format!("Fixed round {round}. All tests pass."),
            vec![],
        )
}

/// A review that requests changes.
fn fail_verdict(issue: &str) -> String {
    verdict(
        false,
        &[
            ("high", issue),
            ("low", "a name could be clearer"),
            ("low", "a doc comment is thin"),
        ],
        "changes requested",
    )
}

// ---------------------------------------------------------------------------------------------
// Help and usage.

#[test]
fn help_of_every_command() {
    let p = Project::empty();
    snap("help", &p, &["--help"]);
    snap("version", &p, &["--version"]);
    for cmd in COMMANDS {
        snap(&format!("help_{cmd}"), &p, &[cmd, "--help"]);
    }
    for cmd in TDD_COMMANDS {
        snap(&format!("help_tdd_{cmd}"), &p, &["tdd", cmd, "--help"]);
    }
    for cmd in ["run", "status", "rollback", "skills", "queue", "watch"] {
        snap(&format!("help_bmad_{cmd}"), &p, &["bmad", cmd, "--help"]);
    }
    snap("help_pm_import", &p, &["pm", "import", "--help"]);
    snap("help_pm", &p, &["pm", "--help"]);
    snap("help_pm_agent", &p, &["pm", "agent", "--help"]);
    snap("help_pm_init", &p, &["pm", "init", "--help"]);
    snap("help_command", &p, &["help"]);
    snap("help_command_sprint", &p, &["help", "sprint"]);
    // clap reads `--help` after `help` as a command name.
    snap("help_command_help_flag", &p, &["help", "--help"]);
}

#[test]
fn usage_errors_exit_2() {
    let p = Project::empty();
    for (name, args) in [
        ("usage_no_command", &[][..]),
        ("usage_unknown_command", &["bogus"][..]),
        ("usage_unknown_flag", &["status", "--bogus"][..]),
        ("usage_set_missing_status", &["set", "1-1-login"][..]),
        ("usage_sprint_bad_batch", &["sprint", "--batch", "many"][..]),
        ("usage_answer_missing_option", &["answer", "1"][..]),
        (
            "usage_team_parallel_and_chain",
            &["team", "--parallel", "a,b", "--chain", "a,b", "task"][..],
        ),
    ] {
        let r = snap(name, &p, args);
        assert_eq!(r.code, Some(2), "{}", r.describe());
    }
}

// ---------------------------------------------------------------------------------------------
// The board.

#[test]
fn status_board_json_and_validate() {
    let p = board_project();
    snap("status", &p, &["status"]).expect_code(0);
    snap("status_json", &p, &["status", "--json"]).expect_code(0);
    snap("status_validate_valid", &p, &["status", "--validate"]).expect_code(0);

    let w = warnings_project();
    snap("status_validate_warnings", &w, &["status", "--validate"]).expect_code(0);
    snap("status_warnings", &w, &["status"]).expect_code(0);

    let bad = invalid_project();
    snap("error_validate_invalid", &bad, &["status", "--validate"]).expect_code(1);
    snap(
        "error_validate_invalid_json",
        &bad,
        &["status", "--validate", "--json"],
    )
    .expect_code(1);
    snap("status_invalid_file", &bad, &["status"]).expect_code(0);

    let yaml = Project::with_sprint("development_status:\n  epic-1: [unclosed\n");
    snap("error_status_yaml_syntax", &yaml, &["status"]).expect_code(1);
    snap(
        "error_validate_yaml_syntax",
        &yaml,
        &["status", "--validate"],
    )
    .expect_code(1);

    let none = Project::empty();
    snap("error_status_no_sprint_file", &none, &["status"]).expect_code(1);
}

// ---------------------------------------------------------------------------------------------
// Changing statuses and the journal.

#[test]
fn set_log_and_their_errors() {
    let p = board_project();
    snap("set", &p, &["set", "1-2-logout", "done"]).expect_code(0);
    snap(
        "set_note_json",
        &p,
        &[
            "set",
            "2-1-search",
            "ready-for-dev",
            "--note",
            "next up",
            "--json",
        ],
    )
    .expect_code(0);
    snap(
        "set_force",
        &p,
        &[
            "set",
            "1-1-login",
            "review",
            "--force",
            "--reason",
            "re-opened",
        ],
    )
    .expect_code(0);

    snap("error_set_unknown_key", &p, &["set", "9-9-nope", "done"]).expect_code(1);
    snap(
        "error_set_illegal_transition",
        &p,
        &["set", "2-2-filters", "done"],
    )
    .expect_code(1);
    snap(
        "error_set_unknown_status",
        &p,
        &["set", "2-2-filters", "finished"],
    )
    .expect_code(1);
    snap(
        "error_set_epic_status",
        &p,
        &["set", "epic-2-retrospective", "in-progress"],
    )
    .expect_code(1);

    let r = run(&p, &["log"]);
    check("log", &p, &collapse_columns(&render(&r)));
    r.expect_code(0);
    let r = run(&p, &["log", "--key", "1-2-logout"]);
    check("log_key", &p, &collapse_columns(&render(&r)));
    r.expect_code(0);
    snap("log_json_last", &p, &["log", "--json", "--limit", "1"]).expect_code(0);

    let empty = board_project();
    snap("log_empty", &empty, &["log"]).expect_code(0);
}

// ---------------------------------------------------------------------------------------------
// Set-up, agents, trust, escalations.

#[test]
fn init_agents_trust_and_escalations() {
    let p = Project::empty();
    snap("init", &p, &["init"]).expect_code(0);
    snap("init_again", &p, &["init"]).expect_code(0);
    snap("agents", &p, &["agents"]).expect_code(0);
    snap("trust_nothing_to_trust", &p, &["trust"]).expect_code(0);
    snap("escalations_none", &p, &["escalations"]).expect_code(0);
    snap("error_answer_unknown_escalation", &p, &["answer", "7", "1"]).expect_code(1);

    let bad = Project::empty();
    bad.write("baton.toml", "[sprint]\nbatch = \"three\"\n");
    snap("error_bad_config", &bad, &["status"]).expect_code(1);
}

// ---------------------------------------------------------------------------------------------
// `baton team`: one agent, and an unknown one.

#[test]
fn team_one_agent_and_an_unknown_agent() {
    let script = Script::new()
        .raw(json!({
            "agent": "scout",
            "match": "^find the tests$",
            "repeat": true,
            "tool_calls": [call("list_files", json!({ "pattern": "**/*.rs" }))],
            "usage": { "input_tokens": 120, "output_tokens": 30 },
        }))
        .raw(json!({
            "agent": "scout",
            "match": re("tests/it.rs"),
            "repeat": true,
            "text": "The tests are in `tests/it.rs`.",
            "usage": { "input_tokens": 200, "output_tokens": 10 },
        }));
    let p = Project::empty();
    p.write("tests/it.rs", "#[test]\nfn it() {}\n");
    p.write(".baton/.gitignore", "*\n");
    script.install(&p);
    git_init(&p);
    snap(
        "team_one_agent",
        &p,
        &["team", "scout", "find the tests", "--model", "script/t"],
    )
    .expect_code(0);
    snap(
        "error_team_unknown_agent",
        &p,
        &["team", "nosuch", "find the tests", "--model", "script/t"],
    )
    .expect_code(1);
}

// ---------------------------------------------------------------------------------------------
// A planning run and a plan-file run, as a user reads them.

#[test]
fn plan_yolo_from_an_idea() {
    let p = super::plan_pipeline::project("^Write the architecture document", 0);
    snap(
        "plan_yolo",
        &p,
        &["plan", super::plan_pipeline::IDEA, "--yolo"],
    )
    .expect_code(0);
}

#[test]
fn sdd_one_task_completed() {
    const ONE_TASK: &str = "# Plan\n\n```baton-tasks\n- id: 1\n  title: Add the calculator\n  \
                            files: [calc.py]\n  acceptance_test: test_calc.py\n```\n";
    let script = super::sdd::implement(Script::new(), "1", "calc");
    let script = super::sdd::passing_reviews(script, "1");
    let p = super::sdd::project(&script, "");
    p.write("PLAN.md", ONE_TASK);
    super::sprint::git(p.root(), &["add", "-A"]);
    super::sprint::git(p.root(), &["commit", "-q", "-m", "one task"]);
    snap(
        "sdd_one_task",
        &p,
        &["sdd", "PLAN.md", "--model", "script/t"],
    )
    .expect_code(0);
}

// ---------------------------------------------------------------------------------------------
// Sprint runs: one completed, one paused on an escalation, one stopped by the budget.

#[test]
fn sprint_completed_one_story() {
    let script = review(
        develop(create(Script::new())),
        1,
        &pass_verdict("alpha meets its criteria"),
    );
    let p = sprint_project(Extra::default(), &script);
    snap("sprint_completed", &p, &["sprint", "--yolo"]).expect_code(0);
    snap("status_after_sprint", &p, &["status"]).expect_code(0);
    snap("sprint_nothing_left", &p, &["sprint", "--yolo"]).expect_code(0);

    // A dirty tree is refused before any agent starts.
    p.write("src/lib.txt", "edited by hand\n");
    snap("error_sprint_dirty_tree", &p, &["sprint", "--yolo"]).expect_code(1);
}

#[test]
fn sprint_paused_on_an_escalation_then_answered() {
    let script = fix(
        review(
            develop(create(Script::new())),
            1,
            &fail_verdict("the parser drops empty lines"),
        ),
        1,
    );
    let script = review(script, 2, &fail_verdict("the error names the wrong file"));
    let p = sprint_project(
        Extra {
            sprint: "max_review_rounds = 1",
            ..Extra::default()
        },
        &script,
    );
    snap("sprint_paused_escalation", &p, &["sprint", "--yolo"]).expect_code(3);
    snap("escalations_open", &p, &["escalations"]).expect_code(0);
    snap("error_answer_bad_option", &p, &["answer", "1", "9"]).expect_code(1);
    snap("answer", &p, &["answer", "1", "3"]).expect_code(0);
}

#[test]
fn sprint_stopped_by_the_budget() {
    let script = Script::new().raw(json!({
        "agent": "scrum-master",
        "repeat": true,
        "text": "Thinking about the story.",
        "usage": { "input_tokens": 1000, "output_tokens": 1000 },
    }));
    let p = sprint_project(
        Extra {
            tail: "[budget]\nhard_usd = 0.0001\n\n[prices.\"script/t\"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 1000.0",
            ..Extra::default()
        },
        &script,
    );
    snap("sprint_stopped_budget", &p, &["sprint", "--yolo"]).expect_code(4);
}

// ---------------------------------------------------------------------------------------------
// `baton doctor` against the loopback mock server.

/// A committed project whose agents all use `local/tiny`, served at `url`.
fn doctor_project(url: &str, provider_extra: &str) -> Project {
    let p = Project::with_sprint(&board());
    p.write(
        "baton.toml",
        &format!(
            "[agents]\nmodel = \"local/tiny\"\n\n[sprint]\ntest_command = [\"cargo\", \"test\"]\n\n\
             [providers.local]\nkind = \"openai\"\nbase_url = \"{url}/v1\"\n{provider_extra}"
        ),
    );
    git_init(&p);
    // A provider a project declares applies only once the project is trusted.
    run(&p, &["trust"]).expect_code(0);
    p
}

/// Runs `baton doctor ARGS` while `server` answers, and checks the snapshot with the server's
/// address filtered.
fn doctor_snap(
    name: &str,
    p: &Project,
    server: &baton_test_support::MockServer,
    args: &[&str],
) -> Run {
    let r = run(p, args);
    let text = render(&r).replace(&server.url(), "http://[MOCK]");
    check(name, p, &text);
    r
}

fn models_list() -> baton_test_support::MockResponse {
    baton_test_support::MockResponse::json(
        200,
        &json!({"object": "list", "data": [{"id": "tiny", "object": "model"}, {"id": "other", "object": "model"}]}),
    )
}

fn usage() -> Option<baton_test_support::openai_stream::Usage> {
    Some(baton_test_support::openai_stream::Usage {
        prompt_tokens: 20,
        completion_tokens: 2,
        cached_tokens: 0,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_with_a_provider_whose_tool_calls_work() {
    use baton_test_support::{MockServer, openai_stream};
    let server = MockServer::start().await;
    server.enqueue(models_list());
    server.enqueue(openai_stream::text(&["OK"], usage()));
    server.enqueue(openai_stream::tool_calls(
        "",
        &[("call_1", "ping", r#"{"word":"hello"}"#)],
        4,
        usage(),
    ));
    let p = doctor_project(&server.url(), "max_tokens = 2048\n");
    let r =
        tokio::task::block_in_place(|| doctor_snap("doctor_tools_ok", &p, &server, &["doctor"]));
    r.expect_code(0);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[2].body["tools"][0]["function"]["name"], "ping");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_with_a_provider_that_drops_tools() {
    use baton_test_support::{MockServer, captures};
    let server = MockServer::start().await;
    server.enqueue(models_list());
    server.enqueue(captures::replay(captures::CPPSERVER_TOOLS_AUTO));
    server.enqueue(captures::replay(captures::CPPSERVER_TOOLS_AUTO));
    let p = doctor_project(&server.url(), "");
    tokio::task::block_in_place(|| doctor_snap("doctor_tools_dropped", &p, &server, &["doctor"]))
        .expect_code(1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_with_a_provider_that_streams_no_usage() {
    use baton_test_support::{MockServer, captures};
    let server = MockServer::start().await;
    server.enqueue(models_list());
    server.enqueue(captures::replay(captures::PYSERVER_PLAIN));
    server.enqueue(captures::replay(captures::PYSERVER_TOOLS_FORCED));
    let p = doctor_project(&server.url(), "tool_choice = \"required\"\n");
    let r = tokio::task::block_in_place(|| {
        doctor_snap("doctor_no_usage_json", &p, &server, &["doctor", "--json"])
    })
    .expect_code(0);
    let report = super::common::parse_json(&r);
    assert_eq!(report["providers"][0]["streams_usage"], false);
    assert_eq!(report["providers"][0]["tools"], "ok");
    assert_eq!(server.requests()[2].body["tool_choice"], "required");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_with_an_empty_200_names_it() {
    use baton_test_support::{MockServer, captures};
    let server = MockServer::start().await;
    server.enqueue(models_list());
    server.enqueue(captures::replay(captures::PYSERVER_PLAIN));
    server.enqueue(captures::empty_200());
    let p = doctor_project(&server.url(), "");
    tokio::task::block_in_place(|| doctor_snap("doctor_empty_200", &p, &server, &["doctor"]))
        .expect_code(1);
}

#[test]
fn doctor_with_an_unreachable_provider_and_offline() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let p = doctor_project(&url, "");
    let filtered = |name: &str, args: &[&str]| {
        let r = run(&p, args);
        check(name, &p, &render(&r).replace(&url, "http://[CLOSED]"));
        r
    };
    filtered("doctor_unreachable", &["doctor"]).expect_code(1);
    filtered("doctor_offline", &["doctor", "--offline"]).expect_code(0);
}

#[test]
fn doctor_offline_still_names_a_missing_key_and_warns_of_no_tests() {
    let p = Project::with_sprint(&board());
    p.write(
        "baton.toml",
        "[agents]\nmodel = \"corp/m\"\n\n[providers.corp]\nkind = \"openai\"\n\
         base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"BATON_DOCTOR_KEY_NEVER_SET_4C1\"\n",
    );
    git_init(&p);
    run(&p, &["trust"]).expect_code(0);
    let mut cmd = command(&p, &["doctor", "--offline"]);
    cmd.env_remove("BATON_DOCTOR_KEY_NEVER_SET_4C1");
    let r = run_guarded(cmd, &["doctor", "--offline"]).expect_code(1);
    assert!(
        r.stdout
            .contains("`BATON_DOCTOR_KEY_NEVER_SET_4C1`, which is not set"),
        "{}",
        r.describe()
    );
    assert!(
        r.stdout
            .contains("warnings:\n  - no `[sprint] test_command`"),
        "{}",
        r.describe()
    );
}
