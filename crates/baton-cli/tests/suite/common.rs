//! Helpers shared by the suite: throw-away projects, running the binary, reading its JSON output,
//! comparing texts byte for byte, UTC stamps and a small deterministic PRNG.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where baton looks for the sprint file when `baton.toml` does not say otherwise.
pub const SPRINT_REL: &str = "_bmad-output/implementation-artifacts/sprint-status.yaml";

/// The binary under test.
pub const BATON: &str = env!("CARGO_BIN_EXE_baton");

/// A `baton` command on `root`: `-C root`, UTC clock, no inherited project, stdin closed, run
/// from a directory that is not the project (nothing may depend on the current directory).
pub fn baton_command(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BATON);
    cmd.arg("-C")
        .arg(root)
        .args(args)
        .env("TZ", "UTC")
        .env_remove("BATON_PROJECT")
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null());
    cmd
}

/// The outcome of one run of the binary.
#[derive(Debug, Clone)]
pub struct Run {
    /// The exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The arguments, for messages.
    pub args: String,
}

impl Run {
    /// A readable account of the run, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "`baton {}` exited with {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.args, self.code, self.stdout, self.stderr
        )
    }

    /// Asserts the exit code.
    #[track_caller]
    pub fn expect_code(self, code: i32) -> Run {
        assert_eq!(self.code, Some(code), "{}", self.describe());
        self
    }
}

/// Runs `baton -C root ARGS` to completion.
pub fn run_in(root: &Path, args: &[&str]) -> Run {
    let out = baton_command(root, args)
        .output()
        .expect("the baton binary runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args: args.join(" "),
    }
}

/// A throw-away project directory.
pub struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// An empty directory.
    pub fn empty() -> Project {
        Project {
            dir: tempfile::tempdir().expect("a temp dir"),
        }
    }

    /// A project whose sprint file (at the default location) holds `text`; no `baton.toml`.
    pub fn with_sprint(text: &str) -> Project {
        let p = Project::empty();
        p.write(SPRINT_REL, text);
        p
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The sprint file.
    pub fn sprint_path(&self) -> PathBuf {
        self.root().join(SPRINT_REL)
    }

    /// The sprint file's text.
    pub fn read_sprint(&self) -> String {
        fs::read_to_string(self.sprint_path()).expect("the sprint file is readable UTF-8")
    }

    /// The sprint file's bytes.
    pub fn sprint_bytes(&self) -> Vec<u8> {
        fs::read(self.sprint_path()).expect("the sprint file is readable")
    }

    /// Writes `text` at `rel` (creating directories).
    pub fn write(&self, rel: &str, text: &str) {
        let path = self.root().join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).expect("create parent directory");
        }
        fs::write(&path, text).expect("write file");
    }

    /// Runs `baton -C <root> ARGS`.
    pub fn run(&self, args: &[&str]) -> Run {
        run_in(self.root(), args)
    }

    /// Runs and asserts exit 0.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> Run {
        self.run(args).expect_code(0)
    }

    /// A command to spawn (for concurrency and crash tests).
    pub fn command(&self, args: &[&str]) -> Command {
        baton_command(self.root(), args)
    }

    /// `baton status --json`, parsed.
    #[track_caller]
    pub fn status_json(&self) -> Value {
        parse_json(&self.ok(&["status", "--json"]))
    }

    /// `key → status` of every entry (first occurrence), from `baton status --json`.
    #[track_caller]
    pub fn statuses(&self) -> BTreeMap<String, String> {
        statuses_of(&self.status_json())
    }

    /// `baton log --json` plus `extra` flags, parsed.
    #[track_caller]
    pub fn log(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["log", "--json"];
        args.extend_from_slice(extra);
        match parse_json(&self.ok(&args)) {
            Value::Array(events) => events,
            other => panic!("`baton log --json` printed {other}, not an array"),
        }
    }

    /// Every event of the journal, whatever its state (`baton log --json --all`).
    #[track_caller]
    pub fn all_events(&self) -> Vec<Value> {
        self.log(&["--all"])
    }
}

/// Parses a run's stdout as JSON.
#[track_caller]
pub fn parse_json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", run.describe()))
}

/// `key → status` of every entry of a `status --json` document (first occurrence).
pub fn statuses_of(status: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in status["entries"].as_array().expect("`entries` is an array") {
        let key = e["key"].as_str().expect("entry key").to_owned();
        let st = e["status"].as_str().expect("entry status").to_owned();
        out.entry(key).or_insert(st);
    }
    out
}

/// A string field of a JSON event.
pub fn s<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("`{field}` is not a string in {v}"))
}

