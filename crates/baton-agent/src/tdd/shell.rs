//! Reading commands the way the guard needs: which files a command would write, and whether it
//! runs the tests.
//!
//! A command is either an argument vector (`run_command` without a shell) or a shell line (a
//! Claude Code `Bash` call, or `sh -c` through `run_command`). Shell lines are split into simple
//! commands on `;`, `&&`, `||`, `|`, `&` and newlines, with quotes honoured and here-document
//! bodies skipped (a here-string, `<<<`, has none). Writes are found in output redirections (`>`,
//! `>>`, `>|`, `&>`, and `>&` to a file rather than a descriptor), `tee`,
//! in-place `sed`/`perl`, `cp`/`mv`/`install` destinations, `dd of=` and `truncate`, each
//! relative to where a `cd` earlier on the line leads ([`Cmd::located`]). This is a
//! heuristic, not a parser of every shell: an interpreter given a script (`python3 -c`,
//! `node -e`) can still write anything, which is why the guard is backed by git at review time.

use std::path::{Component, Path, PathBuf};

/// A command as a tool receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cmd {
    /// Program and arguments, no shell.
    Argv(Vec<String>),
    /// A shell line.
    Shell(String),
}

impl Cmd {
    /// A `run_command` call: `sh -c SCRIPT` (and bash, zsh, dash, ksh, behind `env` or with
    /// options such as `bash -lc`) is read as a shell line.
    pub fn from_argv(argv: Vec<String>) -> Cmd {
        let simple = Simple {
            words: argv,
            redirects: Vec::new(),
        };
        match simple.script() {
            Some(script) if simple.program_words().len() == simple.words.len() => {
                Cmd::Shell(script.to_owned())
            }
            _ => Cmd::Argv(simple.words),
        }
    }

    /// Its simple commands, each as words plus the targets of its output redirections. The
    /// script a shell is given (`bash -c "…"`) is read as a line of its own: its commands follow
    /// the shell's, to [`MAX_NESTING`] shells deep.
    pub fn simple_commands(&self) -> Vec<Simple> {
        self.located(Path::new("/"))
            .into_iter()
            .map(|(_, s)| s)
            .collect()
    }

    /// The simple commands of the line itself, without looking into the scripts of shells.
    fn top_level(&self) -> Vec<Simple> {
        match self {
            Cmd::Argv(a) => vec![Simple {
                words: a.clone(),
                redirects: Vec::new(),
            }],
            Cmd::Shell(s) => split(s),
        }
    }

    /// Its simple commands with the directory each runs in, starting from `cwd`: a `cd DIR`
    /// moves the commands after it (the path joined lexically, `..` and `.` resolved). `None`
    /// where that cannot be told from the text (`cd` alone, `cd ~…`, `cd -`, a `$` in the path):
    /// a caller guarding writes treats relative paths there as unknown. The commands of a
    /// shell's script follow the shell, starting where it runs (a `cd` in the script moves only
    /// the script's own commands).
    pub fn located(&self, cwd: &Path) -> Vec<(Option<PathBuf>, Simple)> {
        let mut out = Vec::new();
        locate(self.top_level(), Some(cwd.to_path_buf()), 0, &mut out);
        out
    }

    /// The text of the command, for messages and the journal.
    pub fn display(&self) -> String {
        match self {
            Cmd::Argv(a) => a.join(" "),
            Cmd::Shell(s) => s.clone(),
        }
    }
}

/// `base` joined with `path` (absolute paths replace it), `.` and `..` resolved in the text.
pub fn lexical_join(base: &Path, path: &str) -> PathBuf {
    let joined = base.join(path);
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
    norm
}

/// Shells within shells (`sh -c "bash -c '…'"`) read this deep; the scripts of deeper ones
/// are not read (the hook policy refuses shells nested that deep).
pub const MAX_NESTING: usize = 8;

