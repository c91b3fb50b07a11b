//! The PM pass's own overhead: `baton pm` (the release binary) against the fake GitHub on
//! loopback, over `N` issues (`BATON_PM_ISSUES`, default 10, 50 and 200).
//!
//! For each N, a fresh project and a fresh fake with N new issues (Triage), then:
//! - the first pass, which routes every issue (status comment, labels, lock), and
//! - a quiet pass, with nothing to do (every issue waits for its analyst),
//!
//! each timed as a whole child process, with the requests it sent counted from the fake.
//! Printed: wall time, time per issue and requests per issue, for both passes; the per-issue
//! figures should stay flat as N grows (a pass reads each issue once, and nothing in it is
//! quadratic in the number of issues). The journal's durable writes are two per effect (its
//! begin and its end).
//!
//! Run with `cargo bench -p baton-cli --bench pm`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use baton_test_support::github::FakeGitHub;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@b")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@b")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

fn pass(baton: &Path, root: &Path, fake: &FakeGitHub) -> (f64, usize) {
    fake.clear_calls();
    let started = Instant::now();
    let out = Command::new(baton)
        .arg("pm")
        .current_dir(root)
        .env("GITHUB_TOKEN", "ghp_bench")
        .env("GITHUB_API_URL", fake.base_url())
        .env(
            "GITHUB_REPOSITORY",
            format!("{}/{}", fake.owner(), fake.repo()),
        )
        .env("BATON_CONFIG_DIR", root.join(".baton/no-user-config"))
        .env_remove("GITHUB_EVENT_NAME")
        .env_remove("GITHUB_EVENT_PATH")
        .output()
        .unwrap();
    let secs = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (secs, fake.calls().len())
}

fn main() {
    let baton = std::path::PathBuf::from(env!("CARGO_BIN_EXE_baton"));
    let sizes: Vec<usize> = std::env::var("BATON_PM_ISSUES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 50, 200]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    println!(
        "issues | first pass: s, ms/issue, requests/issue | quiet pass: s, ms/issue, requests/issue"
    );
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("baton.toml"),
            "[pipeline]\nlogin = \"baton-pm[bot]\"\nowner = \"acme\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".baton")).unwrap();
        std::fs::write(root.join(".baton/.gitignore"), "*\n").unwrap();
        git(root, &["init", "-q", "-b", "main"]);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "init"]);
        let fake = rt.block_on(FakeGitHub::start());
        for i in 0..n {
            fake.add_issue(&format!("Issue {i}"), "Something to build.", &[], "acme");
        }
        let (first, first_calls) = pass(&baton, root, &fake);
        let (quiet, quiet_calls) = pass(&baton, root, &fake);
        let per = |s: f64| s * 1000.0 / n as f64;
        println!(
            "{n:>6} | {first:.2}, {:.1}, {:.1} | {quiet:.2}, {:.1}, {:.1}",
            per(first),
            first_calls as f64 / n as f64,
            per(quiet),
            quiet_calls as f64 / n as f64
        );
    }
}
