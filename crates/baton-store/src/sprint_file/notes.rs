//! Notes, reasons and keys that baton writes into the sprint file's comments: whatever their
//! characters, the file must load again, read the same statuses, and carry no forged marker.

use super::*;
use crate::journal::SqliteJournal;
use crate::ledger::{Ledger, LedgerOptions, Now, Request};
use baton_core::actor::Actor;
use baton_core::stamp::Stamp;
use baton_core::status::Status;
use proptest::prelude::*;

const TEXT: &str = "# header\nlast_updated: 01-03-2026 11:00\n\ndevelopment_status:\n  epic-1: in-progress\n  1-1-login: in-progress # hand note\n  1-2-x: \"ready-for-dev\"\n  1-3-y: {status: backlog, size: M}\n  1-4-z:\n    status: review\n";

fn now() -> Stamp {
    Stamp::new(2026, 11, 22, 9, 30).unwrap()
}

fn apply_and_persist(
    dir: &Path,
    key: &str,
    to: Status,
    note: Option<&str>,
    reason: Option<&str>,
) -> Result<String, String> {
    let path = dir.join("sprint-status.yaml");
    fs::write(&path, TEXT).map_err(|e| e.to_string())?;
    let mut d = SprintDoc::load(&path).map_err(|e| e.to_string())?;
    let change = Change {
        key: key.to_owned(),
        to,
        reason: reason.map(str::to_owned),
        note: note.map(str::to_owned),
    };
    d.apply(&[change], now(), EditOptions::default())
        .map_err(|e| e.to_string())?;
    d.persist().map_err(|e| e.to_string())?;
    let back = SprintDoc::load(&path).map_err(|e| format!("reload: {e}"))?;
    Ok(back.text().to_owned())
}

/// Regression (issue 8): each of these, given as a note, made the file unparsable.
#[test]
fn regression_control_characters_in_notes_keep_the_file_loadable() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [
        "\u{c}",
        "\u{1b}[31m",
        "\0",
        "\u{7f}",
        "\u{fffe}",
        "\u{ffff}",
        "\u{85}",
        "\u{2028}",
        "\u{feff}",
        "\u{9b}",
        "\u{fdd0}",
        "\u{1fffe}",
        "a\nb: c",
        "a\r\nb",
        "\r",
        "x\ty",
        "# not a key",
        "'",
        "\"",
        "key: value",
        "- item",
        "{ a: b }",
        "&anchor *alias !tag",
        "|",
        ">",
        "%YAML",
        "---",
        "...",
    ] {
        let note = format!("before {bad} after");
        for key in ["1-1-login", "1-2-x", "1-3-y", "1-4-z"] {
            let text = apply_and_persist(dir.path(), key, Status::Done, Some(&note), None)
                .unwrap_or_else(|e| panic!("{key} with {bad:?}: {e}"));
            let line = text.lines().find(|l| l.contains("before")).unwrap();
            assert!(line.contains("after"), "{line}");
            assert!(
                !line.chars().any(|c| c.is_control() && c != '\t'),
                "{line:?}"
            );
        }
    }
}

#[test]
fn escapes_are_visible_and_notes_cannot_forge_a_marker() {
    assert_eq!(
        comment_text("a\u{c}b\u{1b}c\0d\u{7f}e"),
        "a\\u{c}b\\u{1b}c\\u{0}d\\u{7f}e"
    );
    assert_eq!(comment_text("  one\n\n two\t "), "one two");
    assert_eq!(
        comment_text("x baton: needs-intervention"),
        "x baton - needs-intervention"
    );
    assert_eq!(comment_text("BATON:done"), "BATON -done");
    let long = "é".repeat(MAX_COMMENT_CHARS + 10);
    assert_eq!(comment_text(&long).chars().count(), MAX_COMMENT_CHARS + 1);

    let dir = tempfile::tempdir().unwrap();
    for forged in [
        "baton: needs-intervention",
        "x # baton: needs-intervention (forged)",
        "#baton: e2e-verify",
        "Baton: story-doc-review",
    ] {
        let text =
            apply_and_persist(dir.path(), "1-2-x", Status::InProgress, Some(forged), None).unwrap();
        let d = SprintDoc::parse(Path::new("s.yaml"), text.clone()).unwrap();
        let e = d.sprint().get("1-2-x").unwrap();
        assert_eq!(e.extended, None, "{forged} forged a marker: {text}");
    }
}

#[test]
fn reasons_in_markers_are_escaped_too() {
    let dir = tempfile::tempdir().unwrap();
    for reason in [
        "\u{c}",
        "\u{1b}",
        "\0",
        "\u{7f}",
        "\u{fffe}",
        "(nested) # x",
        "a\nb",
    ] {
        let text = apply_and_persist(
            dir.path(),
            "1-2-x",
            Status::NeedsIntervention,
            Some("n\u{1b}"),
            Some(reason),
        )
        .unwrap_or_else(|e| panic!("{reason:?}: {e}"));
        let d = SprintDoc::parse(Path::new("s.yaml"), text).unwrap();
        let e = d.sprint().get("1-2-x").unwrap();
        assert_eq!(e.extended, Some(Status::NeedsIntervention), "{reason:?}");
    }
}

