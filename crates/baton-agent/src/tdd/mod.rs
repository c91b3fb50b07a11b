//! The test-first guard: an inspector that refuses implementation changes until a test exists
//! for them and has been run.
//!
//! Modes are `off`, `tdd` and `atdd`. For a write or edit of an implementation file: exempt
//! paths pass; no test file for it → deny, naming the expected test path; a test file that was
//! not run since it was last written → deny ("run your tests first"); a recorded test run (pass
//! or fail) → allow. Test files may always be written; in `atdd` mode a unit test written while
//! the project has no acceptance test draws a warning. Test runs are recognized from commands
//! matching the configured test commands, with the exit status the tool itself reported (never
//! the model's words). A command that would write an implementation file from the shell
//! (redirections, `sed -i`, `tee`, `cp`/`mv` onto it) is refused unless the user granted a
//! one-time allowance within the last hour, which the first such call consumes. Everything the guard sees and decides
//! is in the journal under a scope (`native`, or `claude:<session>`), so it survives restarts.
//!
//! The same [`TddCore`] serves baton's own agents ([`TddGuard`], in the guard chain) and Claude
//! Code sessions (`baton guard`, which feeds it hook payloads).

pub mod map;
pub mod shell;

use crate::guard::{Inspected, ToolInspector, Verdict};
use crate::sandbox::Access;
use crate::tools::ToolResult;
use baton_store::journal::{GuardState, NewGuardRecord};
use map::{BadGlob, Class, Lang, Mapper, Override};
use serde::{Deserialize, Serialize};
use shell::Cmd;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The journal setting holding the mode chosen with `baton tdd`.
pub const MODE_SETTING: &str = "tdd.mode";
/// The kind of the allowance `baton tdd allow-bash-write once` grants.
pub const BASH_WRITE: &str = "bash-write";
/// How long an allowance stays usable after it was granted.
pub const ALLOWANCE_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

/// How strict the guard is; ordered from loosest to strictest.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum TddMode {
    /// No guard.
    #[default]
    Off,
    /// Test first.
    Tdd,
    /// Test first, and acceptance tests before unit tests (warned, not enforced).
    Atdd,
}

impl TddMode {
    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            TddMode::Off => "off",
            TddMode::Tdd => "tdd",
            TddMode::Atdd => "atdd",
        }
    }

    /// Parses `off`, `tdd` (or `on`) and `atdd`.
    pub fn parse(s: &str) -> Option<TddMode> {
        match s.trim() {
            "off" => Some(TddMode::Off),
            "tdd" | "on" => Some(TddMode::Tdd),
            "atdd" => Some(TddMode::Atdd),
            _ => None,
        }
    }
}

/// Test commands recognized by default (program and leading arguments).
pub fn default_test_commands() -> Vec<Vec<String>> {
    [
        "cargo test",
        "cargo nextest",
        "npm test",
        "npm run test",
        "npx jest",
        "npx vitest",
        "pnpm test",
        "yarn test",
        "npx mocha",
        "pnpm vitest",
        "pnpm jest",
        "yarn vitest",
        "yarn jest",
        "bun test",
        "jest",
        "vitest",
        "mocha",
        "pytest",
        "python -m pytest",
        "python3 -m pytest",
        "python -m unittest",
        "python3 -m unittest",
        "go test",
        "make test",
    ]
    .iter()
    .map(|c| c.split(' ').map(str::to_owned).collect())
    .collect()
}

/// The guard's settings, after the trust rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TddSettings {
    /// The mode.
    pub mode: TddMode,
    /// Globs of exempt paths.
    pub exempt: Vec<String>,
    /// Explicit test mappings.
    pub overrides: Vec<Override>,
    /// Commands that run the tests.
    pub test_commands: Vec<Vec<String>>,
}

impl TddSettings {
    /// The defaults in `mode`.
    pub fn defaults(mode: TddMode) -> TddSettings {
        TddSettings {
            mode,
            exempt: map::DEFAULT_EXEMPT
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            overrides: Vec::new(),
            test_commands: default_test_commands(),
        }
    }
}

