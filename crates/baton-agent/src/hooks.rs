//! Running one hook a BMad skill declares ([`baton_core::autopilot::hooks`]): without a shell,
//! in the project, with a scrubbed environment, a time limit, and capped output.
//!
//! The program is a bare name looked up on `PATH`, or a relative path inside the project (an
//! absolute path or one with `..` is refused: a skill's files come with the repository). The
//! child sees only `PATH`, `HOME` and the pairs the caller gives, never baton's secrets. It gets
//! the event as JSON on stdin and runs in its own process group, killed whole at the time limit.
//! Of its output, [`STDOUT_CAP`] of stdout and [`STDERR_CAP`] of stderr are kept; the rest is
//! read and counted (so the child never blocks on a full pipe) and dropped. A [`StepBudget`]
//! caps what all hooks of one step keep together.

use crate::process::GroupKiller;
use baton_core::autopilot::hooks::Hook;
use std::io::{Read, Write};
use std::path::{Component, Path};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Stdout kept per hook.
pub const STDOUT_CAP: usize = 64 * 1024;
/// Stderr kept per hook.
pub const STDERR_CAP: usize = 16 * 1024;
/// Output kept per step, all hooks together.
pub const STEP_CAP: usize = 256 * 1024;

/// How a hook ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookRun {
    /// Its exit code (`None`: killed or never started).
    pub exit: Option<i32>,
    /// Whether the time limit killed it.
    pub timed_out: bool,
    /// Stdout kept.
    pub stdout: String,
    /// Stderr kept.
    pub stderr: String,
    /// Stdout bytes dropped past the cap.
    pub stdout_dropped: u64,
    /// Stderr bytes dropped past the cap.
    pub stderr_dropped: u64,
    /// Why it could not start.
    pub error: Option<String>,
}

impl HookRun {
    /// Whether it failed: could not start, timed out, or exited non-zero.
    pub fn failed(&self) -> bool {
        self.error.is_some() || self.timed_out || self.exit != Some(0)
    }
}

fn reader<R: Read + Send + 'static>(
    mut r: R,
    cap: usize,
) -> std::thread::JoinHandle<(Vec<u8>, u64)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut dropped = 0u64;
        let mut buf = [0u8; 8192];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            let room = cap.saturating_sub(kept.len()).min(n);
            kept.extend_from_slice(&buf[..room]);
            dropped += (n - room) as u64;
        }
        (kept, dropped)
    })
}

fn check_program(program: &str) -> Result<(), String> {
    let p = Path::new(program);
    if p.is_absolute() {
        return Err(format!("`{program}`: an absolute program path is refused"));
    }
    if p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!(
            "`{program}`: a program path may not leave the project"
        ));
    }
    Ok(())
}

/// Runs `hook` in `cwd` with only `PATH`, `HOME` and `env` set, `stdin_json` on its stdin.
pub fn run(hook: &Hook, cwd: &Path, env: &[(String, String)], stdin_json: &str) -> HookRun {
    let mut out = HookRun::default();
    let Some(program) = hook.argv.first() else {
        out.error = Some("the command is empty".into());
        return out;
    };
    if let Err(e) = check_program(program) {
        out.error = Some(e);
        return out;
    }
    let program = if program.contains('/') {
        cwd.join(program).display().to_string()
    } else {
        program.clone()
    };
    let mut cmd = Command::new(&program);
    cmd.args(&hook.argv[1..])
        .current_dir(cwd)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for k in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(format!("`{program}` could not start: {e}"));
            return out;
        }
    };
    let mut killer = GroupKiller::new(Some(child.id()));
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(stdin_json.as_bytes());
    }
    let so = child.stdout.take().map(|s| reader(s, STDOUT_CAP));
    let se = child.stderr.take().map(|s| reader(s, STDERR_CAP));
    let deadline = Instant::now() + Duration::from_secs(hook.timeout_secs.max(1));
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                out.exit = status.code();
                break;
            }
            Ok(None) if Instant::now() >= deadline => {
                out.timed_out = true;
                killer.kill();
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                out.error = Some(e.to_string());
                break;
            }
        }
    }
    // Whatever the hook started and left holding the pipes goes with its group.
    killer.kill();
    if let Some(h) = so
        && let Ok((kept, dropped)) = h.join()
    {
        out.stdout = String::from_utf8_lossy(&kept).into_owned();
        out.stdout_dropped = dropped;
    }
    if let Some(h) = se
        && let Ok((kept, dropped)) = h.join()
    {
        out.stderr = String::from_utf8_lossy(&kept).into_owned();
        out.stderr_dropped = dropped;
    }
    out
}

