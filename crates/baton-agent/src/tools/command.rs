//! `run_command`: runs one allowlisted program, without a shell, inside the project.
//!
//! The program must be named in `[commands] allow` (a bare name looked up on `PATH`; a program
//! written with a `/` must be a relative path inside the project whose name is allowlisted). The
//! arguments go to the program verbatim as an array — `;`, `|`, `$(…)` and backticks are plain
//! characters — stdin is closed, and the environment is inherited but never echoed. The child gets
//! its own process group so that a timeout or a cancellation kills whatever it started too (on
//! Unix). Output is the exit code followed by stdout and stderr, cut in the middle with a visible
//! marker past `max_output_bytes`. A non-zero exit is an ordinary result: the model must see failing
//! tests as output, not as a broken tool.
//!
//! This is an allowlist, not a jail: an allowlisted interpreter (`python3 -c`, `node -e`, `make`,
//! `cargo` build scripts) can still reach anything the user can.

use super::{BoxFuture, CommandPolicy, Tool, ToolContext, ToolResult, str_arg};
use crate::process::GroupKiller;
use crate::sandbox::Access;
use baton_llm::ToolSpec;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::path::{Component, Path};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

/// How long output is still collected after the program exits (or is killed) when something it
/// started keeps its stdout or stderr open.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// `run_command {program, args, cwd?, timeout_secs?}`.
pub struct RunCommand;

/// Whether `program` may be run under `policy`: a bare name must be in the allowlist; a name with
/// a `/` must be relative, free of `..`, and its file name (or the whole path) allowlisted — the
/// tool then also checks that it resolves inside the project. Absolute program paths are refused.
pub fn check_program(program: &str, policy: &CommandPolicy) -> Result<(), String> {
    let allowed = || {
        if policy.allow.is_empty() {
            "no programs are allowed in this project".to_owned()
        } else {
            format!("allowed programs: {}", policy.allow.join(", "))
        }
    };
    if program.trim().is_empty() {
        return Err(format!("the program is empty; {}", allowed()));
    }
    if program.contains('\0') {
        return Err("the program name contains a NUL byte".to_owned());
    }
    if !program.contains('/') {
        if policy.allow.iter().any(|a| a == program) {
            return Ok(());
        }
        return Err(format!(
            "`{program}` is not an allowed program; {}",
            allowed()
        ));
    }
    let path = Path::new(program);
    if path.is_absolute() {
        return Err(format!(
            "`{program}` refused: programs are named without an absolute path; {}",
            allowed()
        ));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!("`{program}` refused: `..` is not allowed"));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let normalized = program.trim_start_matches("./");
    if policy
        .allow
        .iter()
        .any(|a| *a == name || a.trim_start_matches("./") == normalized)
    {
        return Ok(());
    }
    Err(format!(
        "`{program}` is not an allowed program; {}",
        allowed()
    ))
}

/// Reads the `args` array (strings; numbers and booleans are written out).
fn string_args(args: &Value) -> Result<Vec<String>, ToolResult> {
    match args.get("args") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) if s.contains('\0') => {
                    Err(ToolResult::error("an argument contains a NUL byte"))
                }
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                Value::Bool(b) => Ok(b.to_string()),
                _ => Err(ToolResult::error("`args` must be an array of strings")),
            })
            .collect(),
        Some(_) => Err(ToolResult::error("`args` must be an array of strings")),
    }
}

/// The timeout: the smaller of `timeout_secs` and the policy's.
fn timeout(args: &Value, policy: &CommandPolicy) -> Result<Duration, ToolResult> {
    let requested = match args.get("timeout_secs") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let secs = v
                .as_f64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                .filter(|s: &f64| s.is_finite() && *s > 0.0)
                .ok_or_else(|| ToolResult::error("`timeout_secs` must be a positive number"))?;
            Some(Duration::from_secs_f64(secs.min(1e9)))
        }
    };
    Ok(requested.map_or(policy.timeout, |r| r.min(policy.timeout)))
}

fn format_secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}", d.as_secs())
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

/// One output stream: its first and last `keep` bytes, and how many there were.
#[derive(Debug, Default)]
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
    keep: usize,
}

impl Capture {
    fn new(keep: usize) -> Capture {
        Capture {
            keep,
            ..Capture::default()
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        self.total += data.len();
        let room = self.keep - self.head.len();
        if room > 0 {
            let n = room.min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.len() >= self.keep {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.keep..]);
        } else {
            self.tail.extend(data);
            let excess = self.tail.len().saturating_sub(self.keep);
            self.tail.drain(..excess);
        }
    }

