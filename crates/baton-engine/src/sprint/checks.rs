//! Checks the orchestrator makes itself instead of trusting an agent: running the project's test
//! command, and comparing a story's File List with what git says changed.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

/// The result of one test run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// Whether the command exited 0.
    pub passed: bool,
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// The end of its combined output.
    pub output_tail: String,
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

/// Runs the test command (program + arguments, no shell) in `root`.
pub async fn run_tests(root: &Path, command: &[String], timeout: Duration) -> TestRun {
    let Some((program, args)) = command.split_first() else {
        return TestRun {
            passed: true,
            code: Some(0),
            output_tail: "no test command configured".into(),
        };
    };
    let child = Command::new(program)
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(timeout, child).await {
        Err(_) => TestRun {
            passed: false,
            code: None,
            output_tail: format!("the test command timed out after {} s", timeout.as_secs()),
        },
        Ok(Err(e)) => TestRun {
            passed: false,
            code: None,
            output_tail: format!("cannot run `{program}`: {e}"),
        },
        Ok(Ok(out)) => {
            let mut all = String::from_utf8_lossy(&out.stdout).into_owned();
            all.push_str(&String::from_utf8_lossy(&out.stderr));
            TestRun {
                passed: out.status.success(),
                code: out.status.code(),
                output_tail: tail(&all),
            }
        }
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

    #[tokio::test]
    async fn test_runs_report_exit_and_output() {
        let dir = tempfile::tempdir().unwrap();
        let ok = run_tests(dir.path(), &["true".into()], Duration::from_secs(10)).await;
        assert!(ok.passed);
        let bad = run_tests(
            dir.path(),
            &["ls".into(), "no-such-file".into()],
            Duration::from_secs(10),
        )
        .await;
        assert!(!bad.passed && bad.output_tail.contains("no-such-file"));
    }
}
