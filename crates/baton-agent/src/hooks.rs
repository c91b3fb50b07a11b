//! Running one hook a BMad skill or step file declares ([`baton_core::autopilot::hooks`]):
//! a program started without a shell, with a clean environment, a bounded time and bounded
//! output.
//!
//! The program is a bare name looked up on `PATH`, or a path relative to the working directory
//! that must stay inside it (links resolved); an absolute path or `..` is refused. The
//! environment is emptied but for `PATH`, `HOME` and the pairs the caller gives, so no key or
//! token baton holds reaches a hook. The hook reads `stdin_json` on its standard input. It runs in
//! a process group of its own, and at its timeout the whole group is killed, not just the first
//! process. Output is read to the end whatever its size, so a chatty hook never blocks on a full
//! pipe, but only the first 64 KiB of stdout and 16 KiB of stderr are kept; the rest is counted
//! and dropped, and a marker says so. [`StepBudget`] caps what all the hooks of one step keep
//! together at 256 KiB.
//!
//! [`run`] blocks; an async caller runs it on a blocking thread.

use crate::process::GroupKiller;
use baton_core::autopilot::hooks::Hook;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The stdout a hook keeps, in bytes.
pub const STDOUT_CAP: usize = 64 * 1024;

/// The stderr a hook keeps, in bytes.
pub const STDERR_CAP: usize = 16 * 1024;

/// The output all the hooks of one step keep together, in bytes.
pub const STEP_CAP: usize = 256 * 1024;

/// How long output is still read after the hook exits (or is killed) when something it started
/// keeps its stdout or stderr open.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What running a hook gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookRun {
    /// Its exit code; `None` when it was killed by a signal (a timeout) or never started.
    pub exit: Option<i32>,
    /// Whether it ran out of time (it and its process group were killed).
    pub timed_out: bool,
    /// Its stdout, at most [`STDOUT_CAP`] bytes of it, then a marker if more was dropped.
    pub stdout: String,
    /// Its stderr, at most [`STDERR_CAP`] bytes of it, then a marker if more was dropped.
    pub stderr: String,
    /// How many bytes of stdout were dropped.
    pub stdout_dropped: u64,
    /// How many bytes of stderr were dropped.
    pub stderr_dropped: u64,
    /// Why it could not be started (refused program, not found, bad environment).
    pub error: Option<String>,
}

impl HookRun {
    /// Whether it failed: not started, timed out, killed, or a non-zero exit.
    pub fn failed(&self) -> bool {
        self.error.is_some() || self.timed_out || self.exit != Some(0)
    }

    fn not_started(error: String) -> HookRun {
        HookRun {
            error: Some(error),
            ..HookRun::default()
        }
    }
}

/// The line appended to a stream when some of it was dropped.
fn marker(stream: &str, kept: usize, dropped: u64) -> String {
    format!(
        "\n[… {stream} truncated: {dropped} of {} bytes dropped …]",
        kept as u64 + dropped
    )
}

/// The part of a stream that is kept, and how much went by.
#[derive(Debug)]
struct Capture {
    kept: Vec<u8>,
    cap: usize,
    total: u64,
}

impl Capture {
    fn new(cap: usize) -> Capture {
        Capture {
            kept: Vec::new(),
            cap,
            total: 0,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let room = self.cap.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&chunk[..room.min(chunk.len())]);
        self.total += chunk.len() as u64;
    }

    /// The kept text (a character cut at the cap is dropped whole) and how much was dropped.
    fn finish(&self, stream: &str) -> (String, u64) {
        let mut len = self.kept.len();
        if self.total > len as u64 {
            len = char_start(&self.kept, len);
        }
        let mut text = String::from_utf8_lossy(&self.kept[..len]).into_owned();
        let dropped = self.total - len as u64;
        if dropped > 0 {
            text.push_str(&marker(stream, text.len(), dropped));
        }
        (text, dropped)
    }
}

/// The largest `n <= at` such that `bytes[..n]` does not end inside a UTF-8 character.
fn char_start(bytes: &[u8], at: usize) -> usize {
    let n = at.min(bytes.len());
    let mut i = n;
    while i > 0 && n - i < 3 && bytes[i - 1] & 0xC0 == 0x80 {
        i -= 1;
    }
    if i == 0 {
        return n;
    }
    let width = match bytes[i - 1] {
        b if b & 0xE0 == 0xC0 => 2,
        b if b & 0xF0 == 0xE0 => 3,
        b if b & 0xF8 == 0xF0 => 4,
        _ => 1,
    };
    if n - (i - 1) < width { i - 1 } else { n }
}

