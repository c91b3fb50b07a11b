use super::*;
use baton_core::stamp::Stamp;
use baton_core::status::Status;

const HAND: &str = "# generated: 01-02-2026\n# project: demo\n#\n# STATUS DEFINITIONS: ...\n\ngenerated: 01-02-2026 10:00\nlast_updated: 01-03-2026 11:00 # bumped by tools\nproject: demo\nproject_key: NOKEY\ntracking_system: file-system\nstory_location: _bmad-output/implementation-artifacts\ncustom_team_field: keep me\n\ndevelopment_status:\n  # Epic 1\n  epic-1: backlog\n  1-1-login: ready-for-dev # next up\n  1-2-x: ready-for-dev\n  1-2a-x-followup: backlog\n  1-3-y: {status: backlog, size: M}\n  epic-1-retrospective: optional\n\n  epic-2: in-progress\n  2-1-z: awaiting-operator\n  sprint-07: whatever\n";

fn now() -> Stamp {
    Stamp::new(2026, 11, 22, 9, 30).unwrap()
}

fn change(key: &str, to: Status) -> Change {
    Change {
        key: key.into(),
        to,
        reason: None,
        note: None,
    }
}

fn doc(text: &str) -> SprintDoc {
    SprintDoc::parse(Path::new("sprint-status.yaml"), text.to_owned()).unwrap()
}

#[test]
fn one_edit_changes_only_that_value_and_last_updated() {
    let mut d = doc(HAND);
    d.apply(
        &[change("1-2-x", Status::InProgress)],
        now(),
        EditOptions::default(),
    )
    .unwrap();
    let want = HAND
        .replace("  1-2-x: ready-for-dev\n", "  1-2-x: in-progress\n")
        .replace("01-03-2026 11:00", "11-22-2026 09:30");
    assert_eq!(d.text(), want);
    assert_eq!(
        d.sprint().get("1-2-x").unwrap().value.known(),
        Some(Status::InProgress)
    );
    // The in-memory spans still match a fresh parse of the new text.
    let fresh = doc(d.text());
    assert_eq!(fresh.scan.entries, d.resolved_entries());
    assert_eq!(fresh.scan.fields, d.scan.fields);
}

#[test]
fn struct_values_quotes_and_comments_survive_edits() {
    let mut d = doc(HAND);
    d.apply(
        &[
            change("1-3-y", Status::ReadyForDev),
            change("1-1-login", Status::InProgress),
        ],
        now(),
        EditOptions::default(),
    )
    .unwrap();
    assert!(
        d.text()
            .contains("  1-3-y: {status: ready-for-dev, size: M}\n")
    );
    assert!(d.text().contains("  1-1-login: in-progress # next up\n"));
    let fresh = doc(d.text());
    assert_eq!(fresh.scan.entries, d.resolved_entries());
}

#[test]
fn extended_states_project_with_a_marker_and_clear_it_after() {
    let mut d = doc(HAND);
    let ni = Change {
        reason: Some("max review rounds".into()),
        ..change("1-1-login", Status::NeedsIntervention)
    };
    d.apply(&[ni], now(), EditOptions::default()).unwrap();
    assert!(
        d.text().contains(
            "  1-1-login: ready-for-dev # next up # baton: needs-intervention (max review rounds)\n"
        ),
        "{}",
        d.text()
    );
    let e = d.sprint().get("1-1-login").unwrap();
    assert_eq!(e.extended, Some(Status::NeedsIntervention));
    assert_eq!(doc(d.text()).sprint().get("1-1-login"), Some(e));
    d.apply(
        &[change("1-1-login", Status::InProgress)],
        now(),
        EditOptions::default(),
    )
    .unwrap();
    assert!(d.text().contains("  1-1-login: in-progress # next up\n"));
    assert_eq!(d.sprint().get("1-1-login").unwrap().extended, None);
}

#[test]
fn literal_extended_statuses_when_asked() {
    let mut d = doc(HAND);
    let opts = EditOptions {
        write_extended: true,
    };
    d.apply(&[change("1-2-x", Status::StoryDocReview)], now(), opts)
        .unwrap();
    assert!(d.text().contains("  1-2-x: story-doc-review\n"));
    assert_eq!(
        d.sprint().get("1-2-x").unwrap().effective(),
        StatusValue::Known(Status::StoryDocReview)
    );
}

