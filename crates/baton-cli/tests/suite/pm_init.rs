//! `baton pm init`: the two workflows written under the project's root as the generator makes
//! them (whose text is checked against GitHub's workflow schema and actionlint in
//! `baton-core::pipeline::actions`), a rerun that keeps identical files, a file edited by hand
//! never replaced without `--force` (and then nothing written at all), a bad schedule refused
//! before anything is written, and the output a user reads, as snapshots.

use super::common::{Project, Run};
use baton_core::pipeline::actions::{AGENT_WORKFLOW, Options, PM_WORKFLOW, workflows};

/// The files as `baton pm init` with these options writes them.
fn expected(schedule: &str) -> Vec<(&'static str, String)> {
    let options = Options {
        schedule: schedule.to_owned(),
        ..Options::default()
    };
    workflows(&options)
        .expect("valid options")
        .into_iter()
        .map(|f| (f.path, f.text))
        .collect()
}

fn read(p: &Project, rel: &str) -> Option<String> {
    std::fs::read_to_string(p.root().join(rel)).ok()
}

/// Checks a snapshot of a run's output (no path varies: the project is not in a repository).
#[track_caller]
fn snapshot(name: &str, run: &Run) {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    let text = format!(
        "$ baton {}\nexit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
        run.args,
        run.code.map_or("killed".to_owned(), |c| c.to_string()),
        run.stdout,
        run.stderr
    );
    settings.bind(|| insta::assert_snapshot!(name, text));
}

#[test]
fn pm_init_writes_the_workflows_keeps_them_on_a_rerun_and_never_replaces_an_edit_unforced() {
    let p = Project::empty();
    let run = p.ok(&["pm", "init"]);
    snapshot("pm_init", &run);
    for (path, text) in expected("*/15 * * * *") {
        assert_eq!(read(&p, path).as_deref(), Some(text.as_str()), "{path}");
        assert!(
            run.stdout.contains(&format!("  wrote    {path}\n")),
            "{}",
            run.describe()
        );
    }
    for secret in ["BATON_GITHUB_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"] {
        assert!(run.stdout.contains(secret), "{}", run.describe());
    }
    // Every setting the first pass needs is named.
    for setting in ["[pipeline]", "login =", "owner =", "base  ="] {
        assert!(run.stdout.contains(setting), "{}", run.describe());
    }
    assert!(
        run.stdout
            .contains("agent/business-analyst, agent/architect, agent/backend, agent/reviewer")
    );

    // Again, with nothing changed: both kept, byte for byte.
    let run = p.ok(&["pm", "init"]);
    for (path, text) in expected("*/15 * * * *") {
        assert_eq!(read(&p, path).as_deref(), Some(text.as_str()), "{path}");
        assert!(
            run.stdout.contains(&format!("  kept     {path}")),
            "{}",
            run.describe()
        );
    }
    assert!(run.stdout.contains("nothing changed"), "{}", run.describe());

    // The agent's file edited by hand, the PM's (written first) removed: refused, and nothing
    // written, not even the file that could have been.
    let edited = format!(
        "{}# our own step\n",
        read(&p, AGENT_WORKFLOW).expect("written")
    );
    p.write(AGENT_WORKFLOW, &edited);
    std::fs::remove_file(p.root().join(PM_WORKFLOW)).expect("remove");
    let run = p.run(&["pm", "init"]).expect_code(1);
    snapshot("pm_init_refused", &run);
    assert!(
        run.stderr
            .contains(&format!("`{AGENT_WORKFLOW}` exists and differs"))
            && run.stderr.contains("--force"),
        "{}",
        run.describe()
    );
    assert_eq!(read(&p, AGENT_WORKFLOW), Some(edited), "the edit is kept");
    assert_eq!(read(&p, PM_WORKFLOW), None, "nothing is written");

    // Forced: the edit is replaced, the missing file written.
    let run = p.ok(&["pm", "init", "--force"]);
    assert!(
        run.stdout.contains(&format!("  replaced {AGENT_WORKFLOW}")),
        "{}",
        run.describe()
    );
    assert!(
        run.stdout.contains(&format!("  wrote    {PM_WORKFLOW}")),
        "{}",
        run.describe()
    );
    for (path, text) in expected("*/15 * * * *") {
        assert_eq!(read(&p, path).as_deref(), Some(text.as_str()), "{path}");
    }
}

#[test]
fn pm_init_takes_a_schedule_and_refuses_one_that_is_not_cron() {
    let p = Project::empty();
    let run = p
        .run(&["pm", "init", "--schedule", "*/15 * * *"])
        .expect_code(1);
    assert!(
        run.stderr
            .contains("the schedule `*/15 * * *` is not a cron schedule: it has 4 fields"),
        "{}",
        run.describe()
    );
    assert_eq!(read(&p, PM_WORKFLOW), None);
    assert_eq!(read(&p, AGENT_WORKFLOW), None);
    let run = p
        .run(&["pm", "init", "--schedule", "0 25 * * *"])
        .expect_code(1);
    assert!(
        run.stderr.contains("the hour 25 is not within 0-23"),
        "{}",
        run.describe()
    );

    p.ok(&["pm", "init", "--schedule", "0 9 * * 1-5"]);
    for (path, text) in expected("0 9 * * 1-5") {
        assert_eq!(read(&p, path).as_deref(), Some(text.as_str()), "{path}");
    }
    assert!(read(&p, PM_WORKFLOW).is_some_and(|t| t.contains("- cron: '0 9 * * 1-5'")));
}

#[test]
fn pm_init_below_the_top_of_a_repository_says_github_will_not_see_the_workflows() {
    let p = Project::empty();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(p.root())
        .status()
        .expect("git runs");
    assert!(git.success());
    p.write("app/baton.toml", "");
    let sub = p.root().join("app");
    let run = super::common::run_in(&sub, &["pm", "init"]).expect_code(0);
    assert!(
        run.stdout.contains("is not the top of a git repository"),
        "{}",
        run.describe()
    );
    assert!(sub.join(PM_WORKFLOW).is_file());
    // At the top, no note.
    let run = p.ok(&["pm", "init"]);
    assert!(!run.stdout.contains("note:"), "{}", run.describe());
}

#[test]
fn a_schedule_more_often_than_github_runs_schedules_is_refused_with_the_reason() {
    let p = Project::empty();
    let run = p
        .run(&["pm", "init", "--schedule", "*/2 * * * *"])
        .expect_code(1);
    snapshot("pm_init_too_often", &run);
    assert!(
        run.stderr.contains("at most every 5 minutes"),
        "{}",
        run.describe()
    );
    assert_eq!(read(&p, PM_WORKFLOW), None, "nothing is written");
    p.ok(&["pm", "init", "--schedule", "*/5 * * * *"]);
}