/// Pushes `simples`, run from `start`, onto `out` with the directory of each; the script of a
/// shell among them follows it, `depth` shells deep.
fn locate(
    simples: Vec<Simple>,
    start: Option<PathBuf>,
    depth: usize,
    out: &mut Vec<(Option<PathBuf>, Simple)>,
) {
    let mut here = start;
    for s in simples {
        let w = s.program_words();
        let is_cd = w
            .first()
            .is_some_and(|p| p == "cd" || p == "pushd" || p == "popd");
        if is_cd {
            let dir = w.iter().skip(1).find(|a| !a.starts_with('-') || *a == "-");
            here = match (w.first().map(String::as_str), dir) {
                (Some("cd" | "pushd"), Some(d))
                    if !d.starts_with('~') && d != "-" && !d.contains('$') =>
                {
                    here.map(|h| lexical_join(&h, d))
                }
                _ => None,
            };
        }
        let script = s.script().map(str::to_owned);
        out.push((here.clone(), s));
        if let Some(script) = script
            && depth < MAX_NESTING
        {
            locate(split(&script), here.clone(), depth + 1, out);
        }
    }
}

/// The last component of a program's path (`env` of `/usr/bin/env`).
fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// One simple command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Simple {
    /// Its words, after the redirections were taken out.
    pub words: Vec<String>,
    /// Targets of output redirections.
    pub redirects: Vec<String>,
}

impl Simple {
    /// The words from the program on: leading `VAR=value` assignments and wrappers (`env`,
    /// `sudo`, `nice`, `time`, `command`, `exec`) dropped.
    pub fn program_words(&self) -> &[String] {
        let mut w: &[String] = &self.words;
        loop {
            match w.first() {
                Some(first)
                    if first.contains('=')
                        && !first.starts_with('=')
                        && first.split('=').next().is_some_and(|n| {
                            n.chars().all(|c| c.is_alphanumeric() || c == '_')
                        }) =>
                {
                    w = &w[1..];
                }
                Some(first) if matches!(base_name(first), "env" | "nice") => {
                    // Their options (`env -i`, `env -u NAME`, `nice -n 5`) come before the
                    // program.
                    w = &w[1..];
                    while let Some(opt) = w.first().filter(|o| o.starts_with('-')) {
                        let takes_value = matches!(
                            opt.as_str(),
                            "-u" | "--unset" | "-C" | "--chdir" | "-S" | "-n"
                        );
                        w = &w[if takes_value { 2 } else { 1 }.min(w.len())..];
                        if opt == "--" {
                            break;
                        }
                    }
                }
                Some(first) if ["sudo", "time", "command", "exec"].contains(&base_name(first)) => {
                    w = &w[1..];
                }
                _ => return w,
            }
        }
    }

    /// The script this command gives a shell to run (`sh -c SCRIPT`, `bash -lc SCRIPT`,
    /// `env bash -c SCRIPT`, `bash --norc -c -- SCRIPT`; sh, bash, zsh, dash, ksh), if it is one.
    pub fn script(&self) -> Option<&str> {
        const SHELLS: [&str; 6] = ["sh", "bash", "zsh", "dash", "ksh", "mksh"];
        let w = self.program_words();
        let prog = w.first()?;
        if !SHELLS.contains(&prog.rsplit('/').next().unwrap_or(prog)) {
            return None;
        }
        let mut args = w[1..].iter();
        let mut given = false;
        while let Some(a) = args.next() {
            if a == "--" {
                return if given {
                    args.next().map(String::as_str)
                } else {
                    None
                };
            }
            if a.starts_with("--") {
                if matches!(a.as_str(), "--rcfile" | "--init-file") {
                    args.next();
                }
                continue;
            }
            if a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) {
                let flags = &a[1..];
                given |= a.starts_with('-') && flags.contains('c');
                if flags.ends_with(['o', 'O']) {
                    args.next();
                }
                continue;
            }
            return given.then_some(a.as_str());
        }
        None
    }

    /// The files this command would write (as written: relative or absolute).
    pub fn write_targets(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .redirects
            .iter()
            .filter(|t| !t.starts_with('&') && !t.starts_with("/dev/"))
            .cloned()
            .collect();
        let w = self.program_words();
        let Some(prog) = w.first() else {
            return out;
        };
        let prog = prog.rsplit('/').next().unwrap_or(prog);
        let args = &w[1..];
        let operands = || args.iter().filter(|a| !a.starts_with('-')).cloned();
        match prog {
            "tee" => out.extend(operands()),
            "sed" | "gsed" | "perl" => {
                let in_place = args.iter().any(|a| {
                    a.starts_with("--in-place")
                        || (a.starts_with('-') && !a.starts_with("--") && a.contains('i'))
                });
                if in_place {
                    let scripted = args
                        .iter()
                        .any(|a| a == "-e" || a == "-f" || (prog == "perl" && a.contains('e')));
                    let mut skip_next = false;
                    let mut first = !scripted;
                    for a in args {
                        if skip_next {
                            skip_next = false;
                            continue;
                        }
                        if a == "-e" || a == "-f" {
                            skip_next = true;
                            continue;
                        }
                        if a.starts_with('-') {
                            continue;
                        }
                        if first {
                            first = false;
                            continue;
                        }
                        out.push(a.clone());
                    }
                }
            }
            "cp" | "mv" | "install" | "rsync" => {
                let ops: Vec<String> = operands().collect();
                if let Some(dest) = ops.last()
                    && ops.len() >= 2
                {
                    out.push(dest.clone());
                    // A directory destination (`dir/`): the files land inside it.
                    let into_dir = dest.ends_with('/') || dest == "." || dest == "..";
                    for src in ops[..ops.len() - 1].iter().filter(|_| into_dir) {
                        let name = src.rsplit('/').next().unwrap_or(src);
                        out.push(format!("{}/{name}", dest.trim_end_matches('/')));
                    }
                }
            }
            "dd" => out.extend(
                args.iter()
                    .filter_map(|a| a.strip_prefix("of=").map(str::to_owned)),
            ),
            "truncate" => {
                let mut skip_next = false;
                for a in args {
                    if skip_next {
                        skip_next = false;
                    } else if a == "-s" || a == "-r" {
                        skip_next = true;
                    } else if !a.starts_with('-') {
                        out.push(a.clone());
                    }
                }
            }
            _ => {}
        }
        out
    }
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Sep,
    Redirect,
    Input,
    Heredoc,
}