/// Where `program` is: a bare name is left to `PATH`; a path must be relative to `cwd`, free of
/// `..`, and resolve (links followed) to a file inside `cwd`.
pub fn resolve_program(program: &str, cwd: &Path) -> Result<PathBuf, String> {
    if program.trim().is_empty() {
        return Err("the program is empty".into());
    }
    if program.contains('\0') {
        return Err("the program name holds a NUL byte".into());
    }
    if !program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let path = Path::new(program);
    if path.is_absolute() {
        return Err(format!(
            "`{program}` refused: a hook's program is a name on PATH or a path inside the project, never absolute"
        ));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!("`{program}` refused: `..` is not allowed"));
    }
    let root = cwd.canonicalize().map_err(|e| {
        format!(
            "cannot resolve the hook's directory `{}`: {e}",
            cwd.display()
        )
    })?;
    let real = root
        .join(path)
        .canonicalize()
        .map_err(|e| format!("cannot run `{program}`: {e}"))?;
    if !real.starts_with(&root) {
        return Err(format!(
            "`{program}` refused: it leads outside the project (to `{}`)",
            real.display()
        ));
    }
    if !real.is_file() {
        return Err(format!("`{program}` is not a file"));
    }
    Ok(real)
}

/// Runs `hook` in `cwd` with only `PATH`, `HOME` and `env` in its environment, `stdin_json` on
/// its standard input, and its timeout. Blocks until it ends (or is killed at the timeout).
pub fn run(hook: &Hook, cwd: &Path, env: &[(String, String)], stdin_json: &str) -> HookRun {
    let Some((program, args)) = hook.argv.split_first() else {
        return HookRun::not_started("the hook's command is empty".into());
    };
    let executable = match resolve_program(program, cwd) {
        Ok(p) => p,
        Err(e) => return HookRun::not_started(e),
    };
    if let Some((k, _)) = env
        .iter()
        .find(|(k, v)| k.is_empty() || k.contains(['=', '\0']) || v.contains('\0'))
    {
        return HookRun::not_started(format!("the environment variable `{k}` cannot be set"));
    }

    let mut cmd = Command::new(&executable);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for key in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
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
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return HookRun::not_started(format!("cannot run `{program}`: program not found"));
        }
        Err(e) => return HookRun::not_started(format!("cannot run `{program}`: {e}")),
    };
    let mut group = GroupKiller::new(Some(child.id()));

    // Standard input on a thread of its own: a hook that reads nothing must not block baton.
    if let Some(mut stdin) = child.stdin.take() {
        let bytes = stdin_json.as_bytes().to_vec();
        let _ = std::thread::Builder::new()
            .name("baton-hook-stdin".into())
            .spawn(move || {
                let _ = stdin.write_all(&bytes);
            });
    }
    let out = Arc::new(Mutex::new(Capture::new(STDOUT_CAP)));
    let err = Arc::new(Mutex::new(Capture::new(STDERR_CAP)));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let mut readers = 0;
    if let Some(stdout) = child.stdout.take() {
        readers += spawn_reader(stdout, out.clone(), done_tx.clone());
    }
    if let Some(stderr) = child.stderr.take() {
        readers += spawn_reader(stderr, err.clone(), done_tx.clone());
    }
    drop(done_tx);

    let limit = Duration::from_secs(hook.timeout_secs.max(1));
    let status = wait_until(&mut child, Instant::now() + limit);
    let mut run = HookRun {
        timed_out: status.is_none(),
        ..HookRun::default()
    };
    let status = match status {
        Some(Ok(status)) => {
            if !drain(&done_rx, readers) {
                // Something it started still holds the output open: stop it.
                group.kill();
                drain(&done_rx, readers);
            }
            Some(status)
        }
        Some(Err(e)) => {
            group.kill();
            let _ = child.kill();
            let _ = child.wait();
            run.error = Some(format!("waiting for `{program}` failed: {e}"));
            None
        }
        None => {
            group.kill();
            let _ = child.kill();
            let status = child.wait().ok();
            drain(&done_rx, readers);
            status
        }
    };
    group.disarm();
    run.exit = status.and_then(|s: ExitStatus| s.code());
    let (stdout, stdout_dropped) = out
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .finish("stdout");
    let (stderr, stderr_dropped) = err
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .finish("stderr");
    run.stdout = stdout;
    run.stdout_dropped = stdout_dropped;
    run.stderr = stderr;
    run.stderr_dropped = stderr_dropped;
    run
}

