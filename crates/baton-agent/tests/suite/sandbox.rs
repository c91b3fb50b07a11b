//! The sandbox against escape attempts: a table of paths that must be refused (each with the
//! class of its reason), a table of paths that must resolve, and proof that nothing outside the
//! root was touched — neither by checking nor by the `write_file` tool.
//!
//! Decisions pinned here: `%2e%2e` is a literal name (no URL decoding); on Unix `..\x` is one
//! literal file name (a backslash is not a separator); `~` is a literal name; `.git` and deny
//! patterns are matched ignoring case (`.GIT/config`, `.ENV` are refused, because on macOS and
//! Windows they are the same files); `...` and `..foo` are ordinary names.

// Helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_agent::sandbox::{Access, Refusal, Sandbox, SandboxError};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// The class of a refusal, by the words its reason must contain.
#[derive(Debug, Clone, Copy)]
enum Class {
    Dots,
    Absolute,
    Symlink,
    Git,
    Deny,
    Nul,
    TooLong,
    Empty,
    Loop,
    Unresolvable,
}

impl Class {
    fn words(self) -> &'static str {
        match self {
            Class::Dots => "`..` is not allowed",
            Class::Absolute => "absolute path outside the project",
            Class::Symlink => "symlink points outside the project",
            Class::Git => "inside .git/",
            Class::Deny => "matches deny pattern",
            Class::Nul => "contains a NUL byte",
            Class::TooLong => "path too long",
            Class::Empty => "empty path",
            Class::Loop => "too many symlinks",
            Class::Unresolvable => "cannot be resolved",
        }
    }
}

/// A project root next to an `outside` directory holding a canary, with every kind of link.
pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub outside: PathBuf,
}

pub fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("project");
    let outside = base.join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("canary.txt"), "canary").unwrap();
    fs::create_dir_all(outside.join("sub")).unwrap();
    fs::write(outside.join("sub/secret.txt"), "secret").unwrap();

    let dirs = [
        "src",
        "a/b",
        "config",
        "keys",
        "deep/er",
        "sub/.git",
        ".git/hooks",
        "inner_dir",
    ];
    for d in dirs {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    let files = [
        ("src/main.rs", "fn main() {}\n"),
        ("a/b/c.txt", "c\n"),
        ("...", "three dots\n"),
        ("..foo", "dotdotfoo\n"),
        (".env", "TOKEN=secret\n"),
        (".env.local", "TOKEN=secret\n"),
        ("config/.env.prod", "TOKEN=secret\n"),
        ("server.pem", "-----BEGIN-----\n"),
        ("keys/id_rsa", "key\n"),
        ("a.key", "key\n"),
        ("deep/er/id_ed25519.pub", "key\n"),
        (".git/config", "[core]\n"),
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/hooks/pre-commit", "#!/bin/sh\n"),
        ("sub/.git/x", "x\n"),
    ];
    for (f, content) in files {
        fs::write(root.join(f), content).unwrap();
    }
    let links: [(&str, PathBuf); 17] = [
        ("link_out", outside.join("canary.txt")),
        ("link_link", PathBuf::from("link_out")),
        ("dir_out", outside.clone()),
        ("rel_out", PathBuf::from("../outside")),
        ("inner_dir/escape", PathBuf::from("../../outside")),
        ("via_inner", PathBuf::from("inner_dir")),
        ("dangling_out", outside.join("created_by_escape.txt")),
        ("loop_a", PathBuf::from("loop_b")),
        ("loop_b", PathBuf::from("loop_a")),
        ("link_in", PathBuf::from("src/main.rs")),
        ("dir_in", PathBuf::from("a")),
        ("link_git", PathBuf::from(".git/config")),
        ("notes", PathBuf::from(".env")),
        ("dangling_in", PathBuf::from("src/new_by_link.rs")),
        ("a/b/up", PathBuf::from("../../src")),
        ("abs_in", root.join("a")),
        (
            "through_missing",
            PathBuf::from("missing/../../outside/canary.txt"),
        ),
    ];
    for (name, target) in links {
        symlink(target, root.join(name)).unwrap();
    }
    Fixture {
        _tmp: tmp,
        root,
        outside,
    }
}

