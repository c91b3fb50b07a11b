//! `baton sprint --parallel N` end to end: stories in their own git worktrees on real git, agents
//! replayed by the script provider, and the merge lane bringing each story into the base branch
//! (a conflict through a merge fix round; one the rounds cannot resolve escalated, its branch
//! kept).

use super::common::{Project, Run, SPRINT_REL, s, utc_stamp};
use super::sprint::{
    STORIES, STRAIGHT, Script, call, dirty, git, git_init, journal, pairs, pass_verdict, re, short,
    sprint_json, statuses, subjects, transitions,
};
use serde_json::json;
use std::time::SystemTime;

/// Two epics of two stories each: with the default dependency rule, `1-2` waits for `1-1` and
/// `2-2` for `2-1`, so the first two run side by side.
const A1: &str = "1-1-alpha";
const A2: &str = "1-2-beta";
const B1: &str = "2-1-gamma";
const B2: &str = "2-2-delta";
const FOUR: [&str; 4] = [A1, A2, B1, B2];

/// The shared file both first stories edit on the same line.
const SHARED: &str = "src/lib.txt";

fn project(script: &Script, sprint_toml: &str) -> Project {
    let p = Project::empty();
    p.write(
        "baton.toml",
        &format!(
            "[sprint]\ntest_command = [\"cat\", \"tests-pass\"]\n{sprint_toml}\n\n[agents]\nmodel = \"script/t\"\n"
        ),
    );
    let now = utc_stamp(SystemTime::now());
    p.write(
        SPRINT_REL,
        &format!(
            "# parallel stories\ngenerated: {now}\nlast_updated: {now}\nproject: e2e\n\
             project_key: NOKEY\ntracking_system: file-system\nstory_location: {STORIES}\n\n\
             development_status:\n  epic-1: backlog\n  {A1}: backlog\n  {A2}: backlog\n  \
             epic-1-retrospective: optional\n\n  epic-2: backlog\n  {B1}: backlog\n  {B2}: \
             backlog\n  epic-2-retrospective: optional\n"
        ),
    );
    p.write(".baton/.gitignore", "*\n");
    p.write(SHARED, "the product\n");
    script.install(&p);
    git_init(&p);
    p
}

