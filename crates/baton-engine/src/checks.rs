//! Checks the orchestrator makes itself instead of trusting an agent: running the project's test
//! command, and comparing a story's File List with what git says changed.

use baton_agent::process::GroupKiller;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// What a test run says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestVerdict {
    /// The command exited 0.
    Passed,
    /// It exited non-zero, could not start, or timed out.
    Failed,
    /// It was interrupted (cancellation, or a signal from outside): no verdict either way.
    Interrupted,
}

/// The result of one test run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// What it says.
    pub verdict: TestVerdict,
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// The end of its combined output.
    pub output_tail: String,
}

impl TestRun {
    /// Whether the tests passed.
    pub fn passed(&self) -> bool {
        self.verdict == TestVerdict::Passed
    }
}

const TAIL: usize = 6000;

fn tail(s: &str) -> String {
    if s.len() <= TAIL {
        return s.to_owned();
    }
    let mut start = s.len() - TAIL;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("[… {start} bytes omitted …]\n{}", &s[start..])
}

/// How the project's tests are run: the command (program + arguments, no shell), its timeout,
/// and the variables removed from its environment (the providers' keys: the tests are code an
/// agent wrote).
#[derive(Debug, Clone, Default)]
pub struct TestCommand {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Timeout.
    pub timeout: Duration,
    /// Variables removed from its environment.
    pub env_remove: Vec<String>,
}

/// Runs the tests in `root`, in a process group of their own (a terminal's Ctrl-C reaches baton,
/// not them); cancelling `cancel` kills the group and makes the run [`TestVerdict::Interrupted`].
pub async fn run_tests(root: &Path, test: &TestCommand, cancel: &CancellationToken) -> TestRun {
    let Some((program, args)) = test.argv.split_first() else {
        return TestRun {
            verdict: TestVerdict::Passed,
            code: Some(0),
            output_tail: "no test command configured".into(),
        };
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for var in &test.env_remove {
        cmd.env_remove(var);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return TestRun {
                verdict: TestVerdict::Failed,
                code: None,
                output_tail: format!("cannot run `{program}`: {e}"),
            };
        }
    };
    let mut group = GroupKiller::new(child.id());
    let ended = tokio::select! {
        out = child.wait_with_output() => Some(out),
        () = tokio::time::sleep(test.timeout) => None,
        () = cancel.cancelled() => {
            group.kill();
            return TestRun {
                verdict: TestVerdict::Interrupted,
                code: None,
                output_tail: "the test run was interrupted".into(),
            };
        }
    };
    let out = match ended {
        None => {
            group.kill();
            return TestRun {
                verdict: TestVerdict::Failed,
                code: None,
                output_tail: format!(
                    "the test command timed out after {} s",
                    test.timeout.as_secs()
                ),
            };
        }
        Some(Err(e)) => {
            return TestRun {
                verdict: TestVerdict::Failed,
                code: None,
                output_tail: format!("cannot run `{program}`: {e}"),
            };
        }
        Some(Ok(out)) => out,
    };
    group.disarm();
    let mut all = String::from_utf8_lossy(&out.stdout).into_owned();
    all.push_str(&String::from_utf8_lossy(&out.stderr));
    let verdict = if out.status.success() {
        TestVerdict::Passed
    } else if killed_by_interrupt(&out.status) || cancel.is_cancelled() {
        TestVerdict::Interrupted
    } else {
        TestVerdict::Failed
    };
    TestRun {
        verdict,
        code: out.status.code(),
        output_tail: tail(&all),
    }
}

/// Whether a signal that means "stop", not "fail", ended the run (SIGINT, SIGTERM, SIGHUP).
fn killed_by_interrupt(status: &std::process::ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        matches!(status.signal(), Some(1 | 2 | 15))
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        false
    }
}

/// Differences between a story's File List and the files git says changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileListCheck {
    /// Changed per git but missing from the File List.
    pub unlisted: Vec<String>,
    /// Listed but not changed per git.
    pub unchanged: Vec<String>,
}

/// Compares the File List with git's changed files (story and sprint files excluded).
pub fn compare_file_list(listed: &[String], changed: &[String]) -> FileListCheck {
    let norm = |s: &String| s.trim().trim_start_matches("./").to_owned();
    let listed: Vec<String> = listed.iter().map(norm).collect();
    let changed: Vec<String> = changed
        .iter()
        .map(norm)
        .filter(|p| !p.starts_with("_bmad-output/") && !p.starts_with(".baton/"))
        .collect();
    FileListCheck {
        unlisted: changed
            .iter()
            .filter(|c| !listed.contains(c))
            .cloned()
            .collect(),
        unchanged: listed
            .iter()
            .filter(|l| !changed.contains(l))
            .cloned()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_list_differences_both_ways() {
        let check = compare_file_list(
            &["src/a.rs".into(), "./src/b.rs".into()],
            &[
                "src/a.rs".into(),
                "src/c.rs".into(),
                "_bmad-output/x.md".into(),
            ],
        );
        assert_eq!(check.unlisted, ["src/c.rs"]);
        assert_eq!(check.unchanged, ["src/b.rs"]);
    }

    fn cmd(argv: &[&str]) -> TestCommand {
        TestCommand {
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            timeout: Duration::from_secs(20),
            env_remove: vec!["BATON_TEST_SECRET".into()],
        }
    }

    #[tokio::test]
    async fn test_runs_report_exit_and_output() {
        let dir = tempfile::tempdir().unwrap();
        let never = CancellationToken::new();
        let ok = run_tests(dir.path(), &cmd(&["true"]), &never).await;
        assert!(ok.passed());
        let bad = run_tests(dir.path(), &cmd(&["ls", "no-such-file"]), &never).await;
        assert_eq!(bad.verdict, TestVerdict::Failed);
        assert!(bad.output_tail.contains("no-such-file"));
    }

    #[tokio::test]
    async fn an_interrupted_run_is_no_verdict_and_secrets_do_not_reach_it() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            c.cancel();
        });
        let run = run_tests(dir.path(), &cmd(&["sleep", "30"]), &cancel).await;
        assert_eq!(run.verdict, TestVerdict::Interrupted);
        // A run killed by SIGINT from outside is an interruption too.
        let int = run_tests(
            dir.path(),
            &cmd(&["sh", "-c", "kill -INT $$; sleep 5"]),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(int.verdict, TestVerdict::Interrupted);
        let env = run_tests(
            dir.path(),
            &TestCommand {
                env_remove: vec!["PATH_TEST_UNUSED".into(), "HOME".into()],
                ..cmd(&["sh", "-c", "test -z \"$HOME\""])
            },
            &CancellationToken::new(),
        )
        .await;
        assert!(env.passed(), "HOME reached the tests: {}", env.output_tail);
    }
}