    /// The last `n` bytes seen (`n <= keep`).
    fn last(&self, n: usize) -> Vec<u8> {
        let mut out: Vec<u8> = Vec::with_capacity(n);
        if self.tail.len() < n {
            // Nothing was dropped between head and tail: the stream is head ++ tail.
            let from_head = (n - self.tail.len()).min(self.head.len());
            out.extend_from_slice(&self.head[self.head.len() - from_head..]);
            out.extend(self.tail.iter());
        } else {
            out.extend(self.tail.iter().skip(self.tail.len() - n));
        }
        out
    }

    /// The stream in at most `budget` bytes (plus a marker when cut in the middle).
    fn render(&self, budget: usize) -> String {
        if self.total <= budget {
            let mut all = self.head.clone();
            all.extend(self.tail.iter());
            return String::from_utf8_lossy(&all).into_owned();
        }
        let mut head_len = (budget / 2).min(self.head.len());
        while head_len > 0 && self.head.get(head_len).is_some_and(|b| b & 0xC0 == 0x80) {
            head_len -= 1;
        }
        let tail = self.last(budget - budget / 2);
        let mut start = 0;
        while start < tail.len() && tail[start] & 0xC0 == 0x80 {
            start += 1;
        }
        let omitted = self.total - head_len - (tail.len() - start);
        format!(
            "{}\n[… output truncated: {omitted} bytes omitted …]\n{}",
            String::from_utf8_lossy(&self.head[..head_len]),
            String::from_utf8_lossy(&tail[start..])
        )
    }
}

type Shared = Arc<Mutex<Capture>>;

fn spawn_reader(mut from: impl AsyncRead + Unpin + Send + 'static, into: Shared) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => into
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(&buf[..n]),
            }
        }
    })
}

/// Formats stdout and stderr within `max` bytes together.
fn render_output(out: &Shared, err: &Shared, max: usize) -> String {
    let out = out.lock().unwrap_or_else(PoisonError::into_inner);
    let err = err.lock().unwrap_or_else(PoisonError::into_inner);
    let (out_budget, err_budget) = if out.total + err.total <= max {
        (out.total, err.total)
    } else if err.total <= max / 2 {
        (max - err.total, err.total)
    } else if out.total <= max / 2 {
        (out.total, max - out.total)
    } else {
        (max / 2, max - max / 2)
    };
    format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        out.render(out_budget),
        err.render(err_budget)
    )
}

fn describe_exit(status: &ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code: {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("exit code: none (killed by signal {signal})");
        }
    }
    "exit code: none".to_owned()
}

/// Kills the child's process group, then the child itself, and reaps it.
async fn kill_tree(child: &mut tokio::process::Child, group: &mut GroupKiller) {
    group.kill();
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// Waits for the readers to reach end of output, at most [`DRAIN_GRACE`]; returns whether they
/// did.
async fn drain(readers: &mut [JoinHandle<()>]) -> bool {
    let all = async {
        for r in readers.iter_mut() {
            let _ = r.await;
        }
    };
    tokio::time::timeout(DRAIN_GRACE, all).await.is_ok()
}

enum Ending {
    Exited(std::io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

impl Tool for RunCommand {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_command".to_owned(),
            description:
                "Run one allowlisted program (no shell: pipes, `;`, `&&`, globs and `$()` \
                          are not interpreted — pass each argument separately). Returns the exit \
                          code, stdout and stderr; a non-zero exit is reported, not an error."
                    .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "program": {
                        "type": "string",
                        "description": "Program name from the allowlist, e.g. `cargo`."
                    },
                    "args": {
                        "type": "array", "items": {"type": "string"},
                        "description": "Arguments, one per item, passed verbatim."
                    },
                    "cwd": {
                        "type": "string",
                        "description": "Working directory relative to the project root (default: the root)."
                    },
                    "timeout_secs": {
                        "type": "number", "exclusiveMinimum": 0,
                        "description": "Timeout in seconds (capped by the project's limit)."
                    }
                },
                "required": ["program", "args"],
                "additionalProperties": false
            }),
        }
    }

    fn writes(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match run_command(args, ctx).await {
                Ok(r) | Err(r) => r,
            }
        })
    }
}