/// Every file and directory under `dir`, with file contents (symlinks recorded, not followed).
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            let value = if kind.is_symlink() {
                format!("link -> {}", fs::read_link(&path).unwrap().display())
            } else if kind.is_dir() {
                stack.push(path.clone());
                "dir".to_owned()
            } else {
                fs::read_to_string(&path).unwrap()
            };
            out.insert(path, value);
        }
    }
    out
}

fn escape_table(fx: &Fixture) -> Vec<(String, Class)> {
    let root = fx.root.display().to_string();
    let parent = fx.root.parent().unwrap().display().to_string();
    let outside = fx.outside.display().to_string();
    let mut t: Vec<(String, Class)> = [
        // `..` in every spelling the OS treats as a parent.
        ("..", Class::Dots),
        ("../x", Class::Dots),
        ("../outside/canary.txt", Class::Dots),
        ("a/../../x", Class::Dots),
        ("./../x", Class::Dots),
        ("a/./../../x", Class::Dots),
        ("..//x", Class::Dots),
        ("x/..", Class::Dots),
        ("a/b/../../..", Class::Dots),
        ("a/..", Class::Dots),
        ("./..", Class::Dots),
        ("src/../src/main.rs", Class::Dots),
        ("a/b/c.txt/..", Class::Dots),
        ("/..", Class::Dots),
        ("../project/src/main.rs", Class::Dots),
        // Absolute paths outside.
        ("/etc/passwd", Class::Absolute),
        ("/tmp/x", Class::Absolute),
        ("//etc", Class::Absolute),
        ("///etc//passwd", Class::Absolute),
        ("/", Class::Absolute),
        // Symlinks leading out.
        ("link_out", Class::Symlink),
        ("link_link", Class::Symlink),
        ("dir_out", Class::Symlink),
        ("dir_out/canary.txt", Class::Symlink),
        ("dir_out/sub/secret.txt", Class::Symlink),
        ("dir_out/not_there_yet.txt", Class::Symlink),
        ("rel_out/canary.txt", Class::Symlink),
        ("inner_dir/escape/canary.txt", Class::Symlink),
        ("via_inner/escape/canary.txt", Class::Symlink),
        ("dangling_out", Class::Symlink),
        ("./link_out", Class::Symlink),
        // git's directory, in any case.
        (".git/config", Class::Git),
        (".git/hooks/pre-commit", Class::Git),
        (".git/hooks/new-hook", Class::Git),
        ("sub/.git/x", Class::Git),
        (".git", Class::Git),
        ("./.git/HEAD", Class::Git),
        (".GIT/config", Class::Git),
        (".Git/HEAD", Class::Git),
        ("link_git", Class::Git),
        // Deny patterns (default list), on names and nested paths, in any case.
        (".env", Class::Deny),
        (".env.local", Class::Deny),
        ("config/.env.prod", Class::Deny),
        ("server.pem", Class::Deny),
        ("keys/id_rsa", Class::Deny),
        ("a.key", Class::Deny),
        ("deep/er/id_ed25519.pub", Class::Deny),
        (".ENV", Class::Deny),
        ("new/Server.PEM", Class::Deny),
        ("notes", Class::Deny),
        // Malformed.
        ("a\0b", Class::Nul),
        ("src/main.rs\0.txt", Class::Nul),
        ("", Class::Empty),
        ("loop_a", Class::Loop),
        ("src/main.rs/x", Class::Unresolvable),
        ("through_missing", Class::Unresolvable),
    ]
    .into_iter()
    .map(|(p, c)| (p.to_owned(), c))
    .collect();
    t.push((format!("{root}/../outside/canary.txt"), Class::Dots));
    t.push((format!("{outside}/canary.txt"), Class::Absolute));
    t.push((outside.clone(), Class::Absolute));
    t.push((parent, Class::Absolute));
    t.push((format!("{root}/link_out"), Class::Symlink));
    t.push((format!("{root}/dir_out/canary.txt"), Class::Symlink));
    t.push((format!("{root}/.git/config"), Class::Git));
    t.push(("a/".repeat(2500), Class::TooLong));
    t.push(("x".repeat(300), Class::TooLong));
    t.push((format!("dir/{}", "y".repeat(256)), Class::TooLong));
    t
}