fn tokenize(s: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut heredocs: Vec<String> = Vec::new();
    let mut want_delim = false;
    let flush = |word: &mut String, in_word: &mut bool, out: &mut Vec<Tok>| {
        if *in_word {
            out.push(Tok::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '\\' if i + 1 < chars.len() => {
                in_word = true;
                i += 1;
                if chars[i] != '\n' {
                    word.push(chars[i]);
                }
            }
            ' ' | '\t' => flush(&mut word, &mut in_word, &mut out),
            '\n' => {
                flush(&mut word, &mut in_word, &mut out);
                if want_delim && let Some(Tok::Word(w)) = out.last() {
                    heredocs.push(w.clone());
                    want_delim = false;
                }
                out.push(Tok::Sep);
                // Skip the bodies of here-documents opened on this line.
                for delim in heredocs.drain(..) {
                    let rest: String = chars[i + 1..].iter().collect();
                    let mut consumed = 0;
                    for line in rest.split_inclusive('\n') {
                        consumed += line.chars().count();
                        if line.trim() == delim {
                            break;
                        }
                    }
                    i += consumed;
                }
            }
            ';' | '|' | '(' | ')' => {
                flush(&mut word, &mut in_word, &mut out);
                out.push(Tok::Sep);
            }
            '&' => {
                flush(&mut word, &mut in_word, &mut out);
                if chars.get(i + 1) == Some(&'>') {
                    i += 1;
                    if chars.get(i + 1) == Some(&'>') {
                        i += 1;
                    }
                    out.push(Tok::Redirect);
                } else {
                    out.push(Tok::Sep);
                }
            }
            '>' => {
                // `2>`: the digits were the descriptor, not a word.
                if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                flush(&mut word, &mut in_word, &mut out);
                if matches!(chars.get(i + 1), Some('>') | Some('|')) {
                    i += 1;
                }
                if chars.get(i + 1) == Some(&'&') {
                    i += 1;
                    if descriptor_follows(&chars, i + 1) {
                        // `>&2`, `>& 2`, `>&-`: a descriptor, not a file.
                        while i + 1 < chars.len() && matches!(chars[i + 1], ' ' | '\t') {
                            i += 1;
                        }
                        while i + 1 < chars.len()
                            && (chars[i + 1].is_ascii_digit() || chars[i + 1] == '-')
                        {
                            i += 1;
                        }
                    } else {
                        // `>& file`: standard output and error both go to the file.
                        out.push(Tok::Redirect);
                    }
                } else {
                    out.push(Tok::Redirect);
                }
            }
            '<' => {
                flush(&mut word, &mut in_word, &mut out);
                if chars.get(i + 1) == Some(&'<') && chars.get(i + 2) == Some(&'<') {
                    // `<<< word`: a here-string, a word on standard input; no body follows.
                    i += 2;
                    out.push(Tok::Input);
                } else if chars.get(i + 1) == Some(&'<') {
                    i += 1;
                    if chars.get(i + 1) == Some(&'-') {
                        i += 1;
                    }
                    out.push(Tok::Heredoc);
                    want_delim = true;
                } else {
                    out.push(Tok::Input);
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
        i += 1;
        if want_delim && let Some(Tok::Word(w)) = out.last() {
            heredocs.push(w.clone());
            want_delim = false;
        }
    }
    flush(&mut word, &mut in_word, &mut out);
    out
}

/// Whether the word starting at `from` (after `>&` and any blanks) is a descriptor (`2`, `-`),
/// which `>&` duplicates, rather than a file name, which `>&` writes.
fn descriptor_follows(chars: &[char], from: usize) -> bool {
    let mut i = from;
    while i < chars.len() && matches!(chars[i], ' ' | '\t') {
        i += 1;
    }
    let start = i;
    while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '-') {
        i += 1;
    }
    let ends = i == chars.len() || matches!(chars[i], ' ' | '\t' | '\n' | ';' | '|' | '&' | ')');
    i > start && ends
}

fn split(s: &str) -> Vec<Simple> {
    let mut out = Vec::new();
    let mut cur = Simple::default();
    let mut toks = tokenize(s).into_iter().peekable();
    while let Some(t) = toks.next() {
        match t {
            Tok::Word(w) => cur.words.push(w),
            Tok::Sep => {
                if !cur.words.is_empty() || !cur.redirects.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            Tok::Redirect => {
                if let Some(Tok::Word(_)) = toks.peek()
                    && let Some(Tok::Word(w)) = toks.next()
                {
                    cur.redirects.push(w);
                }
            }
            Tok::Input | Tok::Heredoc => {
                if let Some(Tok::Word(_)) = toks.peek() {
                    toks.next();
                }
            }
        }
    }
    if !cur.words.is_empty() || !cur.redirects.is_empty() {
        out.push(cur);
    }
    out
}

/// The words after the runners that only start another program: `timeout [opts] DURATION`,
/// `uv run`, `poetry run` (and pipenv, pdm, hatch, rye), `npx`, `pnpx`, `bunx`,
/// `pnpm exec`/`dlx`, `yarn exec`/`dlx`.
fn past_runners(mut w: &[String]) -> &[String] {
    loop {
        let first = w.first().map(|p| p.rsplit('/').next().unwrap_or(p));
        let second = w.get(1).map(String::as_str);
        w = match (first, second) {
            (Some("timeout"), _) => {
                let mut rest = &w[1..];
                while let Some(opt) = rest.first().filter(|o| o.starts_with('-')) {
                    let takes_value =
                        matches!(opt.as_str(), "-s" | "-k" | "--signal" | "--kill-after");
                    rest = &rest[if takes_value { 2 } else { 1 }.min(rest.len())..];
                }
                // The duration.
                &rest[1.min(rest.len())..]
            }
            (Some("uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye"), Some("run")) => &w[2..],
            (Some("pnpm" | "yarn"), Some("exec" | "dlx")) => &w[2..],
            (Some("npx" | "pnpx" | "bunx"), _) => {
                let mut rest = &w[1..];
                while rest.first().is_some_and(|o| o.starts_with('-')) {
                    rest = &rest[1..];
                }
                rest
            }
            _ => return w,
        };
    }
}

/// Whether `cmd` runs one of `tests` (each a program with its leading arguments, e.g.
/// `["cargo", "test"]`): some simple command starts with it, past the runners that start it
/// (`uv run pytest`, `timeout 60 pytest`); a `test` script name matches its variants
/// (`npm run test:unit`).
pub fn runs_tests(cmd: &Cmd, tests: &[Vec<String>]) -> bool {
    cmd.simple_commands().iter().any(|s| {
        let w = s.program_words();
        let candidates = [w, past_runners(w)];
        tests.iter().any(|t| {
            !t.is_empty()
                && candidates.iter().any(|w| {
                    w.len() >= t.len()
                        && w.iter().zip(t).enumerate().all(|(i, (a, b))| {
                            if i == 0 {
                                a == b || a.rsplit('/').next() == Some(b.as_str())
                            } else {
                                a == b || (b == "test" && a.starts_with("test:"))
                            }
                        })
                })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(line: &str) -> Vec<String> {
        Cmd::Shell(line.into())
            .simple_commands()
            .iter()
            .flat_map(Simple::write_targets)
            .collect()
    }

    #[test]
    fn finds_the_files_a_shell_line_writes() {
        assert_eq!(targets("echo hi > src/a.rs"), ["src/a.rs"]);
        assert_eq!(targets("echo hi>>src/a.rs"), ["src/a.rs"]);
        assert_eq!(targets("cargo build 2>err.log"), ["err.log"]);
        assert_eq!(targets("cargo build 2>&1 | tee -a out.log"), ["out.log"]);
        assert_eq!(targets("ls >/dev/null"), Vec::<String>::new());
        assert_eq!(
            targets("sed -i 's/a/b/' src/a.rs src/b.rs"),
            ["src/a.rs", "src/b.rs"]
        );
        assert_eq!(targets("sed -e 's/a/b/' -i src/a.rs"), ["src/a.rs"]);
        assert_eq!(targets("sed 's/a/b/' src/a.rs"), Vec::<String>::new());
        assert_eq!(targets("cd x && cp /tmp/a.rs src/a.rs"), ["src/a.rs"]);
        assert_eq!(targets("mv -f old.rs src/"), ["src/", "src/old.rs"]);
        assert_eq!(targets("dd if=/dev/zero of=src/a.rs"), ["src/a.rs"]);
        assert_eq!(targets("FOO=1 sudo tee src/a.rs"), ["src/a.rs"]);
        assert_eq!(targets("echo 'a > b' \"c > d\""), Vec::<String>::new());
        assert_eq!(
            targets("cat > src/a.rs <<'EOF'\nfn f() { if a > b {} }\nEOF\necho done > log"),
            ["src/a.rs", "log"]
        );
    }

    #[test]
    fn a_redirect_of_both_outputs_to_a_file_is_a_write_and_a_here_string_is_no_here_document() {
        assert_eq!(targets("echo x >& baton.toml"), ["baton.toml"]);
        assert_eq!(targets("echo x >&baton.toml"), ["baton.toml"]);
        assert_eq!(targets("make >& build-2.log"), ["build-2.log"]);
        for dup in [
            "cmd 2>&1",
            "cmd >&2",
            "cmd >& 2",
            "cmd 1>&-",
            "cmd >&2; true",
        ] {
            assert_eq!(targets(dup), Vec::<String>::new(), "{dup}");
        }
        assert_eq!(
            targets("cat <<< hi\necho x > sprint-status.yaml"),
            ["sprint-status.yaml"]
        );
        assert_eq!(
            targets("grep -q a <<< \"$x\" && echo y > src/a.rs"),
            ["src/a.rs"]
        );
    }

    #[test]
    fn a_cd_moves_the_commands_after_it() {
        let at = |line: &str| -> Vec<Option<String>> {
            Cmd::Shell(line.into())
                .located(Path::new("/p"))
                .into_iter()
                .map(|(d, _)| d.map(|d| d.display().to_string()))
                .collect()
        };
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            at("cd tests && cat > ../src/x.py"),
            [some("/p/tests"), some("/p/tests")]
        );
        assert_eq!(
            at("cd /elsewhere; echo x > f"),
            [some("/elsewhere"), some("/elsewhere")]
        );
        assert_eq!(
            at("ls; cd a/./b/.. && pwd"),
            [some("/p"), some("/p/a"), some("/p/a")]
        );
        for unknown in [
            "cd && echo x > f",
            "cd ~/x; echo x > f",
            "cd $D; echo x > f",
            "cd -; echo x > f",
        ] {
            assert_eq!(at(unknown)[1], None, "{unknown}");
        }
    }

    #[test]
    fn sh_c_through_run_command_is_read_as_a_shell_line() {
        let c = Cmd::from_argv(vec!["bash".into(), "-c".into(), "echo x > src/a.rs".into()]);
        assert_eq!(c, Cmd::Shell("echo x > src/a.rs".into()));
        let c = Cmd::from_argv(vec!["cp".into(), "a".into(), "src/a.rs".into()]);
        assert!(
            c.simple_commands()[0]
                .write_targets()
                .contains(&"src/a.rs".to_owned())
        );
    }

    #[test]
    fn the_script_of_a_shell_is_read_however_it_is_quoted_or_started() {
        let all = |line: &str| -> Vec<String> {
            Cmd::Shell(line.to_owned())
                .simple_commands()
                .iter()
                .flat_map(Simple::write_targets)
                .collect()
        };
        for line in [
            r#"bash -c "echo 'x = 1' > src/shop/cart.py""#,
            "sh -c 'echo x > src/shop/cart.py'",
            r#"sh -c "echo \"x = 1\" > src/shop/cart.py""#,
            r#"bash -lc "echo 'x' > src/shop/cart.py""#,
            r#"bash -l -c "echo 'x' > src/shop/cart.py""#,
            r#"bash --norc -c -- "echo 'x' > src/shop/cart.py""#,
            r#"env bash -c "echo 'x' > src/shop/cart.py""#,
            r#"env -i PATH=/bin /bin/bash -c "echo 'x' > src/shop/cart.py""#,
            r#"FOO=1 bash -ec "true; echo 'x' >> src/shop/cart.py""#,
            r#"sh -c "bash -c 'echo x > src/shop/cart.py'""#,
            r#"bash -c "sh -c \"echo 'x' > src/shop/cart.py\"""#,
            r#"cd src && bash -c "echo 'x' > shop/cart.py""#,
            r#"bash -c 'tee src/shop/cart.py <<< x'"#,
            r#"zsh -o errexit -c "cp /tmp/a src/shop/cart.py""#,
        ] {
            let targets = all(line);
            assert!(
                targets
                    .iter()
                    .any(|t| t == "src/shop/cart.py" || t == "shop/cart.py"),
                "{line}: {targets:?}"
            );
        }
        for line in [
            r#"bash -c "pytest -q""#,
            "sh -c 'cargo test'",
            r#"bash -c "echo 'a > b'""#,
            "bash script.sh > /dev/null",
            "echo \"bash -c 'echo x > f'\"",
        ] {
            assert_eq!(all(line), Vec::<String>::new(), "{line}");
        }
        // A `cd` inside the script moves only the script's commands.
        let at: Vec<Option<PathBuf>> =
            Cmd::Shell(r#"bash -c "cd src && echo x > a"; echo y > b"#.into())
                .located(Path::new("/p"))
                .into_iter()
                .map(|(d, _)| d)
                .collect();
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(at, [p("/p"), p("/p/src"), p("/p/src"), p("/p")]);
    }

    #[test]
    fn recognizes_test_runners_behind_the_tools_that_start_them() {
        let defaults = super::super::default_test_commands();
        for line in [
            "uv run pytest",
            "poetry run pytest -q",
            "timeout 60 pytest",
            "timeout -s KILL 5m pytest tests/",
            "python -m unittest",
            "npm run test:unit",
            "bun test",
            "npx mocha",
            "npx --yes vitest run",
            "pnpm vitest run",
            "pnpm exec jest",
        ] {
            assert!(
                runs_tests(&Cmd::Shell(line.into()), &defaults),
                "{line} is a test run"
            );
        }
        for line in [
            "uv run python app.py",
            "timeout 5 sleep 1",
            "npm run build",
            "npx tsc",
        ] {
            assert!(
                !runs_tests(&Cmd::Shell(line.into()), &defaults),
                "{line} is no test run"
            );
        }
    }

    #[test]
    fn recognizes_test_commands() {
        let tests = vec![
            vec!["cargo".to_owned(), "test".to_owned()],
            vec!["pytest".to_owned()],
        ];
        let yes = |s: &str| runs_tests(&Cmd::Shell(s.into()), &tests);
        assert!(yes("cargo test -p x"));
        assert!(yes("cd crates/a && RUST_LOG=1 cargo test"));
        assert!(yes("/usr/bin/pytest -q"));
        assert!(!yes("cargo build"));
        assert!(!yes("echo cargo test"));
        assert!(runs_tests(
            &Cmd::Argv(vec!["cargo".into(), "test".into()]),
            &tests
        ));
    }
}