/// The guard's answer, with a warning the caller may pass on (the verdict stays allow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Allow or deny.
    pub verdict: Verdict,
    /// A warning (unmapped file, unit test without an acceptance test).
    pub warning: Option<String>,
}

impl Decision {
    fn allow() -> Decision {
        Decision {
            verdict: Verdict::Allow,
            warning: None,
        }
    }

    fn warn(w: String) -> Decision {
        Decision {
            verdict: Verdict::Allow,
            warning: Some(w),
        }
    }

    fn deny(reason: String) -> Decision {
        Decision {
            verdict: Verdict::Deny(reason),
            warning: None,
        }
    }
}

/// Paths that hold the guard's own state or configuration: an agent never writes them while
/// the guard is on (it could switch the guard off, or forge its state).
pub fn guard_owned(rel: &str) -> bool {
    let lower = rel.to_ascii_lowercase();
    lower == ".baton"
        || lower.starts_with(".baton/")
        || lower == "baton.toml"
        || lower == ".claude/settings.json"
        || lower == ".claude/settings.local.json"
}

/// `path` with the symlinks of its deepest existing ancestor resolved and the rest appended: the
/// file a path names, however it is spelled (through a link to the project root, from outside or
/// inside the project). The path as given when nothing of it exists.
pub fn real_path(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// `p` (relative to `cwd`, or absolute) relative to `root`, `/`-separated; `None` if outside. A
/// path spelled through a symlink is judged by the file it names (a link to the project root
/// from outside does not make a project file an outside one); a link inside the project that
/// leads out keeps the project path it is spelled with.
pub fn relative(root: &Path, cwd: &Path, p: &str) -> Option<String> {
    let joined = if Path::new(p).is_absolute() {
        PathBuf::from(p)
    } else {
        cwd.join(p)
    };
    let mut norm = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                norm.pop();
            }
            Component::CurDir => {}
            other => norm.push(other),
        }
    }
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let under = |path: &Path| -> Option<String> {
        let rest = path
            .strip_prefix(root)
            .or_else(|_| path.strip_prefix(&canonical_root))
            .ok()?;
        let parts: Vec<String> = rest
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        (!parts.is_empty()).then(|| parts.join("/"))
    };
    under(&real_path(&norm)).or_else(|| under(&norm))
}