#[test]
fn escape_attempts_are_refused_and_touch_nothing() {
    let fx = fixture();
    let before_outside = snapshot(&fx.outside);
    let before_root = snapshot(&fx.root);
    let sandbox = Sandbox::new(&fx.root, &Sandbox::default_deny()).unwrap();
    let table = escape_table(&fx);
    assert!(table.len() >= 40, "{} cases", table.len());
    for (path, class) in &table {
        for access in [Access::Read, Access::Write] {
            match sandbox.resolve(path, access) {
                Ok(p) => panic!("{path:?} ({access:?}) was accepted as {}", p.display()),
                Err(Refusal { reason, .. }) => assert!(
                    reason.contains(class.words()),
                    "{path:?} ({access:?}): expected {class:?}, got {reason:?}"
                ),
            }
        }
    }
    assert_eq!(snapshot(&fx.outside), before_outside, "outside changed");
    assert_eq!(snapshot(&fx.root), before_root, "root changed");
}

#[tokio::test]
async fn write_file_refuses_every_escape_and_writes_nothing() {
    let fx = fixture();
    let before_outside = snapshot(&fx.outside);
    let before_root = snapshot(&fx.root);
    let ctx = super::tools::context(&fx.root);
    let write = baton_agent::tools::Toolbox::standard();
    let write = write.get("write_file").unwrap();
    for (path, _) in escape_table(&fx) {
        let args = serde_json::json!({"path": path, "content": "pwned"});
        let result = write.call(&args, &ctx).await;
        assert!(result.is_error, "{path:?} was written: {}", result.content);
        assert!(
            result.content.contains("refused"),
            "{path:?}: {}",
            result.content
        );
    }
    assert_eq!(snapshot(&fx.outside), before_outside, "outside changed");
    assert_eq!(snapshot(&fx.root), before_root, "root changed");
    assert_eq!(
        fs::read_to_string(fx.outside.join("canary.txt")).unwrap(),
        "canary"
    );
    assert!(!fx.outside.join("created_by_escape.txt").exists());
}

#[test]
fn allowed_paths_resolve_inside() {
    let fx = fixture();
    let sandbox = Sandbox::new(&fx.root, &Sandbox::default_deny()).unwrap();
    let r = &fx.root;
    let root = r.display().to_string();
    let cases: Vec<(String, Access, PathBuf)> = vec![
        ("src/main.rs".into(), Access::Read, r.join("src/main.rs")),
        ("src/main.rs".into(), Access::Write, r.join("src/main.rs")),
        ("a/b/c.txt".into(), Access::Read, r.join("a/b/c.txt")),
        ("./src//main.rs".into(), Access::Read, r.join("src/main.rs")),
        (
            format!("{root}/src/main.rs"),
            Access::Write,
            r.join("src/main.rs"),
        ),
        (
            format!("{root}//a/./b/c.txt"),
            Access::Read,
            r.join("a/b/c.txt"),
        ),
        ("link_in".into(), Access::Read, r.join("src/main.rs")),
        ("link_in".into(), Access::Write, r.join("src/main.rs")),
        ("dir_in/b/c.txt".into(), Access::Read, r.join("a/b/c.txt")),
        (
            "a/b/up/main.rs".into(),
            Access::Write,
            r.join("src/main.rs"),
        ),
        ("abs_in/b/c.txt".into(), Access::Write, r.join("a/b/c.txt")),
        (
            "dangling_in".into(),
            Access::Write,
            r.join("src/new_by_link.rs"),
        ),
        ("...".into(), Access::Read, r.join("...")),
        ("..foo".into(), Access::Write, r.join("..foo")),
        ("a/...b".into(), Access::Write, r.join("a/...b")),
        // Literal names, not parents: no URL decoding, no backslash separators on Unix.
        ("%2e%2e/x".into(), Access::Write, r.join("%2e%2e/x")),
        ("..\\x".into(), Access::Write, r.join("..\\x")),
        ("~/x".into(), Access::Write, r.join("~/x")),
        (
            "new/dir/file.txt".into(),
            Access::Write,
            r.join("new/dir/file.txt"),
        ),
        (
            ".github/workflows/ci.yml".into(),
            Access::Write,
            r.join(".github/workflows/ci.yml"),
        ),
        (".gitignore".into(), Access::Write, r.join(".gitignore")),
        ("env.example".into(), Access::Write, r.join("env.example")),
        ("a".into(), Access::Read, r.join("a")),
        (".".into(), Access::Read, r.clone()),
        (root.clone(), Access::Read, r.clone()),
        ("x".repeat(255), Access::Write, r.join("x".repeat(255))),
    ];
    for (path, access, expected) in cases {
        let got = sandbox
            .resolve(&path, access)
            .unwrap_or_else(|e| panic!("{path:?} ({access:?}) refused: {e}"));
        assert_eq!(got, expected, "{path:?}");
    }
}