/// The developer implements `key` and rewrites the shared line as its own.
fn develop_shared(script: Script, key: &str) -> Script {
    script
        .turn(
            "developer",
            &re(&format!("Implement story `{key}` (mode: dev)")),
            "Red first: the test, then the code.",
            vec![
                call(
                    "write_file",
                    json!({ "path": format!("src/{key}.rs"), "content": format!("// {key}\n") }),
                ),
                call(
                    "write_file",
                    json!({ "path": SHARED, "content": format!("the product, by {key}\n") }),
                ),
                call(
                    "edit_file",
                    json!({
                        "path": format!("{STORIES}/{key}.md"),
                        "old_string": "### File List\n",
                        "new_string": format!("### File List\n\n- src/{key}.rs\n- {SHARED}\n"),
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
            &re(&format!("to `src/{key}.rs`")),
            &format!("Implemented `{key}`. All tests pass."),
            vec![],
        )
}

/// The developer's merge fix round for `key`: writes `resolution` over the shared file (after
/// the dev turns in the script, so their tool results never reach this turn's answer).
fn resolve(script: Script, key: &str, resolution: &str) -> Script {
    script
        .turn(
            "developer",
            &format!(
                "(?s){}.*{}",
                re(&format!("Resolve the merge conflicts of story `{key}`")),
                re(&format!("- `{SHARED}`"))
            ),
            "Keeping what both sides meant.",
            vec![call(
                "write_file",
                json!({ "path": SHARED, "content": resolution }),
            )],
        )
        .turn(
            "developer",
            &format!("^wrote [0-9]+ bytes to {}", re(&format!("`{SHARED}`"))),
            "Resolved; no marker is left.",
            vec![],
        )
}

/// `baton sprint --yolo --parallel 2` on `1-1` and `2-1`, expecting exit `code`.
fn both_at_once(p: &Project, code: i32) -> (Vec<serde_json::Value>, serde_json::Value, Run) {
    sprint_json(
        p,
        &[
            "--yolo",
            "--parallel",
            "2",
            "--stories",
            &format!("{A1},{B1}"),
        ],
        code,
    )
}

fn review_pass(script: Script, key: &str) -> Script {
    script.review(key, 1, &pass_verdict(&format!("{key} meets its criteria")))
}

/// Commit subjects of `key`'s stage commits, oldest first.
fn story_subjects(all: &[String], key: &str) -> Vec<String> {
    let prefix = format!("story({}): ", short(key));
    all.iter()
        .filter(|s| s.starts_with(&prefix))
        .cloned()
        .collect()
}

fn branches(p: &Project) -> Vec<String> {
    git(p.root(), &["branch", "--format=%(refname:short)"])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn worktrees(p: &Project) -> usize {
    git(p.root(), &["worktree", "list", "--porcelain"])
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count()
}

#[test]
fn four_stories_two_at_a_time_merge_through_one_lane_and_a_conflict_gets_a_fix_round() {
    let both = format!("the product, by {A1} and by {B1}\n");
    let mut script = Script::new();
    for key in [A1, B1] {
        script = develop_shared(script.create(key), key);
        script = review_pass(script, key);
    }
    for key in [A2, B2] {
        script = review_pass(script.create(key).develop(key, true), key);
    }
    for key in [A1, B1] {
        script = resolve(script, key, &both);
    }
    let p = project(&script, "");
    let (events, report, run) = sprint_json(&p, &["--yolo", "--parallel", "2", "--batch", "4"], 0);
    assert_eq!(report["end"], "completed", "{report:#}\n{}", run.stderr);
    assert_eq!(report["completed"], 4, "{report:#}");

    // Every story done, in the sprint file and in its story file on the base branch.
    let st = statuses(&p);
    for key in FOUR {
        assert_eq!(st[key], "done", "{st:?}");
        let text = std::fs::read_to_string(p.root().join(format!("{STORIES}/{key}.md")))
            .expect("the story file reached the base branch");
        assert!(
            text.lines().any(|l| l.trim() == "Status: done"),
            "{key}:\n{text}"
        );
    }
    assert_eq!(
        (st["epic-1"].as_str(), st["epic-2"].as_str()),
        ("done", "done")
    );

    // The first two ran side by side: both were in flight before either was merged.
    let order: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["event"] == "merge")
        .map(|e| (s(e, "key").to_owned(), s(e, "phase").to_owned()))
        .collect();
    let at = |key: &str, phase: &str| {
        order
            .iter()
            .position(|(k, p)| k == key && p == phase)
            .unwrap_or_else(|| panic!("no {phase} of {key} in {order:?}"))
    };
    let first_merge = at(A1, "merged").min(at(B1, "merged"));
    assert!(
        at(A1, "worktree") < first_merge && at(B1, "worktree") < first_merge,
        "{order:?}"
    );
    // The later stories of each epic started only after the earlier one merged.
    assert!(at(A2, "worktree") > at(A1, "merged"), "{order:?}");
    assert!(at(B2, "worktree") > at(B1, "merged"), "{order:?}");

    // Exactly one of the two first stories met a conflict, resolved in one merge fix round.
    let conflicted: Vec<&str> = [A1, B1]
        .into_iter()
        .filter(|k| order.iter().any(|(key, p)| key == k && p == "conflict"))
        .collect();
    assert_eq!(conflicted.len(), 1, "{order:?}");

    // The base holds both changes, merged by the fix round.
    assert_eq!(
        std::fs::read_to_string(p.root().join(SHARED)).expect("shared file"),
        both
    );
    for key in FOUR {
        assert!(p.root().join(format!("src/{key}.rs")).is_file(), "{key}");
    }

    // Each story's commits are those a sequential run makes, in order: the conflict's
    // resolution landed in the story's own dev commit.
    let all = subjects(&p);
    for key in FOUR {
        let want: Vec<String> = ["create", "dev", "review passed"]
            .iter()
            .map(|w| format!("story({}): {w}", short(key)))
            .collect();
        assert_eq!(story_subjects(&all, key), want, "{all:?}");
    }
    // A line of stories: no merge commit.
    let merges = git(p.root(), &["log", "--merges", "--format=%s"]);
    assert_eq!(merges.trim(), "", "merge commits on the base");

    // Each transition journaled exactly once; nothing left behind.
    for key in FOUR {
        assert_eq!(transitions(&p, key), pairs(&STRAIGHT), "journal of {key}");
    }
    assert_eq!(dirty(&p), Vec::<String>::new());
    assert_eq!(worktrees(&p), 1, "worktrees left behind");
    assert_eq!(branches(&p), ["main"], "story branches left behind");
    assert!(
        !p.root()
            .join(".baton/worktrees")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some())
    );
    assert!(journal(&p).len() >= 16);
}

/// `1-1` and `2-1` both rewrite the shared line, and every merge fix round leaves the markers
/// in (the developer writes a file that still conflicts).
fn unresolvable() -> Script {
    let stuck = "<<<<<<< ours\nthe product\n=======\nstill undecided\n>>>>>>> theirs\n";
    let mut script = Script::new();
    for key in [A1, B1] {
        script = develop_shared(script.create(key), key);
        script = review_pass(script, key);
    }
    for key in [A1, B1] {
        script = resolve(script, key, stuck);
    }
    script
}

#[test]
fn a_conflict_the_rounds_cannot_resolve_escalates_and_keeps_its_branch_while_others_finish() {
    let script = review_pass(unresolvable().create(A2).develop(A2, true), A2);
    let p = project(&script, "max_review_rounds = 2");
    // Only three stories: `2-2` is not in the batch.
    let (_, report, run) = sprint_json(
        &p,
        &[
            "--yolo",
            "--parallel",
            "2",
            "--stories",
            &format!("{A1},{B1},{A2}"),
        ],
        3,
    );
    assert_eq!(report["end"], "paused", "{report:#}\n{}", run.stderr);
    let stories = report["stories"].as_array().expect("stories");
    let by_key = |k: &str| {
        stories
            .iter()
            .find(|st| st["key"] == k)
            .unwrap_or_else(|| panic!("{k} not in {report:#}"))
    };
    // One of the first two merged; the other escalated with its branch and worktree kept.
    let (merged, stuck_key) = if by_key(A1)["final_status"] == "done" {
        (A1, B1)
    } else {
        (B1, A1)
    };
    assert_eq!(by_key(merged)["final_status"], "done", "{report:#}");
    let kept = by_key(stuck_key);
    assert_eq!(kept["final_status"], "review", "{report:#}");
    assert_eq!(kept["branch"], format!("baton/{stuck_key}"), "{report:#}");
    assert_eq!(kept["worktree"], format!(".baton/worktrees/{stuck_key}"));
    // `1-2` waited for `1-1` only: it finished if `1-1` merged, and was never started otherwise.
    if merged == A1 {
        assert_eq!(by_key(A2)["final_status"], "done", "{report:#}");
    } else {
        assert_eq!(by_key(A2)["final_status"], "backlog", "{report:#}");
    }

    // The escalation offers retry, hand over, set aside.
    let open = super::sprint::open_escalations(&p);
    assert_eq!(open.len(), 1, "{open:#?}");
    assert_eq!(open[0]["kind"], "merge-conflict");
    assert_eq!(open[0]["key"], stuck_key);
    let options: Vec<&str> = open[0]["choices"]
        .as_array()
        .expect("choices")
        .iter()
        .map(|c| c["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(options, ["retry-merge", "hand-over", "set-aside"]);

    // The branch survives with its commits, and the base never got its work.
    let branch = format!("baton/{stuck_key}");
    assert!(branches(&p).contains(&branch), "{:?}", branches(&p));
    let own = git(
        p.root(),
        &["log", "--format=%s", &format!("main..{branch}")],
    );
    assert!(
        own.contains(&format!("story({}): dev", short(stuck_key))),
        "{own}"
    );
    let shared = std::fs::read_to_string(p.root().join(SHARED)).expect("shared");
    assert_eq!(shared, format!("the product, by {merged}\n"));
    assert!(!shared.contains("<<<<<<<"));
    // The rebase was aborted: the kept worktree is on its branch, not stopped mid-rebase.
    let wt = p.root().join(format!(".baton/worktrees/{stuck_key}"));
    let head = git(&wt, &["symbolic-ref", "--short", "HEAD"]);
    assert_eq!(head.trim(), branch);

    // `baton status` shows it in flight, kept in its worktree.
    let status =
        super::common::parse_json(&super::sprint::baton(&p, &["status", "--json"]).expect_code(0));
    let flying = status["in_flight"].as_array().expect("in_flight");
    assert_eq!(flying.len(), 1, "{status:#}");
    assert_eq!(flying[0]["key"], stuck_key);
    assert_eq!(flying[0]["phase"], "kept");
    assert_eq!(flying[0]["branch"], branch);
    assert_eq!(
        flying[0]["worktree"],
        format!(".baton/worktrees/{stuck_key}")
    );
    let plain = super::sprint::baton(&p, &["status"]).expect_code(0);
    assert!(
        plain
            .stdout
            .contains(&format!("{stuck_key}: kept: not merged · {branch}")),
        "{}",
        plain.stdout
    );

    // Handing it over: needs-intervention, branch and worktree still kept.
    let id = open[0]["id"].as_i64().expect("id").to_string();
    super::sprint::baton(&p, &["answer", &id, "hand-over"]).expect_code(0);
    let (_, again, run) = sprint_json(
        &p,
        &["--yolo", "--parallel", "2", "--stories", stuck_key],
        1,
    );
    assert_eq!(
        statuses(&p)[stuck_key],
        "needs-intervention",
        "{again:#}\n{}",
        run.stderr
    );
    assert!(branches(&p).contains(&branch));
    assert!(wt.is_dir());
}

/// Rounds of the parallel kill test (each kills one or two runs at random instants).
const KILL_ROUNDS: u64 = 8;
const KILL_SEED: u64 = 0xBA70_9A2A_11E1_0002;

/// The four stories straight through, a slow reviewer so that kills land with two in flight.
fn straight_four() -> Script {
    let mut script = Script::new();
    for key in FOUR {
        script = script.create(key).develop(key, true);
        script = script.raw(json!({
            "agent": "reviewer",
            "repeat": true,
            "match": re(&format!("Review story `{key}`, review round 1 (mode:")),
            "text": pass_verdict(&format!("{key} meets its criteria")),
            "delay_ms": 40,
        }));
    }
    script
}

fn files_under(p: &Project, dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p.root().join(dir))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn parallel_stories_killed_at_random_instants_resume_to_the_same_end() {
    let script = straight_four();
    let args = ["--yolo", "--parallel", "2", "--batch", "4"];
    let reference = project(&script, "");
    let started = std::time::Instant::now();
    sprint_json(&reference, &args, 0);
    let span = u64::try_from(started.elapsed().as_millis())
        .unwrap_or(u64::MAX)
        .max(50);
    let ref_subjects = subjects(&reference);
    let ref_src = files_under(&reference, "src");
    let ref_stories = files_under(&reference, STORIES);

    let mut killed_mid_run = 0;
    for round in 0..KILL_ROUNDS {
        let seed = KILL_SEED ^ round;
        let mut rng = super::common::Rng::new(seed);
        let p = project(&script, "");
        let mut attempts = Vec::new();
        for _ in 0..1 + rng.below(2) {
            let mut cmd_args = vec!["sprint", "--json"];
            cmd_args.extend(args);
            let mut child = super::sprint::command(&p, &cmd_args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("spawn baton");
            let delay = rng.below(span + 1);
            std::thread::sleep(std::time::Duration::from_millis(delay));
            let finished = child.try_wait().expect("try_wait").is_some();
            let _ = child.kill(); // SIGKILL
            let status = child.wait().expect("reap");
            killed_mid_run += usize::from(!finished);
            attempts.push(format!("kill after {delay} ms: {status}"));
        }
        // A plain `baton sprint` resumes, with the stories in their worktrees.
        let mut sprint = vec!["sprint"];
        sprint.extend(args);
        let mut last = None;
        for _ in 0..6 {
            let run = super::sprint::baton(&p, &sprint);
            attempts.push(format!("resume: {:?}", run.code));
            let ok = run.code == Some(0);
            last = Some(run);
            if ok {
                break;
            }
        }
        let ctx = format!("round {round} (seed {seed:#x}) {attempts:?}");
        let last = last.expect("a resume");
        assert_eq!(last.code, Some(0), "{ctx}\n{}", last.describe());

        // Every story done, each transition journaled exactly once, nothing pending.
        let st = statuses(&p);
        for key in FOUR {
            assert_eq!(st[key], "done", "{ctx}");
            assert_eq!(
                transitions(&p, key),
                pairs(&STRAIGHT),
                "{ctx}: journal of {key}"
            );
        }
        let pending: Vec<_> = p
            .all_events()
            .into_iter()
            .filter(|e| e["state"] == "pending")
            .collect();
        assert!(pending.is_empty(), "{ctx}: {pending:#?}");
        // No worktree, branch or lock left behind.
        assert_eq!(dirty(&p), Vec::<String>::new(), "{ctx}");
        assert_eq!(worktrees(&p), 1, "{ctx}");
        assert_eq!(branches(&p), ["main"], "{ctx}");
        assert!(files_under(&p, ".baton/worktrees").is_empty(), "{ctx}");
        assert!(files_under(&p, ".git/worktrees").is_empty(), "{ctx}");
        assert!(!p.root().join(".git/index.lock").exists(), "{ctx}");
        // The same tree and the same story commits as the uninterrupted run.
        assert_eq!(files_under(&p, "src"), ref_src, "{ctx}");
        assert_eq!(files_under(&p, STORIES), ref_stories, "{ctx}");
        let got = subjects(&p);
        for key in FOUR {
            assert_eq!(
                story_subjects(&got, key),
                story_subjects(&ref_subjects, key),
                "{ctx}"
            );
        }
        super::sprint::baton(&p, &["status", "--validate"]).expect_code(0);
    }
    assert!(
        killed_mid_run * 2 >= usize::try_from(KILL_ROUNDS).unwrap_or(usize::MAX),
        "only {killed_mid_run} kills interrupted a run"
    );
}

#[test]
fn an_agent_in_a_worktree_cannot_write_the_sprint_file_baton_toml_or_baton_state() {
    let sprint = format!("{STORIES}/sprint-status.yaml");
    // The developer of `1-1` tries every route it has: its worktree's copies, the main tree's
    // through `..` and by absolute path, and the shell.
    let probe = |p: &Project| {
        let root = p.root().display().to_string();
        let mut calls = Vec::new();
        for path in [
            sprint.clone(),
            "baton.toml".to_owned(),
            ".baton/baton.db".to_owned(),
            "../../../baton.toml".to_owned(),
            format!("../../../{sprint}"),
            format!("{root}/baton.toml"),
            format!("{root}/{sprint}"),
            format!("{root}/.baton/worktrees/{A1}/baton.toml"),
        ] {
            calls.push(call(
                "write_file",
                json!({ "path": path, "content": "tampered\n" }),
            ));
        }
        for line in [
            "echo tampered > baton.toml",
            "echo tampered > ../../../baton.toml",
            "cd ../../.. && echo tampered > baton.toml",
        ] {
            calls.push(call(
                "run_command",
                json!({ "program": "sh", "args": ["-c", line] }),
            ));
        }
        calls
    };
    let placeholder = Project::empty();
    let mut script = Script::new().turn(
        "developer",
        &re(&format!("Implement story `{A1}` (mode: dev)")),
        "Trying the protected files first.",
        probe(&placeholder),
    );
    // Refused everywhere, it does the story's work.
    let dev = Script::new().develop(A1, true);
    let mut work = dev.turns[0].clone();
    work["match"] = json!("^refused: ");
    script = script.raw(work).raw(dev.turns[1].clone()).create(A1);
    script = review_pass(script, A1);
    // The project's own root is only known once it exists: rebuild the script there.
    let p = project(&script, "");
    let mut turns = script.turns.clone();
    turns[0]["tool_calls"] = json!(probe(&p));
    // After the probe, the ordinary dev turns follow (the probe turn answers once).
    turns[0]["repeat"] = json!(false);
    Script { turns }.install(&p);
    let toml_before = std::fs::read_to_string(p.root().join("baton.toml")).expect("toml");
    let sprint_before = std::fs::read_to_string(p.root().join(&sprint)).expect("sprint");
    let (events, report, run) = sprint_json(&p, &["--yolo", "--parallel", "2", "--stories", A1], 0);
    assert_eq!(report["end"], "completed", "{report:#}\n{}", run.stderr);
    let refused: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "refused")
        .map(|e| s(e, "reason"))
        .collect();
    assert_eq!(refused.len(), 11, "{refused:#?}");
    assert_eq!(
        std::fs::read_to_string(p.root().join("baton.toml")).expect("toml"),
        toml_before
    );
    let sprint_after = std::fs::read_to_string(p.root().join(&sprint)).expect("sprint");
    assert!(!sprint_after.contains("tampered"), "{sprint_after}");
    assert_ne!(
        sprint_after, sprint_before,
        "the orchestrator's own moves are written"
    );
    assert_eq!(statuses(&p)[A1], "done");
    // Nothing the probe wrote reached the base branch.
    let history = git(p.root(), &["log", "-p", "--format=%s"]);
    assert!(
        !history.contains("tampered"),
        "tampered content was committed"
    );
}

#[test]
fn standard_mode_shows_the_projected_cost_and_asks_before_starting_stories_in_parallel() {
    let mut script = Script::new();
    for key in [A1, B1] {
        script = review_pass(script.create(key).develop(key, true), key);
    }
    let p = project(&script, "");
    p.write(
        "baton.toml",
        &format!(
            "{}\n[budget]\nwarn_usd = 1.0\nhard_usd = 2.0\n",
            std::fs::read_to_string(p.root().join("baton.toml")).expect("toml")
        ),
    );
    git(p.root(), &["commit", "-qam", "budget"]);
    // No terminal to answer at: nothing starts, and the user is told how to go on.
    let run = super::sprint::baton(
        &p,
        &[
            "sprint",
            "--parallel",
            "2",
            "--stories",
            &format!("{A1},{B1}"),
        ],
    );
    assert_eq!(run.code, Some(3), "{}", run.describe());
    assert!(
        run.stderr.contains("projected cost: 2 stories at once"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("warning line $1, hard limit $2"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("pass --yolo"), "{}", run.stderr);
    assert_eq!(statuses(&p)[A1], "backlog");
    assert_eq!(branches(&p), ["main"]);
    // With --yolo it goes on: no story finished before, so nothing crosses the hard limit.
    let (_, report, _) = both_at_once(&p, 0);
    assert_eq!(report["completed"], 2, "{report:#}");
}

#[test]
fn with_qa_on_a_story_is_merged_before_qa_and_its_verified_commit_goes_through_the_lane() {
    let mut script = Script::new();
    for key in [A1, B1] {
        script = review_pass(script.create(key).develop(key, true), key)
            .turn(
                "qa",
                &re(&format!(
                    "Verify story `{key}`, review round 1 (mode: verify)"
                )),
                "Running it end to end.",
                vec![call(
                    "run_command",
                    json!({ "program": "echo", "args": [format!("checked-{key}")] }),
                )],
            )
            .turn(
                "qa",
                &re(&format!("checked-{key}")),
                &pass_verdict(&format!("{key} works end to end")),
                vec![],
            );
    }
    let p = project(&script, "qa = true");
    let (events, report, run) = both_at_once(&p, 0);
    assert_eq!(report["completed"], 2, "{report:#}\n{}", run.stderr);
    for key in [A1, B1] {
        // Merged twice: after the review (QA runs on the merged code), and after QA.
        let merged: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, e)| e["event"] == "merge" && e["key"] == key && e["phase"] == "merged")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(merged.len(), 2, "{key}");
        let qa_stage = events
            .iter()
            .position(|e| e["event"] == "stage" && e["key"] == key && e["stage"] == "verify")
            .expect("a verify stage");
        assert!(merged[0] < qa_stage && qa_stage < merged[1], "{key}");
        assert_eq!(
            transitions(&p, key),
            pairs(&[
                ("backlog", "ready-for-dev"),
                ("ready-for-dev", "in-progress"),
                ("in-progress", "review"),
                ("review", "e2e-verify"),
                ("e2e-verify", "done"),
            ])
        );
        let want: Vec<String> = ["create", "dev", "review passed", "verified"]
            .iter()
            .map(|w| format!("story({}): {w}", short(key)))
            .collect();
        assert_eq!(story_subjects(&subjects(&p), key), want);
    }
    assert_eq!(dirty(&p), Vec::<String>::new());
    assert_eq!(branches(&p), ["main"]);
    assert_eq!(worktrees(&p), 1);
}

#[test]
fn setting_an_unmergeable_branch_aside_keeps_it_renamed_and_starts_the_story_over() {
    let p = project(&unresolvable(), "max_review_rounds = 1");
    let (_, report, _) = both_at_once(&p, 3);
    let open = super::sprint::open_escalations(&p);
    assert_eq!(open.len(), 1, "{report:#}");
    let key = s(&open[0], "key").to_owned();
    let id = open[0]["id"].as_i64().expect("id");
    let before = git(p.root(), &["rev-parse", &format!("baton/{key}")]);
    super::sprint::baton(&p, &["answer", &id.to_string(), "set-aside"]).expect_code(0);
    let (_, again, run) = sprint_json(&p, &["--yolo", "--parallel", "2", "--stories", &key], 1);
    assert!(
        s(&again["stories"][0], "error").contains("starts over on the next run"),
        "{again:#}\n{}",
        run.stderr
    );
    // The branch is kept under a new name, with the same commits; the worktree is gone.
    let aside = format!("baton/{key}-set-aside-{id}");
    assert!(branches(&p).contains(&aside), "{:?}", branches(&p));
    assert_eq!(git(p.root(), &["rev-parse", &aside]), before);
    assert!(!branches(&p).contains(&format!("baton/{key}")));
    assert!(!p.root().join(format!(".baton/worktrees/{key}")).exists());
    assert_eq!(statuses(&p)[key.as_str()], "backlog");
    assert!(super::sprint::open_escalations(&p).is_empty());
}

#[test]
fn tests_that_fail_on_the_updated_branch_get_a_merge_fix_round_committed_as_such() {
    // Each story alone passes; together they need a reconciling change the test command checks.
    let test = r#"test_command = ["sh", "-c", "test -f tests-pass && { [ ! -f src/a-feature ] || [ ! -f src/b-feature ] || [ -f reconciled ]; }"]"#;
    let mut script = Script::new();
    for (key, feature) in [(A1, "src/a-feature"), (B1, "src/b-feature")] {
        let dev = Script::new().develop(key, true);
        let mut first = dev.turns[0].clone();
        if let Some(calls) = first["tool_calls"].as_array_mut() {
            calls.push(call(
                "write_file",
                json!({ "path": feature, "content": "on\n" }),
            ));
        }
        script = script.create(key).raw(first).raw(dev.turns[1].clone());
        script = review_pass(script, key).turn(
            "developer",
            &re(&format!(
                "Fix story `{key}` after its merge update, merge fix round 1 (mode: merge)"
            )),
            "Reconciling both features.",
            vec![call(
                "write_file",
                json!({ "path": "reconciled", "content": "both\n" }),
            )],
        );
    }
    script = script.turn(
        "developer",
        &format!("^wrote [0-9]+ bytes to {}", re("`reconciled`")),
        "Reconciled.",
        vec![],
    );
    let p = project(&script, "");
    let toml = std::fs::read_to_string(p.root().join("baton.toml")).expect("toml");
    p.write(
        "baton.toml",
        &toml.replace(r#"test_command = ["cat", "tests-pass"]"#, test),
    );
    git(
        p.root(),
        &[
            "commit",
            "-qam",
            "a test command that needs both features reconciled",
        ],
    );
    // A shell test command is the project's own choice: trusted, not narrowed away.
    super::sprint::baton(&p, &["trust"]).expect_code(0);
    let (events, report, run) = both_at_once(&p, 0);
    assert_eq!(report["completed"], 2, "{report:#}\n{}", run.stderr);
    let failed: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "tests" && e["passed"] == false)
        .map(|e| s(e, "key"))
        .collect();
    assert_eq!(
        failed.len(),
        1,
        "one failing test run on an updated branch: {failed:?}"
    );
    let second = failed[0];
    let all = subjects(&p);
    let want: Vec<String> = ["create", "dev", "review passed", "merge fix round 1"]
        .iter()
        .map(|w| format!("story({}): {w}", short(second)))
        .collect();
    assert_eq!(story_subjects(&all, second), want, "{all:?}");
    assert!(p.root().join("reconciled").is_file());
    assert_eq!(branches(&p), ["main"]);
}

#[test]
fn ctrl_c_cancels_every_story_in_flight_and_the_next_run_resumes_them_in_their_worktrees() {
    use std::os::unix::process::CommandExt;
    // Both reviewers take far longer than the test waits: Ctrl-C lands with two in flight.
    let stalled = |key: &str| {
        json!({
            "agent": "reviewer", "repeat": true,
            "match": re(&format!("Review story `{key}`, review round 1 (mode:")),
            "text": pass_verdict("late"), "delay_ms": 600_000,
        })
    };
    let mut script = Script::new();
    for key in [A1, B1] {
        script = script.create(key).develop(key, true).raw(stalled(key));
    }
    let p = project(&script, "");
    let stories = format!("{A1},{B1}");
    let mut cmd = super::sprint::command(
        &p,
        &["sprint", "--yolo", "--parallel", "2", "--stories", &stories],
    );
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let mut child = cmd.spawn().expect("spawn baton");
    let started = std::time::Instant::now();
    loop {
        let st = statuses(&p);
        if st[A1] == "review" && st[B1] == "review" {
            break;
        }
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "the run ended before both stories were in review"
        );
        assert!(
            started.elapsed() < super::sprint::HANG_GUARD,
            "never both in review"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let ok = std::process::Command::new("kill")
        .args(["-s", "INT", "--", &format!("-{}", child.id())])
        .status()
        .expect("kill(1)")
        .success();
    assert!(ok, "could not signal the process group");
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        assert!(
            t.elapsed() < super::sprint::HANG_GUARD,
            "Ctrl-C did not stop the run"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(1), "a cancelled run exits 1");
    // Both stopped where they were, each in its worktree.
    let st = statuses(&p);
    assert_eq!((st[A1].as_str(), st[B1].as_str()), ("review", "review"));
    assert_eq!(worktrees(&p), 3);
    assert_eq!(
        branches(&p),
        [
            format!("baton/{A1}"),
            format!("baton/{B1}"),
            "main".to_owned()
        ]
    );
    // With reviewers that answer, the next run finishes both from there.
    let mut fast = Script::new();
    for key in [A1, B1] {
        fast = review_pass(fast, key);
    }
    fast.install(&p);
    let (_, report, run) = both_at_once(&p, 0);
    assert_eq!(report["completed"], 2, "{report:#}\n{}", run.stderr);
    for key in [A1, B1] {
        assert_eq!(transitions(&p, key), pairs(&STRAIGHT), "journal of {key}");
    }
    assert_eq!(branches(&p), ["main"]);
    assert_eq!(worktrees(&p), 1);
    assert_eq!(dirty(&p), Vec::<String>::new());
}