/// The `_test.go` files beside the Go file `rel`, root-relative and sorted.
fn go_package_tests(root: &Path, rel: &str) -> Vec<String> {
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let mut found: Vec<String> = std::fs::read_dir(root.join(dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n.ends_with("_test.go"))
        .map(|n| {
            if dir.is_empty() {
                n
            } else {
                format!("{dir}/{n}")
            }
        })
        .collect();
    found.sort();
    found
}

fn has_inline_tests(text: &str) -> bool {
    text.contains("#[cfg(test)]") || text.contains("#[test]")
}

/// The guard's logic over one project root, one journal and one scope.
pub struct TddCore {
    settings: TddSettings,
    mapper: Mapper,
    root: PathBuf,
    journal: Arc<Mutex<dyn GuardState + Send>>,
    scope: String,
}

impl TddCore {
    /// The guard for `root`, keeping its state in `journal` under `scope`.
    ///
    /// # Errors
    ///
    /// [`BadGlob`] if an exempt or override glob is invalid.
    pub fn new(
        settings: TddSettings,
        root: &Path,
        journal: Arc<Mutex<dyn GuardState + Send>>,
        scope: &str,
    ) -> Result<TddCore, BadGlob> {
        let mapper = Mapper::new(&settings.exempt, &settings.overrides)?;
        Ok(TddCore {
            settings,
            mapper,
            root: root.to_path_buf(),
            journal,
            scope: scope.to_owned(),
        })
    }

    /// The mode.
    pub fn mode(&self) -> TddMode {
        self.settings.mode
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn log(&self, kind: &str, tool: &str, path: &str, detail: &str, exit_code: Option<i64>) {
        if let Ok(mut j) = self.journal.lock() {
            let _ = j.record_guard(&NewGuardRecord {
                scope: self.scope.clone(),
                guard: "tdd".into(),
                kind: kind.into(),
                tool: tool.into(),
                path: path.into(),
                detail: detail.into(),
                exit_code,
            });
        }
    }

    fn refuse(&self, tool: &str, path: &str, reason: String) -> Decision {
        self.log("deny", tool, path, &reason, None);
        Decision::deny(reason)
    }

    fn warned(&self, tool: &str, path: &str, warning: String) -> Decision {
        self.log("warn", tool, path, &warning, None);
        Decision::warn(warning)
    }

    /// The test commands to name for a file in `lang`: the ones of its ecosystem first.
    fn commands_hint(&self, lang: Lang) -> String {
        let programs: &[&str] = match lang {
            Lang::Rust => &["cargo"],
            Lang::Python => &["pytest", "python", "python3", "uv", "poetry"],
            Lang::Go => &["go"],
            Lang::TypeScript => &[
                "npm", "npx", "pnpm", "yarn", "bun", "jest", "vitest", "mocha",
            ],
        };
        let of_lang = |c: &&Vec<String>| c.first().is_some_and(|p| programs.contains(&p.as_str()));
        let commands = &self.settings.test_commands;
        let mut chosen: Vec<&Vec<String>> = commands.iter().filter(of_lang).take(3).collect();
        if chosen.is_empty() {
            chosen = commands.iter().take(3).collect();
        }
        let names: Vec<String> = chosen
            .iter()
            .map(|c| format!("`{}`", c.join(" ")))
            .collect();
        if names.is_empty() {
            "your test command".to_owned()
        } else {
            names.join(" or ")
        }
    }

    /// Checks a write or edit of `rel` (root-relative); `new_text` is what the call adds
    /// (a whole file, or an edit's replacement), when known.
    pub fn check_write(&self, tool: &str, rel: &str, new_text: Option<&str>) -> Decision {
        if self.settings.mode == TddMode::Off {
            return Decision::allow();
        }
        if guard_owned(rel) {
            return self.refuse(
                tool,
                rel,
                format!("`{rel}` holds the test-first guard's own state or settings; agents do not change it"),
            );
        }
        match self.mapper.classify(rel) {
            Class::Exempt => Decision::allow(),
            Class::Unmapped => self.warned(
                tool,
                rel,
                format!("no test mapping for `{rel}`: allowed without a test"),
            ),
            Class::Test { acceptance } => {
                if self.settings.mode == TddMode::Atdd && !acceptance && !self.has_acceptance_test()
                {
                    return self.warned(
                        tool,
                        rel,
                        format!(
                            "`{rel}` is a unit test, but the project has no acceptance test yet \
                             (`*.acceptance.*`, `*.e2e.*` or `tests/acceptance/`): write the \
                             acceptance test of the feature first"
                        ),
                    );
                }
                Decision::allow()
            }
            Class::Impl { lang, candidates } => {
                self.check_impl(tool, rel, lang, &candidates, new_text)
            }
        }
    }

    fn check_impl(
        &self,
        tool: &str,
        rel: &str,
        lang: Lang,
        candidates: &[String],
        new_text: Option<&str>,
    ) -> Decision {
        let abs = self.root.join(rel);
        if lang == Lang::Rust && new_text.is_some_and(has_inline_tests) {
            // A change that brings its own test module (Rust's inline tests) is a test write.
            return Decision::allow();
        }
        let mut existing: Vec<String> = candidates
            .iter()
            .filter(|c| self.root.join(c).is_file())
            .cloned()
            .collect();
        if lang == Lang::Go {
            // A Go package is tested as a whole: any `_test.go` file of its folder covers it.
            existing.extend(go_package_tests(&self.root, rel));
        }
        if lang == Lang::Rust
            && baton_store::bounded::read_to_string(&abs, 4 << 20)
                .is_ok_and(|t| has_inline_tests(&t))
        {
            existing.push(rel.to_owned());
        }
        if existing.is_empty() {
            let mut reason = format!(
                "create a test file first, expected: {}",
                candidates.first().map_or(rel, String::as_str)
            );
            let others: Vec<&str> = candidates.iter().skip(1).map(String::as_str).collect();
            if !others.is_empty() {
                reason.push_str(&format!(" (or {})", others.join(", ")));
            }
            if lang == Lang::Rust {
                reason.push_str(&format!("; or add a #[cfg(test)] module to `{rel}` first"));
            }
            reason.push_str(", then run it and watch it fail");
            return self.refuse(tool, rel, reason);
        }
        let state = self.journal.lock().map_err(|_| ()).and_then(|j| {
            let run = j
                .last_guard_record(&self.scope, "test-run", None)
                .map_err(|_| ())?;
            let mut written = None;
            for t in &existing {
                let w = j
                    .last_guard_record(&self.scope, "test-write", Some(t))
                    .map_err(|_| ())?;
                written = written.max(w);
            }
            Ok((run, written))
        });
        match state {
            Err(()) => self.refuse(
                tool,
                rel,
                "the test-first guard cannot read its state in the journal; nothing is written \
                 until it can"
                    .to_owned(),
            ),
            Ok((Some(run), written)) if written.is_none_or(|w| run > w) => Decision::allow(),
            Ok(_) => self.refuse(
                tool,
                rel,
                format!(
                    "run your tests first: no test run was recorded since `{}` was written; run {} \
                     and then change `{rel}`",
                    existing[0],
                    self.commands_hint(lang)
                ),
            ),
        }
    }

    /// Records a successful write of `rel`: a test file (or a Rust change bringing tests) must
    /// be run before implementation files it covers may change.
    pub fn after_write(&self, tool: &str, rel: &str, new_text: Option<&str>) {
        if self.settings.mode == TddMode::Off {
            return;
        }
        let test = match self.mapper.classify(rel) {
            Class::Test { .. } => true,
            Class::Impl {
                lang: Lang::Rust, ..
            } => new_text.is_some_and(has_inline_tests),
            _ => false,
        };
        if test {
            self.log("test-write", tool, rel, "", None);
        }
    }

    /// Checks a command run in `cwd` (absolute).
    pub fn check_command(&self, tool: &str, cmd: &Cmd, cwd: &Path) -> Decision {
        if self.settings.mode == TddMode::Off {
            return Decision::allow();
        }
        let mut impl_targets = Vec::new();
        for (dir, s) in cmd.located(cwd) {
            // Where a `cd` earlier on the line leads, when the text tells.
            let cwd = dir.as_deref().unwrap_or(cwd);
            let w = s.program_words();
            let prog = w.first().map(|p| p.rsplit('/').next().unwrap_or(p));
            if prog == Some("baton")
                && w.iter()
                    .skip(1)
                    .any(|a| a == "tdd" || a == "guard" || a == "trust")
            {
                return self.refuse(
                    tool,
                    "",
                    format!(
                        "`{}`: agents do not change the test-first guard; ask the user",
                        cmd.display()
                    ),
                );
            }
            for t in s.write_targets() {
                let Some(rel) = relative(&self.root, cwd, &t) else {
                    continue;
                };
                if guard_owned(&rel) {
                    return self.refuse(
                        tool,
                        &rel,
                        format!("`{rel}` holds the test-first guard's own state or settings; agents do not change it"),
                    );
                }
                if matches!(self.mapper.classify(&rel), Class::Impl { .. }) {
                    impl_targets.push(rel);
                }
            }
        }
        if impl_targets.is_empty() {
            return Decision::allow();
        }
        let by = format!("{tool}: {}", cmd.display());
        let used = self.journal.lock().ok().and_then(|mut j| {
            j.consume_allowance(BASH_WRITE, &by, ALLOWANCE_TTL)
                .ok()
                .flatten()
        });
        if let Some(a) = used {
            self.log(
                "allowance-used",
                tool,
                &impl_targets.join(", "),
                &format!("{} (granted: {})", cmd.display(), a.reason),
                None,
            );
            return Decision::allow();
        }
        let list: Vec<String> = impl_targets.iter().map(|t| format!("`{t}`")).collect();
        self.refuse(
            tool,
            &impl_targets.join(", "),
            format!(
                "this command would write the implementation file {} from the shell, past the \
                 test-first guard; change it with the file tools instead (or the user may grant \
                 one shell write with `baton tdd allow-bash-write once \"reason\"`)",
                list.join(", ")
            ),
        )
    }

    /// Records a command that ran with `exit_code` if it runs the tests; returns whether it did.
    pub fn after_command(&self, tool: &str, cmd: &Cmd, exit_code: Option<i64>) -> bool {
        if self.settings.mode == TddMode::Off
            || !shell::runs_tests(cmd, &self.settings.test_commands)
        {
            return false;
        }
        self.log("test-run", tool, "", &cmd.display(), exit_code);
        true
    }

    /// Whether the project has an acceptance test (a bounded walk of the tree).
    fn has_acceptance_test(&self) -> bool {
        let mut stack = vec![PathBuf::new()];
        let mut seen = 0usize;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(self.root.join(&dir)) else {
                continue;
            };
            for e in entries.flatten() {
                seen += 1;
                if seen > 20_000 {
                    return false;
                }
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') || name == "target" || name == "node_modules" {
                    continue;
                }
                let rel = dir.join(&name);
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() {
                    stack.push(rel);
                } else if let Some(r) = rel.to_str()
                    && self.mapper.classify(&r.replace('\\', "/"))
                        == (Class::Test { acceptance: true })
                {
                    return true;
                }
            }
        }
        false
    }
}