#[test]
fn persist_refuses_text_that_would_not_load_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sprint-status.yaml");
    fs::write(&path, TEXT).unwrap();
    let mut d = SprintDoc::load(&path).unwrap();
    // Corrupt the in-memory text behind the editor's back, as a bug would.
    d.text.push_str("\u{1b}\n");
    let err = d.persist().unwrap_err();
    assert!(matches!(err, PersistError::Unreadable { .. }), "{err}");
    assert_eq!(fs::read_to_string(&path).unwrap(), TEXT);
}

fn ledger(dir: &Path) -> Ledger<SqliteJournal> {
    let path = dir.join("sprint-status.yaml");
    fs::write(&path, TEXT).unwrap();
    let opts = LedgerOptions {
        lock_path: dir.join("sprint.lock"),
        stories_dir: None,
        write_extended: false,
        auto_epic_done: false,
    };
    Ledger::open(&path, SqliteJournal::open_in_memory().unwrap(), opts).unwrap()
}

fn request(key: String, to: Status, note: String, reason: String) -> Request {
    Request {
        key,
        to,
        actor: Actor::Human,
        reason,
        note: Some(note),
        force: true,
        run_id: None,
    }
}

fn stamp_now() -> Now {
    Now {
        stamp: now(),
        rfc3339: "2026-11-22T09:30:00Z".into(),
    }
}

/// Any text, biased towards what breaks YAML: controls, separators, non-characters, quotes and
/// YAML indicators (`any::<String>()` alone leaves control characters out).
fn nasty() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        3 => any::<char>(),
        2 => (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('x')),
        1 => proptest::sample::select(vec![
            '\u{7f}', '\u{85}', '\u{9b}', '\u{2028}', '\u{2029}', '\u{feff}', '\u{fffe}',
            '\u{ffff}', '\u{fdd0}', '\u{10ffff}', '#', '\'', '"', ':', '-', '{', '[', '&', '*', '!',
            '|', '>', '%', '@', '`',
        ]),
        1 => Just(' '),
    ];
    proptest::collection::vec(ch, 0..60).prop_map(String::from_iter)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    /// No note, key or reason given to a transition can make the sprint file unparsable: the
    /// transition either succeeds and the file loads with the requested status, or (only for a
    /// key that is not in the file) it is refused and the file is unchanged.
    #[test]
    fn no_note_key_or_reason_makes_the_file_unparsable(
        note in nasty(),
        reason in nasty(),
        key in prop_oneof![
            Just("1-1-login".to_owned()),
            Just("1-3-y".to_owned()),
            Just("1-4-z".to_owned()),
            nasty(),
        ],
        to in prop_oneof![
            Just(Status::Done),
            Just(Status::NeedsIntervention),
            Just(Status::InProgress),
            Just(Status::E2eVerify),
        ],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut l = ledger(dir.path());
        let path = dir.path().join("sprint-status.yaml");
        let before = fs::read_to_string(&path).unwrap();
        let result = l.transition(&request(key.clone(), to, note, reason), &stamp_now());
        let back = SprintDoc::load(&path);
        prop_assert!(back.is_ok(), "file no longer loads: {:?}", back.err());
        let back = back.unwrap();
        let known = ["1-1-login", "1-3-y", "1-4-z"].contains(&key.as_str());
        prop_assert!(!known || result.is_ok(), "a note or reason blocked the move: {:?}", result.err());
        match result {
            Ok(_) => {
                let e = back.sprint().get(&key).unwrap();
                prop_assert_eq!(e.effective(), baton_core::status::StatusValue::Known(to));
            }
            Err(_) => prop_assert_eq!(fs::read_to_string(&path).unwrap(), before),
        }
    }
}

/// A file over the YAML parser's node budget is refused with a sentence, not parser internals.
#[test]
fn a_file_over_the_yaml_node_budget_gets_a_readable_message() {
    let mut text = String::from("development_status:\n");
    for i in 0..130_000 {
        text.push_str(&format!("  1-{i}-x: backlog\n"));
    }
    let err = SprintDoc::parse(Path::new("s.yaml"), text)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("s.yaml:"), "{err}");
    assert!(err.contains("too large for baton to read safely"), "{err}");
    assert!(err.contains("250000"), "{err}");
    assert!(!err.contains("Nodes {"), "{err}");
}

#[test]
fn deep_nesting_and_alias_storms_get_readable_messages() {
    let deep = format!("a: {}1{}\n", "[".repeat(200), "]".repeat(200));
    let err = SprintDoc::parse(Path::new("s.yaml"), deep)
        .unwrap_err()
        .to_string();
    assert!(err.contains("nested too deeply"), "{err}");
}
