//! The path a new user walks: `baton init` then `baton sprint` on a fresh repository, and what
//! baton says after a sprint in which every story needs a human.

use super::common::Project;
use super::sprint::{K1, Script, Toml, baton, git, sprint_project, subjects};

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