/// The exit status `run_command` reported on its first line (`exit code: N`).
pub fn reported_exit(result: &ToolResult) -> Option<i64> {
    if result.is_error {
        return None;
    }
    let first = result.content.lines().next()?;
    first.strip_prefix("exit code: ")?.trim().parse().ok()
}

/// The guard in the chain of baton's own agents.
pub struct TddGuard {
    core: Arc<TddCore>,
}

impl TddGuard {
    /// A guard over `core`.
    pub fn new(core: Arc<TddCore>) -> TddGuard {
        TddGuard { core }
    }

    fn rel(&self, call: &Inspected<'_>, arg: &str) -> Option<String> {
        let p = call.args.get(arg)?.as_str()?;
        let abs = call.ctx.sandbox.resolve(p, Access::Write).ok()?;
        relative(
            call.ctx.sandbox.root(),
            call.ctx.sandbox.root(),
            &abs.to_string_lossy(),
        )
        .or_else(|| relative(&call.ctx.root, &call.ctx.root, p))
    }

    fn command(call: &Inspected<'_>) -> (Cmd, PathBuf) {
        let mut argv = vec![
            call.args
                .get("program")
                .and_then(|p| p.as_str())
                .unwrap_or_default()
                .to_owned(),
        ];
        if let Some(serde_json::Value::Array(a)) = call.args.get("args") {
            argv.extend(a.iter().map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            }));
        }
        let cwd = call
            .args
            .get("cwd")
            .and_then(|c| c.as_str())
            .and_then(|c| call.ctx.sandbox.resolve(c, Access::Read).ok())
            .unwrap_or_else(|| call.ctx.sandbox.root().to_path_buf());
        (Cmd::from_argv(argv), cwd)
    }

    fn written_text<'a>(call: &'a Inspected<'_>) -> Option<&'a str> {
        let field = if call.name == "edit_file" {
            "new_string"
        } else {
            "content"
        };
        call.args.get(field).and_then(|v| v.as_str())
    }
}

impl ToolInspector for TddGuard {
    fn name(&self) -> &'static str {
        "tdd"
    }

    fn inspect(&self, call: &Inspected<'_>) -> Verdict {
        match call.name {
            "write_file" | "edit_file" => match self.rel(call, "path") {
                Some(rel) => {
                    self.core
                        .check_write(call.name, &rel, Self::written_text(call))
                        .verdict
                }
                None => Verdict::Allow,
            },
            "run_command" => {
                let (cmd, cwd) = Self::command(call);
                self.core.check_command(call.name, &cmd, &cwd).verdict
            }
            _ => Verdict::Allow,
        }
    }

    fn observe(&self, call: &Inspected<'_>, result: &ToolResult) {
        if result.is_error {
            return;
        }
        match call.name {
            "write_file" | "edit_file" => {
                if let Some(rel) = self.rel(call, "path") {
                    self.core
                        .after_write(call.name, &rel, Self::written_text(call));
                }
            }
            "run_command" => {
                if let Some(code) = reported_exit(result) {
                    let (cmd, _) = Self::command(call);
                    self.core.after_command(call.name, &cmd, Some(code));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