#[test]
fn directories_cannot_be_written() {
    let fx = fixture();
    let sandbox = Sandbox::new(&fx.root, &[]).unwrap();
    for path in ["a", "a/", "src/", "new_dir/", ".", "dir_in", "a/."] {
        let err = sandbox.resolve(path, Access::Write).unwrap_err();
        assert!(err.reason.contains("directory"), "{path}: {err}");
    }
}

#[test]
fn refusal_names_the_path_and_reason() {
    let fx = fixture();
    let sandbox = Sandbox::new(&fx.root, &Sandbox::default_deny()).unwrap();
    let err = sandbox.resolve("../x", Access::Read).unwrap_err();
    assert_eq!(err.to_string(), "`../x` refused: `..` is not allowed");
    let err = sandbox.resolve("server.pem", Access::Read).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`server.pem` refused: matches deny pattern `*.pem`"
    );
    let long = "z".repeat(5000);
    let err = sandbox.resolve(&long, Access::Read).unwrap_err();
    assert!(err.path.len() < 300, "echoed path is shortened");
    let err = sandbox.resolve("a\0b", Access::Read).unwrap_err();
    assert!(!err.path.contains('\0'));
}

#[test]
fn deny_globs_are_configurable_and_validated() {
    let fx = fixture();
    let sandbox = Sandbox::new(&fx.root, &["secrets/**".to_owned()]).unwrap();
    assert!(sandbox.resolve("secrets/a/b.txt", Access::Read).is_err());
    assert!(
        sandbox.resolve("server.pem", Access::Read).is_ok(),
        "defaults replaced"
    );
    assert_eq!(sandbox.denied_by("secrets/x"), Some("secrets/**"));
    assert_eq!(sandbox.deny_patterns(), vec!["secrets/**"]);

    let err = Sandbox::new(&fx.root, &["ok".to_owned(), "bad[".to_owned()]).unwrap_err();
    assert!(matches!(err, SandboxError::Glob { .. }));
    assert!(err.to_string().contains("`bad[`"), "{err}");

    let err = Sandbox::new(&fx.root.join("missing"), &[]).unwrap_err();
    assert!(matches!(err, SandboxError::Root { .. }), "{err}");
}

#[test]
fn root_is_canonical_and_relative_paths_use_slashes() {
    let fx = fixture();
    let alias = fx.root.parent().unwrap().join("alias");
    symlink(&fx.root, &alias).unwrap();
    let sandbox = Sandbox::new(&alias, &[]).unwrap();
    assert_eq!(sandbox.root(), fx.root);
    // An absolute path through the alias resolves inside.
    let via_alias = format!("{}/src/main.rs", alias.display());
    assert_eq!(
        sandbox.resolve(&via_alias, Access::Read).unwrap(),
        fx.root.join("src/main.rs")
    );
    assert_eq!(sandbox.relative(&fx.root.join("a/b/c.txt")), "a/b/c.txt");
    assert_eq!(sandbox.relative(&fx.root), ".");
    assert_eq!(sandbox.relative(Path::new("/etc/passwd")), "/etc/passwd");
}