/// Reads `from` to its end into `into` on a thread; returns 1 if the thread started.
fn spawn_reader(
    mut from: impl Read + Send + 'static,
    into: Arc<Mutex<Capture>>,
    done: mpsc::Sender<()>,
) -> usize {
    let started = std::thread::Builder::new()
        .name("baton-hook-output".into())
        .spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match from.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => into
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(&buf[..n]),
                }
            }
            let _ = done.send(());
        });
    usize::from(started.is_ok())
}

/// Waits for `readers` readers to reach the end of their stream, at most [`DRAIN_GRACE`];
/// returns whether they all did.
fn drain(done: &mpsc::Receiver<()>, readers: usize) -> bool {
    let until = Instant::now() + DRAIN_GRACE;
    for _ in 0..readers {
        let left = until.saturating_duration_since(Instant::now());
        if done.recv_timeout(left).is_err() {
            return false;
        }
    }
    true
}

/// Waits for the child until `deadline`: `Some(status)` when it ended, `None` at the deadline.
fn wait_until(
    child: &mut std::process::Child,
    deadline: Instant,
) -> Option<std::io::Result<ExitStatus>> {
    // Polled, so that baton keeps the child and can kill it; short first, then every 20 ms.
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(Ok(status)),
            Ok(None) => {}
            Err(e) => return Some(Err(e)),
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// What the hooks of one step may keep together: [`STEP_CAP`] bytes of output. Each run is
/// given to [`StepBudget::take`] as it ends; what exceeds the budget is trimmed from it (its
/// stdout first: stderr says why a hook failed) and counted.
#[derive(Debug, Clone)]
pub struct StepBudget {
    limit: usize,
    used: usize,
    dropped: u64,
}

impl Default for StepBudget {
    fn default() -> StepBudget {
        StepBudget::new(STEP_CAP)
    }
}

impl StepBudget {
    /// A budget of `limit` bytes ([`STEP_CAP`] for a step: use `StepBudget::default()`).
    pub fn new(limit: usize) -> StepBudget {
        StepBudget {
            limit,
            used: 0,
            dropped: 0,
        }
    }

    /// The bytes of output kept so far.
    pub fn used(&self) -> usize {
        self.used
    }

    /// The bytes of output this budget dropped so far (not counting what each hook's own caps
    /// dropped).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Counts `run`'s output against the budget, trimming what exceeds it (its markers and
    /// dropped counts are updated). Markers are not counted.
    pub fn take(&mut self, run: &mut HookRun) {
        let mut out = strip_marker(&run.stdout, "stdout", run.stdout_dropped);
        let mut err = strip_marker(&run.stderr, "stderr", run.stderr_dropped);
        let room = self.limit.saturating_sub(self.used);
        let keep_err = char_boundary(&err, err.len().min(room));
        let keep_out = char_boundary(&out, out.len().min(room - keep_err));
        let cut_err = (err.len() - keep_err) as u64;
        let cut_out = (out.len() - keep_out) as u64;
        err.truncate(keep_err);
        out.truncate(keep_out);
        run.stderr_dropped += cut_err;
        run.stdout_dropped += cut_out;
        if run.stdout_dropped > 0 {
            out.push_str(&marker("stdout", out.len(), run.stdout_dropped));
        }
        if run.stderr_dropped > 0 {
            err.push_str(&marker("stderr", err.len(), run.stderr_dropped));
        }
        run.stdout = out;
        run.stderr = err;
        self.used += keep_err + keep_out;
        self.dropped += cut_err + cut_out;
    }
}

/// `text` without the marker [`run`] appended for `dropped` bytes.
fn strip_marker(text: &str, stream: &str, dropped: u64) -> String {
    if dropped == 0 {
        return text.to_owned();
    }
    // The marker names the kept length, which is what precedes it.
    for (at, _) in text.rmatch_indices("\n[… ") {
        if text[at..] == marker(stream, at, dropped) {
            return text[..at].to_owned();
        }
    }
    text.to_owned()
}

/// The largest char boundary of `s` at or below `at`.
fn char_boundary(s: &str, mut at: usize) -> usize {
    while at > 0 && !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::autopilot::hooks::{self, Event};

    fn hook(argv: &[&str], timeout_secs: u64) -> Hook {
        Hook {
            event: Event::Stop,
            matcher: None,
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            critical: false,
            once: false,
            timeout_secs,
        }
    }

    fn sh(script: &str, timeout_secs: u64) -> Hook {
        hook(&["sh", "-c", script], timeout_secs)
    }

    #[test]
    fn output_past_the_caps_is_read_to_the_end_counted_and_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let h = sh(
            "head -c 1048576 /dev/zero | tr '\\000' a; head -c 102400 /dev/zero | tr '\\000' b >&2",
            60,
        );
        let r = run(&h, dir.path(), &[], "{}");
        assert!(!r.timed_out, "the hook blocked on a full pipe");
        assert_eq!(r.exit, Some(0));
        assert!(!r.failed());
        assert_eq!(r.stdout_dropped, 1_048_576 - 65_536);
        assert_eq!(r.stderr_dropped, 102_400 - 16_384);
        let (kept, mark) = r.stdout.split_at(STDOUT_CAP);
        assert!(kept.bytes().all(|b| b == b'a'));
        assert_eq!(
            mark,
            "\n[… stdout truncated: 983040 of 1048576 bytes dropped …]"
        );
        assert!(r.stderr[..STDERR_CAP].bytes().all(|b| b == b'b'));
        assert!(r.stderr.ends_with("86016 of 102400 bytes dropped …]"));
    }

    #[test]
    fn a_character_cut_at_the_cap_is_dropped_whole() {
        let mut c = Capture::new(5);
        c.push("abcdé".as_bytes()); // é is 2 bytes: the cap falls inside it
        let (text, dropped) = c.finish("stdout");
        assert_eq!(dropped, 2);
        assert!(text.starts_with("abcd\n[…"), "{text}");
        let mut c = Capture::new(6);
        c.push("abcdé".as_bytes());
        assert_eq!(c.finish("stdout"), ("abcdé".to_owned(), 0));
    }

    #[test]
    fn the_timeout_kills_the_hook_and_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let h = sh("sleep 300 & echo $!; wait", 1);
        let r = run(&h, dir.path(), &[], "");
        assert!(r.timed_out);
        assert!(r.failed());
        assert_eq!(r.exit, None);
        let pid: u32 = r.stdout.trim().parse().unwrap();
        // The grandchild was killed with the group: it is gone or a zombie awaiting its reaper.
        let gone = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.rsplit_once(')').unwrap().1.trim_start().starts_with('Z'))
                .unwrap_or(true)
        };
        let mut tries = 0;
        while !gone() && tries < 500 {
            std::thread::sleep(Duration::from_millis(20));
            tries += 1;
        }
        assert!(gone(), "`sleep` ({pid}) outlived its hook");
    }

    #[test]
    fn a_failing_exit_is_a_failure_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let r = run(&sh("echo oops >&2; exit 3", 60), dir.path(), &[], "");
        assert_eq!(r.exit, Some(3));
        assert!(r.failed());
        assert!(!r.timed_out);
        assert_eq!(r.stderr, "oops\n");
        let ok = run(&hook(&["true"], 60), dir.path(), &[], "");
        assert!(!ok.failed(), "{ok:?}");
    }

    #[test]
    fn the_hook_reads_the_json_on_stdin_and_a_hook_that_does_not_read_it_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let json = r#"{"event":"Stop","step":3}"#;
        let r = run(&hook(&["cat"], 60), dir.path(), &[], json);
        assert_eq!(r.stdout, json);
        let big = "x".repeat(4 * 1024 * 1024);
        let r = run(&hook(&["true"], 60), dir.path(), &[], &big);
        assert!(!r.failed(), "{r:?}");
    }

    const SECRET_VAR: &str = "BATON_TEST_HOOK_SECRET";

    #[test]
    fn a_secret_in_the_parent_environment_is_not_visible_to_a_hook() {
        // The environment can only be set safely for a new process: run this test again in a
        // child that has the secret.
        if std::env::var_os(SECRET_VAR).is_none() {
            let me = std::env::current_exe().unwrap();
            let out = Command::new(me)
                .args([
                    "hooks::tests::a_secret_in_the_parent_environment_is_not_visible_to_a_hook",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(SECRET_VAR, "sk-live-0123456789")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                stdout.contains("1 passed"),
                "the check did not run: {stdout}"
            );
            return;
        }
        assert_eq!(
            std::env::var(SECRET_VAR).unwrap(),
            "sk-live-0123456789",
            "this process holds the secret"
        );
        let dir = tempfile::tempdir().unwrap();
        let given = [("BATON_STEP".to_owned(), "3".to_owned())];
        let r = run(&hook(&["env"], 60), dir.path(), &given, "");
        assert!(!r.failed(), "{r:?}");
        assert!(!r.stdout.contains("sk-live"), "{}", r.stdout);
        let mut names: Vec<&str> = r
            .stdout
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k))
            .collect();
        names.sort_unstable();
        let mut want = vec!["BATON_STEP", "PATH"];
        if std::env::var_os("HOME").is_some() {
            want.insert(1, "HOME");
        }
        assert_eq!(names, want);
    }

    #[test]
    fn a_command_string_is_never_given_to_a_shell() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = "hooks:\n  Stop:\n    - hooks:\n        - command: \"echo hi; touch pwned $(touch pwned2) `touch pwned3` | cat\"\n";
        let h = &hooks::parse(yaml).unwrap()[0];
        let r = run(h, dir.path(), &[], "");
        assert!(!r.failed(), "{r:?}");
        assert_eq!(
            r.stdout,
            "hi; touch pwned $(touch pwned2) `touch pwned3` | cat\n"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn programs_outside_the_directory_are_refused_and_one_inside_runs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join("scripts")).unwrap();
        let script = |path: &Path, marker: &str| {
            std::fs::write(path, format!("#!/bin/sh\necho ran > {marker}\necho ok\n")).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        let evil = dir.path().join("evil.sh");
        let marker = dir.path().join("ran");
        script(&evil, &marker.display().to_string());
        std::os::unix::fs::symlink(&evil, project.join("scripts/link.sh")).unwrap();
        for program in [
            "../evil.sh",
            "scripts/../../evil.sh",
            evil.to_str().unwrap(),
            "scripts/link.sh",
            "scripts/missing.sh",
        ] {
            let r = run(&hook(&[program], 60), &project, &[], "");
            assert!(r.error.is_some() && r.failed(), "{program}: {r:?}");
            assert_eq!(r.exit, None);
        }
        assert!(!marker.exists(), "a refused program ran");
        let r = run(&hook(&["no-such-program-x"], 60), &project, &[], "");
        assert!(r.error.unwrap().contains("not found"));

        script(&project.join("scripts/ok.sh"), "inside");
        let r = run(&hook(&["scripts/ok.sh"], 60), &project, &[], "");
        assert_eq!((r.exit, r.stdout.as_str()), (Some(0), "ok\n"), "{r:?}");
        assert!(project.join("inside").exists());
    }

    fn output(stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            exit: Some(0),
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
            ..HookRun::default()
        }
    }

    #[test]
    fn a_step_keeps_256_kib_of_hook_output_and_counts_the_rest() {
        let mut budget = StepBudget::default();
        let kib = |n: usize| "o".repeat(n * 1024);
        let mut first = output(&kib(100), &"e".repeat(10 * 1024));
        budget.take(&mut first);
        assert_eq!(first.stdout.len(), 100 * 1024);
        assert_eq!(budget.used(), 110 * 1024);
        let mut second = output(&kib(100), "");
        budget.take(&mut second);
        assert_eq!(budget.used(), 210 * 1024);
        // 46 KiB left: stderr is kept first, stdout gets the rest.
        let mut third = output(&kib(64), &"e".repeat(16 * 1024));
        budget.take(&mut third);
        assert_eq!(budget.used(), STEP_CAP);
        assert!(third.stderr.len() == 16 * 1024 && third.stderr_dropped == 0);
        assert_eq!(third.stdout_dropped, 34 * 1024);
        assert_eq!(
            third.stdout,
            format!(
                "{}\n[… stdout truncated: 34816 of 65536 bytes dropped …]",
                kib(30)
            )
        );
        let mut fourth = output("x", "y");
        budget.take(&mut fourth);
        assert_eq!((fourth.stdout_dropped, fourth.stderr_dropped), (1, 1));
        assert!(
            fourth
                .stdout
                .starts_with("\n[… stdout truncated: 1 of 1 bytes")
        );
        assert_eq!(budget.dropped(), 34 * 1024 + 2);
        assert_eq!(budget.used(), STEP_CAP);
    }

    #[test]
    fn a_run_already_capped_keeps_one_marker_with_its_total_through_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = run(
            &sh("head -c 100000 /dev/zero | tr '\\000' a", 60),
            dir.path(),
            &[],
            "",
        );
        assert_eq!(r.stdout_dropped, 100_000 - 65_536);
        let mut budget = StepBudget::new(1000);
        budget.take(&mut r);
        assert_eq!(r.stdout_dropped, 99_000);
        assert_eq!(
            r.stdout,
            format!(
                "{}\n[… stdout truncated: 99000 of 100000 bytes dropped …]",
                "a".repeat(1000)
            )
        );
    }
}
