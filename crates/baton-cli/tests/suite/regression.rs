//! One test per fixed resume or interruption fault of the sprint loop, found by killing or
//! interrupting `baton sprint` at chosen instants. Each drives the real binary on a real git
//! repository with the script provider (helpers shared with `sprint.rs`).

use super::common::Project;
use super::sprint::{
    HANG_GUARD, K1, K2, STORIES, Script, Toml, baton, call, command, dirty, git, open_escalations,
    pass_verdict, re, short, sprint_json, sprint_project, statuses, subjects,
};
use serde_json::json;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Waits until `done()` holds while `child` runs; fails if it exits first or never gets there.
fn wait_for(child: &mut Child, what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        if let Some(st) = child.try_wait().expect("try_wait") {
            panic!("the run ended ({st}) before {what}");
        }
        assert!(started.elapsed() < HANG_GUARD, "never saw {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reads `r` to its end on a thread of its own, so a child never blocks on a full pipe.
fn drain(mut r: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

/// Waits for `child` to exit; fails with `what` after the hang guard.
fn wait_exit(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return st;
        }
        assert!(started.elapsed() < HANG_GUARD, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends signal `name` (`INT`, `TERM`) to process `pid` with `kill(1)`.
fn signal(pid: u32, name: &str) {
    let ok = std::process::Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .status()
        .expect("kill(1)")
        .success();
    assert!(ok, "kill -s {name} {pid}");
}

fn sprint_text(p: &Project) -> String {
    std::fs::read_to_string(p.sprint_path()).unwrap_or_default()
}

/// The scrum master holds epic `epic`'s retrospective (writes its file), after `delay_ms`.
fn retro(script: Script, epic: u32, delay_ms: u64) -> Script {
    let path = format!("{STORIES}/epic-{epic}-retro.md");
    let write = json!({
        "agent": "scrum-master",
        "repeat": true,
        "match": re(&format!("Hold the retrospective of epic {epic}")),
        "text": "Looking back.",
        "delay_ms": delay_ms,
        "tool_calls": [call("write_file", json!({ "path": path, "content": "# Retro\n\n- went well\n" }))],
    });
    script.raw(write).turn(
        "scrum-master",
        &re(&format!("to `{path}`")),
        "The retrospective is written.",
        vec![],
    )
}

/// A project holding retrospectives whose two stories of epic 1 run straight through; the
/// retrospective's scrum master answers after `delay_ms`.
fn two_stories_and_a_retrospective(delay_ms: u64) -> Project {
    let toml = Toml {
        sprint: "retrospective = true",
        ..Toml::default()
    };
    let script = retro(Script::new().straight(K1).straight(K2), 1, delay_ms);
    sprint_project(toml, &script)
}

#[test]
fn a_retrospective_killed_while_it_runs_is_held_by_the_next_run() {
    let p = two_stories_and_a_retrospective(600_000);
    let mut child = command(&p, &["sprint", "--yolo", "--json", "--batch", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn baton");
    wait_for(&mut child, "the retrospective started", || {
        sprint_text(&p).contains(&format!("{K2}: done"))
    });
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    assert_eq!(statuses(&p)["epic-1-retrospective"], "optional");

    retro(Script::new().straight(K1).straight(K2), 1, 0).install(&p);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K2], 0);
    assert_eq!(report["end"], "completed", "{}", run.describe());
    assert_eq!(
        statuses(&p)["epic-1-retrospective"],
        "done",
        "{}",
        run.describe()
    );
    assert!(
        subjects(&p).contains(&"epic(1): retrospective".to_owned()),
        "{:?}",
        subjects(&p)
    );
}

#[test]
fn a_story_file_written_before_its_transition_is_committed_under_its_own_stage() {
    // The scrum master writes K2's story file, then stalls before its final answer.
    let mut stalling = Script::new().straight(K1).create(K2);
    let last = stalling.turns.last_mut().expect("the final create turn");
    last["delay_ms"] = json!(600_000);
    let p = sprint_project(Toml::default(), &stalling);
    let mut child = command(&p, &["sprint", "--yolo", "--json", "--batch", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn baton");
    let story = p.root().join(format!("{STORIES}/{K2}.md"));
    wait_for(&mut child, "K2's story file", || story.is_file());
    std::thread::sleep(Duration::from_millis(100));
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    assert_eq!(statuses(&p)[K2], "backlog");

    Script::new().straight(K1).straight(K2).install(&p);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K2], 0);
    assert_eq!(report["end"], "completed", "{}", run.describe());
    let (s1, s2) = (short(K1), short(K2));
    assert_eq!(
        subjects(&p),
        [
            "init".to_owned(),
            format!("story({s1}): create"),
            format!("story({s1}): dev"),
            format!("story({s1}): review passed"),
            format!("story({s2}): create"),
            format!("story({s2}): dev"),
            format!("story({s2}): review passed"),
        ]
    );
    // K2's story file went in with K2's create, not with a commit of the killed run.
    let first = git(
        p.root(),
        &[
            "log",
            "--format=%s",
            "--diff-filter=A",
            "--",
            &format!("{STORIES}/{K2}.md"),
        ],
    );
    assert_eq!(first.trim(), format!("story({s2}): create"));
    assert_eq!(dirty(&p), Vec::<String>::new());
}

/// Sends SIGINT to the process group `pgid`, as a terminal's Ctrl-C does.
fn interrupt_group(pgid: u32) {
    let ok = std::process::Command::new("kill")
        .args(["-s", "INT", "--", &format!("-{pgid}")])
        .status()
        .expect("kill(1)")
        .success();
    assert!(ok, "could not signal the process group");
}

#[test]
fn ctrl_c_during_the_orchestrators_test_run_is_an_interruption_not_a_verdict() {
    use std::os::unix::process::CommandExt;
    let toml = Toml {
        sprint: "max_review_rounds = 1",
        ..Toml::default()
    };
    let script = Script::new().straight(K1);
    let p = sprint_project(toml, &script);
    // Tests that announce themselves and then take long enough to be interrupted.
    let slow = "[sprint]\ntest_command = [\"sh\", \"-c\", \"touch .baton/tests-started; sleep 60\"]\nmax_review_rounds = 1\n\n[agents]\nmodel = \"script/t\"\n";
    p.write("baton.toml", slow);
    git(p.root(), &["commit", "-qam", "slow tests"]);
    // A test command that is not a bare allowlisted program needs a trusted project.
    baton(&p, &["trust"]).expect_code(0);
    let started = p.root().join(".baton/tests-started");
    // More interruptions than there are fix rounds: none of them may count as one.
    for round in 0..3 {
        let _ = std::fs::remove_file(&started);
        let mut cmd = command(&p, &["sprint", "--yolo", "--stories", K1]);
        let log = std::fs::File::create(p.root().join(".baton/ctrl-c.log")).expect("log");
        cmd.stdout(Stdio::null()).stderr(log).process_group(0);
        let mut child = cmd.spawn().expect("spawn baton");
        let log_path = p.root().join(".baton/ctrl-c.log");
        let started_ok = {
            let t = Instant::now();
            loop {
                if started.exists() {
                    break true;
                }
                if child.try_wait().expect("try_wait").is_some() || t.elapsed() > HANG_GUARD {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        assert!(
            started_ok,
            "round {round}: the run ended before the test run:\n{}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
        interrupt_group(child.id());
        let t = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().expect("try_wait") {
                break st;
            }
            assert!(
                t.elapsed() < HANG_GUARD,
                "round {round}: Ctrl-C did not stop the run"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(
            status.code(),
            Some(1),
            "round {round}: a cancelled run exits 1"
        );
        assert_eq!(statuses(&p)[K1], "in-progress", "round {round}");
        assert!(open_escalations(&p).is_empty(), "round {round}");
    }
    // With tests that pass, the story goes straight through: no round was used up.
    p.write(
        "baton.toml",
        "[sprint]\ntest_command = [\"cat\", \"tests-pass\"]\nmax_review_rounds = 1\n\n[agents]\nmodel = \"script/t\"\n",
    );
    let (events, report, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 0);
    assert_eq!(
        report["stories"][0]["review_rounds"],
        0,
        "{}",
        run.describe()
    );
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "stage" && e["stage"] == "fix"),
        "an interrupted test run sent the story into a fix round"
    );
    assert_eq!(statuses(&p)[K1], "done");
}

#[test]
fn stale_git_locks_left_by_a_killed_git_are_cleared_and_the_stages_committed() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    for lock in [".git/index.lock", ".git/HEAD.lock"] {
        std::fs::write(p.root().join(lock), "").expect("lock");
    }
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 0);
    assert_eq!(report["end"], "completed", "{}", run.describe());
    let sh = short(K1);
    assert_eq!(
        subjects(&p),
        [
            "init".to_owned(),
            format!("story({sh}): create"),
            format!("story({sh}): dev"),
            format!("story({sh}): review passed"),
        ]
    );
    assert!(!p.root().join(".git/index.lock").exists());
    assert_eq!(dirty(&p), Vec::<String>::new());
}

#[test]
fn a_run_whose_stage_commits_fail_does_not_report_success() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    // An index git cannot write: every stage commit fails.
    let index = p.root().join(".git/index");
    std::fs::remove_file(&index).expect("index");
    std::fs::create_dir(&index).expect("index as a directory");
    let (events, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 1);
    assert_eq!(report["end"], "failed", "{}", run.describe());
    assert!(
        report["reason"]
            .as_str()
            .is_some_and(|r| r.contains("commit")),
        "{report:#}"
    );
    assert!(
        events.iter().any(|e| e["event"] == "commit_failed"),
        "{}",
        run.describe()
    );
}

#[test]
fn a_baseline_commit_an_agent_wrote_in_any_script_cannot_crash_the_review() {
    let script = Script::new().review(K1, 1, &pass_verdict("fine"));
    let p = sprint_project(Toml::default(), &script);
    baton(
        &p,
        &[
            "set",
            K1,
            "review",
            "--force",
            "--reason",
            "set up for the test",
        ],
    )
    .expect_code(0);
    let story = format!(
        "---\nbaseline_commit: \"aéééééééééé€€€€\"\n---\n# Story {K1}\n\nStatus: review\n\n## Dev Agent Record\n\n### File List\n"
    );
    p.write(&format!("{STORIES}/{K1}.md"), &story);
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-qm", "a story under review"]);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 0);
    assert_eq!(report["end"], "completed", "{}", run.describe());
    assert!(!run.stderr.contains("panicked"), "{}", run.describe());
}

#[test]
fn a_sprint_file_edited_by_an_agent_is_reverted_and_its_story_stopped() {
    // The developer marks its own story and an unstarted one done by rewriting the sprint file
    // with an allowlisted interpreter, around the file tools.
    let sprint = format!("{STORIES}/sprint-status.yaml");
    let rewrite = format!(
        "import pathlib; p = pathlib.Path('{sprint}'); t = p.read_text(); \
         p.write_text(t.replace('{K1}: in-progress', '{K1}: done').replace('{K2}: backlog', '{K2}: done'))"
    );
    let script = Script::new().create(K1).turn(
        "developer",
        &re(&format!("Implement story `{K1}` (mode: dev)")),
        "Done, trust me.",
        vec![call(
            "run_command",
            json!({ "program": "python3", "args": ["-c", rewrite] }),
        )],
    );
    let script = script.turn("developer", "exit code: 0", "All done.", vec![]);
    let p = sprint_project(Toml::default(), &script);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 1);
    let st = statuses(&p);
    assert_eq!(st[K1], "needs-intervention", "{}", run.describe());
    assert_eq!(st[K2], "backlog", "the unstarted story stayed done");
    let reason = report["stories"][0]["error"].as_str().unwrap_or_default();
    assert!(
        reason.contains("edited outside baton's tools"),
        "{report:#}"
    );
    // The revert is journaled, and the file and the journal agree.
    let log = baton(&p, &["log", "--key", K2, "--json"]).expect_code(0);
    assert!(log.stdout.contains("reverted"), "{}", log.describe());
    baton(&p, &["status", "--validate"]).expect_code(0);
}

#[test]
fn provider_keys_never_reach_the_orchestrators_test_run() {
    let secret = "sk-ant-e2e-do-not-leak-4242";
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    // Tests an agent could have written: they print the environment, then pass.
    p.write(
        "baton.toml",
        "[sprint]\ntest_command = [\"sh\", \"-c\", \"env > .baton/test-env; cat tests-pass\"]\n\n[agents]\nmodel = \"script/t\"\n",
    );
    git(
        p.root(),
        &["commit", "-qam", "tests that print the environment"],
    );
    // A test command that is not a bare allowlisted program needs a trusted project.
    baton(&p, &["trust"]).expect_code(0);
    let mut cmd = command(&p, &["sprint", "--yolo", "--json", "--stories", K1]);
    cmd.env("ANTHROPIC_API_KEY", secret)
        .env("OPENAI_API_KEY", secret);
    let run = super::sprint::run_guarded(cmd, &["sprint"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let env = std::fs::read_to_string(p.root().join(".baton/test-env"))
        .unwrap_or_else(|e| panic!("the tests did not run ({e}):\n{}", run.describe()));
    assert!(env.contains("PATH="), "{env}");
    assert!(
        !env.contains(secret),
        "a provider key reached the tests:\n{env}"
    );
}

#[test]
fn a_sprint_file_that_is_a_symlink_is_refused_by_sprint() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    let outside = tempfile::tempdir().expect("tempdir");
    let real = outside.path().join("sprint-status.yaml");
    let link = p.root().join(format!("{STORIES}/sprint-status.yaml"));
    std::fs::rename(&link, &real).expect("move the sprint file out");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-qm", "a linked sprint file"]);
    let before = std::fs::read(&real).expect("sprint file");
    let run = baton(&p, &["sprint", "--yolo", "--stories", K1]);
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(run.stderr.contains("is a symlink"), "{}", run.describe());
    assert_eq!(std::fs::read(&real).expect("sprint file"), before);
}

/// A `git` placed first on baton's PATH that holds the call naming `message` (a commit): it
/// writes its pid to `held` and waits for `release` before running the real git; every other
/// call goes straight through.
struct GitGate {
    bin: tempfile::TempDir,
    held: std::path::PathBuf,
    release: std::path::PathBuf,
}

impl GitGate {
    fn new(message: &str) -> GitGate {
        let real = std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .map(|d| d.join("git"))
                    .find(|p| p.is_file())
            })
            .expect("git on PATH");
        let bin = tempfile::tempdir().expect("tempdir");
        let held = bin.path().join("held");
        let release = bin.path().join("release");
        let script = format!(
            "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = '{message}' ]; then\n    echo $$ > '{held}.tmp' && mv '{held}.tmp' '{held}'\n    while [ ! -e '{release}' ]; do sleep 0.02; done\n    break\n  fi\ndone\nexec '{real}' \"$@\"\n",
            held = held.display(),
            release = release.display(),
            real = real.display(),
        );
        let path = bin.path().join("git");
        std::fs::write(&path, script).expect("write the gate");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        GitGate { bin, held, release }
    }

    /// Puts the gate first on `cmd`'s PATH.
    fn apply(&self, cmd: &mut std::process::Command) {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![self.bin.path().to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
    }

    /// The pid of the held git, once the call has been reached.
    fn held(&self) -> Option<u32> {
        std::fs::read_to_string(&self.held)
            .ok()
            .and_then(|t| t.trim().parse().ok())
    }

    /// Lets the held call go on.
    fn release(&self) {
        std::fs::write(&self.release, "").expect("release");
    }
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z')),
    }
}

#[test]
fn a_retrospective_killed_before_its_commit_is_committed_under_its_own_name() {
    let p = two_stories_and_a_retrospective(0);
    let gate = GitGate::new("epic(1): retrospective");
    let mut cmd = command(&p, &["sprint", "--yolo", "--json", "--batch", "2"]);
    gate.apply(&mut cmd);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn baton");
    // Killed after the retrospective moved to `done`, before its commit.
    wait_for(&mut child, "the retrospective's commit", || {
        gate.held().is_some()
    });
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let held = gate.held().expect("held");
    let _ = std::process::Command::new("kill")
        .args(["-s", "KILL", &held.to_string()])
        .status();
    assert_eq!(statuses(&p)["epic-1-retrospective"], "done");

    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K2], 0);
    assert_eq!(report["end"], "completed", "{}", run.describe());
    let subjects = subjects(&p);
    assert_eq!(
        subjects.last().map(String::as_str),
        Some("epic(1): retrospective"),
        "{subjects:?}"
    );
    assert!(
        !subjects.iter().any(|s| s.contains("interrupted run")),
        "{subjects:?}"
    );
    let first = git(
        p.root(),
        &[
            "log",
            "--format=%s",
            "--diff-filter=A",
            "--",
            &format!("{STORIES}/epic-1-retro.md"),
        ],
    );
    assert_eq!(first.trim(), "epic(1): retrospective");
    assert_eq!(dirty(&p), Vec::<String>::new());
}

