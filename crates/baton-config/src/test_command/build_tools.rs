//! Make, Cargo, Go, .NET, Gradle and Maven: one manifest at the root, one command each.

use super::{Proposal, exists, file_names, read, tick};
use std::path::Path;

/// The makefiles GNU make looks for, in its order: the first one present is the one it reads.
const MAKEFILES: [&str; 3] = ["GNUmakefile", "makefile", "Makefile"];

/// `make test` when the makefile make would read has a `test` target.
pub(super) fn make(root: &Path) -> Option<Proposal> {
    let name = MAKEFILES.into_iter().find(|m| exists(root, m))?;
    let text = read(root, name)?;
    has_target(&text, "test").then(|| {
        Proposal::new(
            &["make", "test"],
            "make",
            &[name],
            format!("{} has a `test` target", tick(name)),
        )
    })
}

/// Whether a rule in the makefile `text` names `target` (`test:`, `test check:`, `test::`),
/// leaving aside recipes, variable assignments (`test := x`) and `define` blocks.
fn has_target(text: &str, target: &str) -> bool {
    let mut in_define = false;
    let mut logical = String::new();
    for line in text.lines() {
        if let Some(start) = line.strip_suffix('\\') {
            logical.push_str(start);
            logical.push(' ');
            continue;
        }
        logical.push_str(line);
        let line = std::mem::take(&mut logical);
        let word = line.split_whitespace().next().unwrap_or_default();
        if in_define {
            in_define = word != "endef";
            continue;
        }
        if word == "define" {
            in_define = true;
            continue;
        }
        if line.starts_with('\t') {
            continue;
        }
        let line = line.split('#').next().unwrap_or_default();
        let Some((targets, rest)) = line.split_once(':') else {
            continue;
        };
        // `test := x`, `test ::= x`: assignments, not rules.
        if rest.trim_start_matches(':').starts_with('=') || targets.contains(['=', '$', '%']) {
            continue;
        }
        if targets.split_whitespace().any(|t| t == target) {
            return true;
        }
    }
    false
}

/// `cargo test` for a package or a virtual workspace; `cargo test --workspace` for a root package
/// whose workspace has members and no `default-members`, where plain `cargo test` would test the
/// root package alone.
pub(super) fn cargo(root: &Path) -> Option<Proposal> {
    let manifest: toml::Table = read(root, "Cargo.toml")?.parse().ok()?;
    let workspace = manifest.get("workspace").and_then(toml::Value::as_table);
    let package = manifest.contains_key("package");
    if !package && workspace.is_none() {
        return None;
    }
    let members = workspace
        .and_then(|w| w.get("members"))
        .and_then(toml::Value::as_array)
        .is_some_and(|m| !m.is_empty());
    let defaults = workspace.is_some_and(|w| w.contains_key("default-members"));
    Some(if package && members && !defaults {
        Proposal::new(
            &["cargo", "test", "--workspace"],
            "cargo",
            &["Cargo.toml"],
            "`Cargo.toml` is a package with workspace members, which plain `cargo test` would leave out"
                .to_owned(),
        )
    } else {
        let what = if package { "package" } else { "workspace" };
        Proposal::new(
            &["cargo", "test"],
            "cargo",
            &["Cargo.toml"],
            format!("`Cargo.toml` is a Cargo {what}"),
        )
    })
}

/// `go test ./...` for a Go module: every package in it.
pub(super) fn go(root: &Path) -> Option<Proposal> {
    exists(root, "go.mod").then(|| {
        Proposal::new(
            &["go", "test", "./..."],
            "go",
            &["go.mod"],
            "`go.mod` is a Go module".to_owned(),
        )
    })
}

