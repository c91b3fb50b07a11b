//! The path a new user walks: `baton init` then `baton sprint` on a fresh repository, and what
//! baton says after a sprint in which every story needs a human.

use super::common::Project;
use super::sprint::{K1, K2, K3, Script, Toml, baton, git, sprint_project, statuses, subjects};

/// Replaces the first `from` in the project's `rel` file with `to`.
fn edit(p: &Project, rel: &str, from: &str, to: &str) {
    let path = p.root().join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "`{from}` not in {rel}:\n{text}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn init_then_sprint_is_not_refused_for_batons_own_files() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    // A fresh repository: no baton.toml yet.
    git(p.root(), &["rm", "-q", "baton.toml"]);
    git(p.root(), &["commit", "-q", "-m", "no baton yet"]);
    baton(&p, &["init"]).expect_code(0);
    edit(
        &p,
        "baton.toml",
        "[agents]\n",
        "[agents]\nmodel = \"script/t\"\n",
    );
    edit(
        &p,
        "baton.toml",
        "[sprint]\n",
        "[sprint]\ntest_command = [\"cat\", \"tests-pass\"]\n",
    );
    let run = baton(&p, &["sprint", "--yolo", "--stories", K1]);
    assert!(
        !run.stderr.contains("uncommitted changes"),
        "{}",
        run.describe()
    );
    let run = run.expect_code(0);
    let log = git(p.root(), &["log", "--format=%s"]);
    assert!(
        log.contains("baton: commit its own files (baton.toml)"),
        "{log}\n{}",
        run.describe()
    );
    assert!(subjects(&p).iter().any(|s| s == "story(1-1): create"));
    // The user's own uncommitted work is still refused.
    p.write("src/lib.txt", "changed by hand\n");
    let run = baton(&p, &["sprint", "--yolo"]).expect_code(1);
    assert!(
        run.stderr.contains("uncommitted changes (src/lib.txt)"),
        "{}",
        run.describe()
    );
}

#[test]
fn a_sprint_where_every_story_needs_a_human_says_which_and_how_to_go_on() {
    // A model that answers in prose and never calls a tool.
    let prose = Script::new().turn("scrum-master", "", "The story is ready.", vec![]);
    let p = sprint_project(Toml::default(), &prose);
    let run = baton(&p, &["sprint", "--yolo"]).expect_code(1);
    assert!(
        run.stdout.contains("3 stories need intervention"),
        "{}",
        run.describe()
    );
    let statuses = statuses(&p);
    for key in [K1, K2, K3] {
        assert_eq!(statuses[key], "needs-intervention", "{statuses:?}");
    }
    // No story started, so no epic moved.
    assert_eq!(statuses["epic-1"], "backlog", "{statuses:?}");
    assert_eq!(statuses["epic-2"], "backlog", "{statuses:?}");

    let board = baton(&p, &["status"]).expect_code(0);
    assert!(
        board
            .stdout
            .contains("next: nothing can be picked: 3 stories need a human"),
        "{}",
        board.describe()
    );
    for key in [K1, K2, K3] {
        let line = format!("  {key} (needs-intervention): baton set {key} backlog");
        assert!(board.stdout.contains(&line), "{line}\n{}", board.describe());
    }
    let json = super::common::parse_json(&baton(&p, &["status", "--json"]).expect_code(0));
    assert_eq!(json["next"]["action"], "blocked");
    assert_eq!(json["blocked"][0]["key"], K1);
    assert_eq!(
        json["blocked"][0]["command"],
        format!("baton set {K1} backlog")
    );

    // A second run has nothing it can do: it says why and fails.
    let again = baton(&p, &["sprint", "--yolo"]).expect_code(1);
    assert!(
        again.stdout.contains("nothing can be worked"),
        "{}",
        again.describe()
    );
    assert!(
        again.stdout.contains(&format!("baton set {K1} backlog")),
        "{}",
        again.describe()
    );

    // The way out works, and the changed sprint file does not block the next run.
    baton(&p, &["set", K1, "backlog"]).expect_code(0);
    Script::new().straight(K1).install(&p);
    baton(&p, &["sprint", "--yolo", "--stories", K1]).expect_code(0);
    assert_eq!(super::sprint::statuses(&p)[K1], "done");
}

#[test]
fn agents_show_the_model_that_will_run_and_errors_are_said_once() {
    let p = sprint_project(Toml::default(), &Script::new());
    let run = baton(&p, &["agents"]).expect_code(0);
    assert!(run.stdout.contains("script/t (own: "), "{}", run.describe());
    assert!(
        run.stdout.contains("every agent runs on script/t"),
        "{}",
        run.describe()
    );
    let json = super::common::parse_json(&baton(&p, &["agents", "--json"]).expect_code(0));
    assert_eq!(json["model_override"], "script/t");

    let run = baton(&p, &["team", "scout", "look", "--model", "nowhere/m"]).expect_code(1);
    assert_eq!(
        run.stderr.matches("unknown provider `nowhere`").count(),
        1,
        "{}",
        run.describe()
    );
}