/// What all hooks of one step may keep together ([`STEP_CAP`]).
#[derive(Debug, Clone, Default)]
pub struct StepBudget {
    used: usize,
    /// Bytes dropped past the step's cap.
    pub dropped: u64,
}

impl StepBudget {
    /// Keeps what of `run`'s output still fits the step, dropping (and counting) the rest.
    pub fn take(&mut self, run: &mut HookRun) {
        for s in [&mut run.stdout, &mut run.stderr] {
            let room = STEP_CAP.saturating_sub(self.used);
            if s.len() > room {
                let mut cut = room;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                self.dropped += (s.len() - cut) as u64;
                s.truncate(cut);
            }
            self.used += s.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::autopilot::hooks::Event;

    fn hook(argv: &[&str], timeout: u64) -> Hook {
        Hook {
            event: Event::Stop,
            matcher: None,
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            critical: false,
            once: false,
            timeout_secs: timeout,
        }
    }

    #[test]
    fn output_is_capped_and_the_rest_counted() {
        let dir = tempfile::tempdir().unwrap();
        let h = hook(
            &[
                "sh",
                "-c",
                "head -c 1048576 /dev/zero | tr '\\0' a; head -c 102400 /dev/zero | tr '\\0' b >&2",
            ],
            30,
        );
        let r = run(&h, dir.path(), &[], "{}");
        assert_eq!(r.exit, Some(0), "{r:?}");
        assert_eq!(r.stdout.len(), STDOUT_CAP);
        assert_eq!(r.stdout_dropped, 1_048_576 - STDOUT_CAP as u64);
        assert_eq!(r.stderr.len(), STDERR_CAP);
        assert_eq!(r.stderr_dropped, 102_400 - STDERR_CAP as u64);
        let mut budget = StepBudget::default();
        for _ in 0..4 {
            let mut again = r.clone();
            budget.take(&mut again);
        }
        // 4 × 80 KiB kept would be 320 KiB: the step keeps 256 KiB.
        assert_eq!(
            budget.dropped,
            4 * (STDOUT_CAP + STDERR_CAP) as u64 - STEP_CAP as u64
        );
    }

    #[test]
    fn the_time_limit_kills_the_hook_and_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("late");
        let h = hook(
            &[
                "sh",
                "-c",
                &format!("(sleep 3; touch {}) & sleep 30", marker.display()),
            ],
            1,
        );
        let r = run(&h, dir.path(), &[], "{}");
        assert!(r.timed_out && r.failed(), "{r:?}");
        std::thread::sleep(Duration::from_millis(3500));
        assert!(!marker.exists(), "the group was killed");
    }

    #[test]
    fn no_shell_no_secrets_no_escape() {
        let dir = tempfile::tempdir().unwrap();
        // The test runner's own environment (cargo sets this) stands in for a secret.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let r = run(
            &hook(
                &["sh", "-c", "echo \"[$CARGO_MANIFEST_DIR][$GIVEN]\"; cat"],
                10,
            ),
            dir.path(),
            &[("GIVEN".into(), "1".into())],
            "{\"a\":1}",
        );
        assert_eq!(r.stdout, "[][1]\n{\"a\":1}", "{r:?}");
        let r = run(
            &hook(&["echo", "$(touch pwned); x"], 10),
            dir.path(),
            &[],
            "",
        );
        assert_eq!(r.stdout, "$(touch pwned); x\n");
        assert!(!dir.path().join("pwned").exists());
        assert!(
            run(&hook(&["../x"], 10), dir.path(), &[], "")
                .error
                .is_some()
        );
        assert!(
            run(&hook(&["/bin/true"], 10), dir.path(), &[], "")
                .error
                .is_some()
        );
        assert!(run(&hook(&["false"], 10), dir.path(), &[], "").failed());
        assert!(!run(&hook(&["true"], 10), dir.path(), &[], "").failed());
    }
}