async fn run_command(args: &Value, ctx: &ToolContext) -> Result<ToolResult, ToolResult> {
    let program = str_arg(args, "program")?;
    check_program(program, &ctx.commands).map_err(ToolResult::error)?;
    let argv = string_args(args)?;
    let limit = timeout(args, &ctx.commands)?;
    let executable = if program.contains('/') {
        let abs = ctx
            .sandbox
            .resolve(program, Access::Read)
            .map_err(|r| ToolResult::error(r.to_string()))?;
        if !abs.is_file() {
            return Err(ToolResult::error(format!(
                "`{program}` is not a file in the project"
            )));
        }
        abs.into_os_string()
    } else {
        program.into()
    };
    let cwd = match args.get("cwd") {
        None | Some(Value::Null) => ctx.sandbox.root().to_path_buf(),
        Some(Value::String(c)) => {
            let abs = ctx
                .sandbox
                .resolve(c, Access::Read)
                .map_err(|r| ToolResult::error(r.to_string()))?;
            if !abs.is_dir() {
                return Err(ToolResult::error(format!(
                    "cwd `{c}` is not a directory in the project"
                )));
            }
            abs
        }
        Some(_) => return Err(ToolResult::error("`cwd` must be a string")),
    };

    let mut cmd = tokio::process::Command::new(&executable);
    cmd.args(&argv)
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for var in &ctx.commands.env_remove {
        cmd.env_remove(var);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        ToolResult::error(if e.kind() == std::io::ErrorKind::NotFound {
            format!("cannot run `{program}`: program not found")
        } else {
            format!("cannot run `{program}`: {e}")
        })
    })?;
    let mut group = GroupKiller::new(child.id());

    let max = ctx.commands.max_output_bytes.max(1);
    let out: Shared = Arc::new(Mutex::new(Capture::new(max)));
    let err: Shared = Arc::new(Mutex::new(Capture::new(max)));
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(spawn_reader(stdout, out.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(spawn_reader(stderr, err.clone()));
    }

    let ending = tokio::select! {
        status = child.wait() => Ending::Exited(status),
        () = tokio::time::sleep(limit) => Ending::TimedOut,
        () = ctx.cancel.cancelled() => Ending::Cancelled,
    };
    let headline = match ending {
        Ending::Exited(Ok(status)) => {
            if drain(&mut readers).await {
                group.disarm();
            } else {
                // Something it started still holds the output open: stop it.
                kill_tree(&mut child, &mut group).await;
                drain(&mut readers).await;
            }
            Ok(describe_exit(&status))
        }
        Ending::Exited(Err(e)) => {
            kill_tree(&mut child, &mut group).await;
            drain(&mut readers).await;
            Err(format!("waiting for `{program}` failed: {e}"))
        }
        Ending::TimedOut => {
            kill_tree(&mut child, &mut group).await;
            drain(&mut readers).await;
            Err(format!(
                "timed out after {} s (process killed); output so far:",
                format_secs(limit)
            ))
        }
        Ending::Cancelled => {
            kill_tree(&mut child, &mut group).await;
            drain(&mut readers).await;
            Err("cancelled (process killed); output so far:".to_owned())
        }
    };
    for r in &readers {
        r.abort();
    }
    let body = render_output(&out, &err, max);
    Ok(match headline {
        Ok(h) => ToolResult::ok(format!("{h}\n{body}")),
        Err(h) => ToolResult::error(format!("{h}\n{body}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(10);
        for chunk in [b"0123".as_slice(), b"456789abcd", b"efghijklmnopqrstuvwxyz"] {
            c.push(chunk);
        }
        assert_eq!(c.total, 36);
        assert_eq!(c.render(36).len(), 20, "only 2×keep is stored");
        let shown = c.render(8);
        assert!(shown.starts_with("0123\n[… output truncated: 28 bytes omitted …]\n"));
        assert!(shown.ends_with("wxyz"));
    }

    #[test]
    fn capture_small_stream_is_whole() {
        let mut c = Capture::new(10);
        c.push(b"hello");
        c.push(b" world");
        assert_eq!(c.render(20), "hello world");
        assert_eq!(c.last(8), b"lo world");
    }

    #[test]
    fn capture_cuts_on_char_boundaries() {
        let mut c = Capture::new(100);
        c.push("ééééééééééééééééééé".as_bytes()); // 19 × 2 bytes
        let shown = c.render(7);
        assert!(!shown.contains('\u{fffd}'), "{shown}");
    }

    #[test]
    fn check_program_rules() {
        let policy = CommandPolicy::default();
        assert!(check_program("cargo", &policy).is_ok());
        assert!(check_program("./scripts/cargo", &policy).is_ok());
        assert!(check_program("rm", &policy).is_err());
        assert!(check_program("/bin/cat", &policy).is_err());
        assert!(check_program("../cat", &policy).is_err());
        assert!(check_program("scripts/../cat", &policy).is_err());
        assert!(check_program("", &policy).is_err());
        assert!(check_program("cargo test", &policy).is_err());
    }
}