/// `(severity, kind, line, key)` of every problem of a `status --json` document.
pub fn problems_of(status: &Value) -> Vec<(String, String, Option<u64>, Option<String>)> {
    status["problems"]
        .as_array()
        .expect("`problems` is an array")
        .iter()
        .map(|p| {
            (
                s(p, "severity").to_owned(),
                s(p, "kind").to_owned(),
                p["line"].as_u64(),
                p["key"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Replaces the only occurrence of `from` in `text`; panics unless there is exactly one.
#[track_caller]
pub fn replace_once(text: &str, from: &str, to: &str) -> String {
    let n = text.matches(from).count();
    assert_eq!(
        n, 1,
        "`{from}` occurs {n} times in the fixture, expected once"
    );
    text.replacen(from, to, 1)
}

/// Asserts two texts are byte-identical, showing the first differing line if not.
#[track_caller]
pub fn assert_same_text(actual: &str, expected: &str, what: &str) {
    if actual == expected {
        return;
    }
    let mut msg = format!("{what}: the texts differ\n");
    let (a, e): (Vec<&str>, Vec<&str>) = (
        actual.split_inclusive('\n').collect(),
        expected.split_inclusive('\n').collect(),
    );
    for i in 0..a.len().max(e.len()) {
        let (la, le) = (a.get(i), e.get(i));
        if la != le {
            let _ = writeln!(msg, "first difference at line {}:", i + 1);
            let _ = writeln!(msg, "  expected: {le:?}");
            let _ = writeln!(msg, "  actual:   {la:?}");
            break;
        }
    }
    let _ = write!(
        msg,
        "--- expected ---\n{expected}\n--- actual ---\n{actual}\n--- end ---"
    );
    panic!("{msg}");
}

/// The 1-based line holding `key:` (first occurrence, any indentation) and its text.
#[track_caller]
pub fn line_of<'a>(text: &'a str, key: &str) -> (usize, &'a str) {
    let prefix = format!("{key}:");
    text.lines()
        .enumerate()
        .find(|(_, l)| l.trim_start().starts_with(&prefix))
        .map(|(i, l)| (i + 1, l))
        .unwrap_or_else(|| panic!("no line for `{key}` in\n{text}"))
}

/// The value of a top-level scalar field as written (without a trailing comment).
#[track_caller]
pub fn field_value(text: &str, name: &str) -> String {
    let prefix = format!("{name}:");
    let line = text
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no top-level `{name}` in\n{text}"));
    let value = &line[prefix.len()..];
    let value = value.split(" #").next().unwrap_or(value);
    value.trim().to_owned()
}

/// The `MM-DD-YYYY HH:MM` stamp of `t` in UTC (baton writes local time; the suite runs it with
/// `TZ=UTC`).
pub fn utc_stamp(t: SystemTime) -> String {
    let secs = i64::try_from(t.duration_since(UNIX_EPOCH).expect("after 1970").as_secs())
        .expect("seconds fit");
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days → civil date.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{month:02}-{day:02}-{year:04} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Asserts `stamp` is what the clock read between `before` and `after` (a minute may tick).
#[track_caller]
pub fn assert_stamp_between(stamp: &str, before: SystemTime, after: SystemTime) {
    let (b, a) = (utc_stamp(before), utc_stamp(after));
    assert!(
        stamp == b || stamp == a,
        "`last_updated` is `{stamp}`, expected the time of the write (`{b}` or `{a}`, UTC)"
    );
}

/// A small deterministic PRNG (SplitMix64), so a failing round can be replayed from its seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeds the generator.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// A sprint file with the usual header and `body` as `development_status`.
pub fn sprint(body: &str) -> String {
    format!(
        "generated: 01-02-2026 10:00\nlast_updated: 01-02-2026 10:00\nproject: demo\n\
         project_key: NOKEY\ntracking_system: file-system\n\
         story_location: _bmad-output/implementation-artifacts\n\ndevelopment_status:\n{body}"
    )
}

/// Every file under `root` with its bytes, keyed by relative path.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read dir") {
            let entry = entry.expect("dir entry");
            let path = entry.path();
            let ft = entry.file_type().expect("file type");
            if ft.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("under root").to_path_buf();
                out.insert(rel, fs::read(&path).expect("read file"));
            }
        }
    }
    out
}

/// Every event of the project's run event log (`.baton/baton.db`), oldest first, read as the
/// protocol's typed events: whom each concerns and what happened.
pub fn run_events(
    root: &Path,
) -> Vec<(
    baton_engine::protocol::Scope,
    baton_engine::protocol::EventBody,
)> {
    use baton_store::journal::RunEvents as _;
    let j = baton_store::journal::SqliteJournal::open(&root.join(".baton/baton.db"))
        .expect("the journal opens");
    j.events_after(0, 1_000_000)
        .expect("the run event log reads")
        .into_iter()
        .map(|e| {
            (
                serde_json::from_str(&e.scope)
                    .unwrap_or_else(|err| panic!("scope {}: {err}", e.scope)),
                serde_json::from_str(&e.body)
                    .unwrap_or_else(|err| panic!("body {}: {err}", e.body)),
            )
        })
        .collect()
}