#[test]
fn ctrl_c_during_a_stage_commit_lets_the_commit_finish() {
    use std::os::unix::process::CommandExt;
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    let dev = format!("story({}): dev", short(K1));
    let gate = GitGate::new(&dev);
    let mut cmd = command(&p, &["sprint", "--yolo", "--json", "--stories", K1]);
    gate.apply(&mut cmd);
    // baton leads its process group, as a shell's foreground job does.
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().expect("spawn baton");
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    let out = drain(out);
    let err = drain(err);
    wait_for(&mut child, "the dev stage's commit", || {
        gate.held().is_some()
    });
    // The terminal's Ctrl-C reaches the whole foreground group while git is committing.
    interrupt_group(child.id());
    gate.release();
    let status = wait_exit(&mut child, "Ctrl-C did not stop the run");
    let (stdout, stderr) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    let describe = format!("exit {status}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    assert_eq!(status.code(), Some(1), "{describe}");
    assert!(!stdout.contains("commit_failed"), "{describe}");
    assert!(
        subjects(&p).contains(&dev),
        "the commit in flight was lost: {:?}\n{describe}",
        subjects(&p)
    );
    let report = stdout.lines().last().unwrap_or_default();
    assert!(report.contains("\"cancelled\""), "{describe}");
}

/// Waits while `child` runs until a transcript of the run records an agent's outcome.
fn wait_for_an_outcome(p: &Project, child: &mut Child) {
    let runs = p.root().join(".baton/runs");
    let seen = || {
        std::fs::read_dir(&runs)
            .into_iter()
            .flatten()
            .flatten()
            .any(|run| {
                std::fs::read_dir(run.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|t| {
                        std::fs::read_to_string(t.path())
                            .is_ok_and(|text| text.contains("\"kind\":\"outcome\""))
                    })
            })
    };
    let started = Instant::now();
    while !seen() {
        if child.try_wait().expect("try_wait").is_some() {
            return;
        }
        assert!(
            started.elapsed() < HANG_GUARD,
            "never saw an agent's outcome"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A sprint of one story whose scrum master writes the story file, then thinks for a long
/// time before its final answer.
fn slow_story() -> Project {
    let mut stalling = Script::new().straight(K1);
    let last = stalling
        .turns
        .iter_mut()
        .find(|t| {
            t["agent"] == "scrum-master"
                && t["text"].as_str().is_some_and(|s| s.contains("is written"))
        })
        .expect("the final create turn");
    last["delay_ms"] = json!(20_000);
    sprint_project(Toml::default(), &stalling)
}

#[test]
fn ctrl_c_while_the_output_is_not_read_still_stops_the_run() {
    let p = slow_story();
    // A reader that has stopped reading (a pager, a full pipe): every line baton prints now
    // waits, and the render loop with it.
    let (reader, mut writer) = std::io::pipe().expect("pipe");
    std::io::Write::write_all(&mut writer, &[b'\n'; 65536]).expect("fill the pipe");
    let mut cmd = command(&p, &["sprint", "--yolo", "--json", "--stories", K1]);
    cmd.stdout(writer).stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn baton");
    drop(cmd);
    let story = p.root().join(format!("{STORIES}/{K1}.md"));
    wait_for(&mut child, "K1's story file", || story.is_file());
    signal(child.id(), "INT");
    // The scrum master's run ends (cancelled, or at the end of its long think when the signal
    // was lost) while nobody reads.
    wait_for_an_outcome(&p, &mut child);
    let out = drain(reader);
    let status = wait_exit(&mut child, "the run never ended");
    let stdout = out.join().unwrap_or_default();
    assert_eq!(status.code(), Some(1), "exit {status}\n{stdout}");
    let report = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    assert!(report.contains("\"end\":\"cancelled\""), "{report}");
    assert_eq!(statuses(&p)[K1], "backlog");
}

#[test]
fn sigterm_stops_a_sprint_like_ctrl_c() {
    let p = slow_story();
    let mut cmd = command(&p, &["sprint", "--yolo", "--json", "--stories", K1]);
    let (mut child, out, err) = {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn baton");
        let o = child.stdout.take().expect("stdout");
        let e = child.stderr.take().expect("stderr");
        let out = drain(o);
        let err = drain(e);
        (child, out, err)
    };
    let story = p.root().join(format!("{STORIES}/{K1}.md"));
    wait_for(&mut child, "K1's story file", || story.is_file());
    signal(child.id(), "TERM");
    let status = wait_exit(&mut child, "SIGTERM did not stop the run");
    let (stdout, stderr) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    let describe = format!("exit {status}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    assert_eq!(status.code(), Some(1), "{describe}");
    let report = stdout.lines().last().unwrap_or_default();
    assert!(report.contains("\"end\":\"cancelled\""), "{describe}");
    // The journal holds the run as cancelled: the next run is not told of an interrupted one.
    let (events, report, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 0);
    assert_eq!(report["end"], "completed", "{}", run.describe());
    assert!(
        !events.iter().any(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.contains("was interrupted"))),
        "{}",
        run.describe()
    );
}

/// A sprint whose developer is a stand-in for Claude Code (outside the project, in `bin`): it
/// records its pid, starts a grandchild in its group that records its own, and works forever;
/// once `bin/quick` exists it fails at once instead.
fn cli_developer_project(bin: &std::path::Path) -> Project {
    let program = bin.join("fake-claude");
    let script = format!(
        "#!/bin/sh\nif [ -e '{bin}/quick' ]; then exit 1; fi\necho $$ > '{bin}/cli.pid'\nsleep 600 &\necho $! > '{bin}/grandchild.pid.tmp' && mv '{bin}/grandchild.pid.tmp' '{bin}/grandchild.pid'\nwhile true; do sleep 1; done\n",
        bin = bin.display()
    );
    std::fs::write(&program, script).expect("stand-in");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let tail = format!(
        "[agents.roles]\ndeveloper = \"claude-code/x\"\n\n[cli.claude-code]\nprogram = {:?}\napi_key_env = \"PATH\"\nmax_retries = 0\n",
        program.display().to_string()
    );
    let p = sprint_project(
        Toml {
            tail: &tail,
            ..Toml::default()
        },
        &Script::new().create(K1),
    );
    baton(&p, &["trust"]).expect_code(0);
    p
}

fn pid_in(path: &std::path::Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Waits (under the hang guard) until `pid` is gone.
fn wait_gone(pid: u32, what: &str) {
    let started = Instant::now();
    while !gone(pid) {
        if started.elapsed() > HANG_GUARD {
            // It leads its process group: end the whole group before failing.
            let _ = std::process::Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{pid}")])
                .status();
            panic!("{what} (pid {pid}) outlived baton");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A sprint started with the stand-in CLI developer ([`cli_developer_project`], in `bin`), once
/// the CLI and its grandchild are at work: the project, baton, and the two pids.
fn cli_developer_at_work(bin: &std::path::Path) -> (Project, Child, u32, u32) {
    let p = cli_developer_project(bin);
    let mut child = command(&p, &["sprint", "--yolo", "--json", "--stories", K1])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn baton");
    let grandchild_file = bin.join("grandchild.pid");
    wait_for(&mut child, "the CLI developer at work", || {
        grandchild_file.exists()
    });
    let cli = pid_in(&bin.join("cli.pid")).expect("the CLI's pid");
    let grandchild = pid_in(&grandchild_file).expect("the grandchild's pid");
    (p, child, cli, grandchild)
}

#[test]
fn a_cli_worker_dies_with_a_killed_baton_and_a_resume_ends_what_it_left() {
    let bin = tempfile::tempdir().expect("tempdir");
    let (p, mut child, cli, grandchild) = cli_developer_at_work(bin.path());
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    // The CLI itself dies with baton.
    wait_gone(cli, "the CLI");
    // Its grandchild, left in the CLI's process group, is ended by the next run before it
    // starts its own work.
    std::fs::write(bin.path().join("quick"), "").expect("quick");
    let run = baton(&p, &["sprint", "--yolo", "--json", "--stories", K1]);
    let ended = gone(grandchild);
    if !ended {
        let _ = std::process::Command::new("kill")
            .args(["-s", "KILL", &grandchild.to_string()])
            .status();
    }
    assert!(
        ended,
        "the killed run's worker still ran\n{}",
        run.describe()
    );
    assert!(
        run.stderr.contains("a killed run left running")
            || run.stdout.contains("a killed run left running"),
        "{}",
        run.describe()
    );
    let records = p.root().join(".baton/cli/workers");
    let left: Vec<_> = std::fs::read_dir(&records)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn sigterm_ends_a_cli_worker_with_the_run() {
    let bin = tempfile::tempdir().expect("tempdir");
    let (_p, mut child, cli, grandchild) = cli_developer_at_work(bin.path());
    signal(child.id(), "TERM");
    let status = wait_exit(&mut child, "SIGTERM did not stop the run");
    let (cli_gone, grandchild_gone) = (gone(cli), gone(grandchild));
    for pid in [cli, grandchild] {
        let _ = std::process::Command::new("kill")
            .args(["-s", "KILL", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
    assert_eq!(status.code(), Some(1), "exit {status}");
    assert!(cli_gone && grandchild_gone, "the worker outlived the run");
}

#[test]
fn sigterm_stops_an_sdd_run_like_ctrl_c() {
    let p = Project::empty();
    p.write(
        "PLAN.md",
        "# Plan\n\n```baton-tasks\n- id: 1\n  title: Add the calculator\n  files: [calc.py]\n```\n",
    );
    p.write(".baton/.gitignore", "*\n");
    p.write("baton.toml", "[commands]\nallow = [\"true\"]\n");
    // The implementer writes a file, then thinks for a long time.
    let script = Script::new()
        .turn(
            "implementer",
            &re("Implement task 1 of the plan `PLAN.md`"),
            "Starting.",
            vec![call(
                "write_file",
                json!({ "path": "calc.py", "content": "def add(a, b): return a + b\n" }),
            )],
        )
        .raw(json!({
            "agent": "implementer",
            "repeat": true,
            "match": re("to `calc.py`"),
            "text": "Done.",
            "delay_ms": 20_000,
        }));
    script.install(&p);
    super::sprint::git_init(&p);
    let mut child = command(
        &p,
        &[
            "sdd", "PLAN.md", "--json", "--model", "script/t", "--no-tdd",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn baton");
    let o = child.stdout.take().expect("stdout");
    let out = drain(o);
    let written = p.root().join("calc.py");
    wait_for(&mut child, "the implementer's write", || written.is_file());
    signal(child.id(), "TERM");
    let status = wait_exit(&mut child, "SIGTERM did not stop the run");
    let stdout = out.join().unwrap_or_default();
    assert_eq!(status.code(), Some(1), "exit {status}\n{stdout}");
    let report = stdout.lines().last().unwrap_or_default();
    assert!(report.contains("\"end\":\"cancelled\""), "{stdout}");
}