#[test]
fn notes_become_comments() {
    let mut d = doc(HAND);
    let c = Change {
        note: Some("paired with Ana".into()),
        ..change("1-2-x", Status::InProgress)
    };
    d.apply(&[c], now(), EditOptions::default()).unwrap();
    assert!(
        d.text()
            .contains("  1-2-x: in-progress  # paired with Ana\n")
    );
    let c = Change {
        note: Some("second".into()),
        ..change("1-1-login", Status::InProgress)
    };
    d.apply(&[c], now(), EditOptions::default()).unwrap();
    assert!(
        d.text()
            .contains("  1-1-login: in-progress # next up; second\n")
    );
}

#[test]
fn missing_last_updated_is_added_before_development_status() {
    let text = "generated: 01-02-2026 10:00\nproject: p\ndevelopment_status:\n  epic-1: backlog\n  1-1-a: backlog\n";
    let mut d = doc(text);
    d.apply(
        &[change("1-1-a", Status::ReadyForDev)],
        now(),
        EditOptions::default(),
    )
    .unwrap();
    assert_eq!(
        d.text(),
        "generated: 01-02-2026 10:00\nproject: p\nlast_updated: 11-22-2026 09:30\ndevelopment_status:\n  epic-1: backlog\n  1-1-a: ready-for-dev\n"
    );
}

#[test]
fn quoted_values_keep_their_quotes_and_crlf_survives() {
    let text =
        "last_updated: '01-02-2026 10:00'\r\ndevelopment_status:\r\n  epic-1: \"backlog\"\r\n";
    let mut d = doc(text);
    d.apply(
        &[change("epic-1", Status::InProgress)],
        now(),
        EditOptions::default(),
    )
    .unwrap();
    assert_eq!(
        d.text(),
        "last_updated: '11-22-2026 09:30'\r\ndevelopment_status:\r\n  epic-1: \"in-progress\"\r\n"
    );
}

#[test]
fn errors_name_the_line() {
    let err = SprintDoc::parse(
        Path::new("s.yaml"),
        "a: b\ndevelopment_status:\n  x: [unclosed\n".into(),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("s.yaml:3"), "{msg}");
    let err = SprintDoc::parse(
        Path::new("s.yaml"),
        "development_status:\n  1-1-a: &x done\n".into(),
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("s.yaml:2"), "{err}");
}

#[test]
fn duplicate_and_unknown_keys_are_refused_for_edits() {
    let mut d = doc("development_status:\n  epic-1: backlog\n  epic-1: done\n");
    let err = d
        .apply(
            &[change("epic-1", Status::InProgress)],
            now(),
            EditOptions::default(),
        )
        .unwrap_err();
    assert!(matches!(err, EditError::Duplicate { count: 2, .. }));
    let err = d
        .apply(
            &[change("epic-9", Status::InProgress)],
            now(),
            EditOptions::default(),
        )
        .unwrap_err();
    assert!(matches!(err, EditError::NotFound { .. }));
}

#[test]
fn persist_refuses_when_the_file_changed_underneath() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sprint-status.yaml");
    std::fs::write(&p, HAND).unwrap();
    let mut d = SprintDoc::load(&p).unwrap();
    d.apply(
        &[change("1-2-x", Status::InProgress)],
        now(),
        EditOptions::default(),
    )
    .unwrap();
    std::fs::write(
        &p,
        HAND.replace("custom_team_field: keep me", "custom_team_field: edited"),
    )
    .unwrap();
    assert!(matches!(d.persist(), Err(PersistError::Conflict { .. })));
    assert!(std::fs::read_to_string(&p).unwrap().contains("edited"));
    let mut d = SprintDoc::load(&p).unwrap();
    d.apply(
        &[change("1-2-x", Status::InProgress)],
        now(),
        EditOptions::default(),
    )
    .unwrap();
    d.persist().unwrap();
    let back = std::fs::read_to_string(&p).unwrap();
    assert!(back.contains("edited") && back.contains("1-2-x: in-progress"));
    assert!(!d.changed_on_disk());
}