/// `dotnet test` for the solution or project at the root; it names one when there are several,
/// since `dotnet test` then refuses to guess.
pub(super) fn dotnet(root: &Path) -> Option<Proposal> {
    let names = file_names(root);
    let with = |exts: &[&str]| -> Vec<&String> {
        names
            .iter()
            .filter(|n| {
                Path::new(n.as_str())
                    .extension()
                    .is_some_and(|e| exts.iter().any(|x| e.eq_ignore_ascii_case(x)))
            })
            .collect()
    };
    let solutions = with(&["sln", "slnx"]);
    let projects = with(&["csproj", "fsproj", "vbproj"]);
    let candidates = if solutions.is_empty() {
        &projects
    } else {
        &solutions
    };
    let kind = if solutions.is_empty() {
        "project"
    } else {
        "solution"
    };
    match (candidates.as_slice(), solutions.len() + projects.len()) {
        ([], _) => None,
        ([only], 1) => Some(Proposal::new(
            &["dotnet", "test"],
            "dotnet",
            &[only.as_str()],
            format!("{} is the {kind} at the root", tick(only)),
        )),
        ([only], _) => Some(Proposal::new(
            &["dotnet", "test", only.as_str()],
            "dotnet",
            &[only.as_str()],
            format!(
                "{} is the solution at the root, named because project files sit beside it",
                tick(only)
            ),
        )),
        (several, _) => {
            // The one named after the folder is the project's own; else the first by name.
            let folder = root
                .file_name()
                .map(|f| f.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            let chosen = several
                .iter()
                .find(|n| {
                    Path::new(n.as_str())
                        .file_stem()
                        .is_some_and(|s| s.to_string_lossy().to_lowercase() == folder)
                })
                .unwrap_or(&several[0]);
            let all = several
                .iter()
                .map(|n| tick(n))
                .collect::<Vec<_>>()
                .join(", ");
            Some(Proposal::new(
                &["dotnet", "test", chosen.as_str()],
                "dotnet",
                &[chosen.as_str()],
                format!(
                    "{} is one of {} {kind}s at the root ({all}); name another to test it instead",
                    tick(chosen),
                    several.len()
                ),
            ))
        }
    }
}

/// `./gradlew test` with the Gradle wrapper, else `gradle test`.
pub(super) fn gradle(root: &Path) -> Option<Proposal> {
    let build = [
        "build.gradle.kts",
        "build.gradle",
        "settings.gradle.kts",
        "settings.gradle",
    ]
    .into_iter()
    .find(|f| exists(root, f))?;
    Some(if exists(root, "gradlew") {
        Proposal::new(
            &["./gradlew", "test"],
            "gradle",
            &[build, "gradlew"],
            format!(
                "{} is a Gradle build, run through its wrapper `gradlew`",
                tick(build)
            ),
        )
    } else {
        Proposal::new(
            &["gradle", "test"],
            "gradle",
            &[build],
            format!("{} is a Gradle build (no `gradlew` wrapper)", tick(build)),
        )
    })
}

/// `./mvnw test` with the Maven wrapper, else `mvn test`.
pub(super) fn maven(root: &Path) -> Option<Proposal> {
    if !exists(root, "pom.xml") {
        return None;
    }
    Some(if exists(root, "mvnw") {
        Proposal::new(
            &["./mvnw", "test"],
            "maven",
            &["pom.xml", "mvnw"],
            "`pom.xml` is a Maven build, run through its wrapper `mvnw`".to_owned(),
        )
    } else {
        Proposal::new(
            &["mvn", "test"],
            "maven",
            &["pom.xml"],
            "`pom.xml` is a Maven build (no `mvnw` wrapper)".to_owned(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::commands;
    use super::*;

    #[test]
    fn a_test_target_is_a_rule_naming_test() {
        for (text, found) in [
            ("test:\n\tgo test ./...\n", true),
            ("test: build lint\n", true),
            ("check test :\n", true),
            ("test::\n", true),
            (".PHONY: test\ntest: ## run the tests\n\t@pytest\n", true),
            ("all: \\\n  build \\\n  lint\ntest:\n", true),
            (".PHONY: test\n", false),
            ("test-unit:\n\tpytest\n", false),
            ("test := pytest\n", false),
            ("test ?= pytest\n", false),
            ("test ::= pytest\n", false),
            ("TESTS = a:b\n", false),
            ("build:\n\techo test: done\n", false),
            ("# test:\n", false),
            ("define help\ntest: not a rule\nendef\n", false),
            ("$(OUT)/test: x\n", false),
        ] {
            assert_eq!(has_target(text, "test"), found, "{text:?}");
        }
    }

    #[test]
    fn the_makefile_gnu_make_reads_is_the_one_looked_at() {
        assert_eq!(commands(&[("makefile", "test:\n")]), ["make test"]);
        assert_eq!(commands(&[("GNUmakefile", "test:\n")]), ["make test"]);
        // GNU make reads `GNUmakefile` and ignores `Makefile`, whatever it holds.
        assert!(commands(&[("GNUmakefile", "all:\n"), ("Makefile", "test:\n")]).is_empty());
        assert!(commands(&[("Makefile", "all:\n\techo\n")]).is_empty());
    }

    #[test]
    fn cargo_packages_and_workspaces() {
        let package = "[package]\nname = \"a\"\n";
        assert_eq!(commands(&[("Cargo.toml", package)]), ["cargo test"]);
        assert_eq!(
            commands(&[("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n")]),
            ["cargo test"]
        );
        assert_eq!(
            commands(&[(
                "Cargo.toml",
                "[package]\nname = \"a\"\n[workspace]\nmembers = [\"b\"]\n"
            )]),
            ["cargo test --workspace"]
        );
        assert_eq!(
            commands(&[(
                "Cargo.toml",
                "[package]\nname = \"a\"\n[workspace]\nmembers = [\"b\"]\ndefault-members = [\"b\"]\n"
            )]),
            ["cargo test"]
        );
        assert!(commands(&[("Cargo.toml", "[dependencies]\n")]).is_empty());
        assert!(commands(&[("Cargo.toml", "not toml [")]).is_empty());
    }

    #[test]
    fn dotnet_names_the_solution_only_when_it_must() {
        assert_eq!(commands(&[("App.sln", "")]), ["dotnet test"]);
        assert_eq!(commands(&[("App.slnx", "")]), ["dotnet test"]);
        assert_eq!(commands(&[("App.fsproj", "")]), ["dotnet test"]);
        assert_eq!(
            commands(&[("App.sln", ""), ("App.csproj", "")]),
            ["dotnet test App.sln"]
        );
        assert_eq!(
            commands(&[("B.sln", ""), ("A.sln", "")]),
            ["dotnet test A.sln"]
        );
        assert_eq!(
            commands(&[("B.csproj", ""), ("A.csproj", "")]),
            ["dotnet test A.csproj"]
        );
        // In a folder named after one of them, that one.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("shop");
        std::fs::create_dir(&root).unwrap();
        for f in ["Admin.sln", "Shop.sln"] {
            std::fs::write(root.join(f), "").unwrap();
        }
        let found = dotnet(&root).unwrap();
        assert_eq!(found.display(), "dotnet test Shop.sln");
        assert!(found.reason.contains("`Admin.sln`"), "{}", found.reason);
    }

    #[test]
    fn gradle_and_maven_prefer_their_wrappers() {
        assert_eq!(commands(&[("build.gradle.kts", "")]), ["gradle test"]);
        assert_eq!(
            commands(&[("settings.gradle", ""), ("gradlew", "")]),
            ["./gradlew test"]
        );
        assert_eq!(commands(&[("pom.xml", "")]), ["mvn test"]);
        assert_eq!(commands(&[("pom.xml", ""), ("mvnw", "")]), ["./mvnw test"]);
        assert_eq!(commands(&[("go.mod", "module x\n")]), ["go test ./..."]);
    }
}