#[test]
fn the_epic_index_lists_what_the_model_lists() {
    let text = format!("{HAND}  2-2-w: backlog\n  1-4-late: done\n  2-1-z: review\n");
    let d = doc(&text);
    for n in [1u32, 2, 3] {
        let indexed: Vec<&str> = d.stories_of(n).map(|e| e.key.as_str()).collect();
        let walked: Vec<&str> = d.sprint().stories_of(n).map(|e| e.key.as_str()).collect();
        assert_eq!(indexed, walked, "epic {n}");
    }
    assert_eq!(d.stories_of(1u32).count(), 5);
}

#[test]
fn many_edits_in_a_row_keep_every_span_exact() {
    // `last_updated` grows on the first edit: the entries after it move too.
    let mut text = String::from("last_updated: 2026-01-02\ndevelopment_status:\n");
    for e in 1..=4 {
        text.push_str(&format!("  epic-{e}: backlog\n"));
        for s in 1..=6 {
            text.push_str(&format!("  {e}-{s}-s: ready-for-dev # keep {s}\n"));
        }
    }
    text.push_str("trailing_field: x\n");
    let mut d = doc(&text);
    let statuses = [Status::InProgress, Status::Review, Status::InProgress];
    for (round, to) in statuses.into_iter().enumerate() {
        for e in (1..=4).rev() {
            for s in [6, 1, 3] {
                let note = (s == 3).then(|| "x".repeat(round * 7 + e));
                let c = Change {
                    key: format!("{e}-{s}-s"),
                    to,
                    reason: None,
                    note,
                };
                d.apply(&[c], now(), EditOptions::default()).unwrap();
                let fresh = doc(d.text());
                assert_eq!(fresh.scan.entries, d.resolved_entries());
                assert_eq!(fresh.scan.fields, d.scan.fields);
                assert_eq!(fresh.sprint().entries, d.sprint().entries);
            }
        }
    }
}

/// A file large enough for the YAML parse to run beside the line scan.
fn large(extra: &str) -> String {
    let mut text = String::from("last_updated: 2026-01-02\ndevelopment_status:\n");
    for e in 1..=30 {
        text.push_str(&format!("  epic-{e}: backlog\n"));
        for s in 1..=40 {
            text.push_str(&format!("  {e}-{s}-a-story-with-a-long-name: backlog\n"));
        }
    }
    text.push_str(extra);
    assert!(text.len() > super::PARALLEL_PARSE_FROM);
    text
}

#[test]
fn a_large_file_reports_the_same_problems_as_a_small_one() {
    let d = doc(&large(""));
    assert_eq!(d.sprint().entries.len(), 30 * 41);
    assert_eq!(d.stories_of(30u32).count(), 40);

    let path = Path::new("sprint-status.yaml");
    // A YAML error wins over the scanner's, as for a small file.
    let err = SprintDoc::parse(path, large("  30-41-x: [unclosed\n")).unwrap_err();
    let lines = large("").lines().count();
    assert!(
        matches!(&err, LoadError::Syntax { line, .. } if *line > lines),
        "{err}"
    );
    // An entry YAML reads differently (an anchor) is refused with its line.
    let err = SprintDoc::parse(path, large("  30-41-x: &a backlog\n")).unwrap_err();
    assert!(
        matches!(&err, LoadError::Syntax { line, .. } if *line == lines + 1),
        "{err}"
    );
}

#[test]
fn keys_equal_as_text_are_compared_as_one() {
    // `11` and `'11'` are two keys to YAML and one to the scanner (and to BMad's tools, which
    // read keys as text): compared as one, the file loads and the key cannot be edited.
    let mut d = doc("development_status:\n  11: done\n  '11': done\n  epic-1: backlog\n");
    assert_eq!(d.sprint().entries.len(), 3);
    let err = d
        .apply(
            &[change("11", Status::Backlog)],
            now(),
            EditOptions::default(),
        )
        .unwrap_err();
    assert!(
        matches!(err, EditError::Duplicate { count: 2, .. }),
        "{err}"
    );
    // Read differently (last value wins for the text key), it is refused with its line.
    let err = SprintDoc::parse(
        Path::new("s.yaml"),
        "development_status:\n  11: done\n  '11': review\n".into(),
    )
    .unwrap_err();
    assert!(matches!(err, LoadError::Syntax { line: 2, .. }), "{err}");
}
