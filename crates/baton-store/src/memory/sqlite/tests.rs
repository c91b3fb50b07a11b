use super::*;
use baton_core::memory::recall::select;
use baton_core::verdict::Severity;

fn store() -> SqliteMemory {
    SqliteMemory::open_in_memory(DEFAULT_CAP).unwrap()
}

fn draft(kind: Kind, text: &str) -> Draft {
    Draft::new(kind, Source::HumanFeedback, text)
}

fn query(files: &[&str]) -> Query {
    Query {
        files: files.iter().map(|s| (*s).to_owned()).collect(),
        epic: None,
        stage: "dev".into(),
        reviewer: false,
        budget_tokens: 10_000,
    }
}

#[test]
fn the_same_lesson_twice_strengthens_one_memory() {
    let mut m = store();
    let a = m
        .remember(draft(Kind::Pattern, "Run migrations first."), 10)
        .unwrap();
    let mut again = draft(Kind::Pattern, "run  migrations FIRST");
    again.importance = 8;
    let b = m.remember(again, 20).unwrap();
    assert_eq!(a, Curated::Added(a.id()));
    assert_eq!(b, Curated::Strengthened(a.id()));
    let all = m.list(&Filter::default()).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        (all[0].strength, all[0].importance, all[0].updated_at),
        (2, 8, 20)
    );
    assert_eq!(all[0].text, "Run migrations first.");
    let actions: Vec<String> = m.log().unwrap().into_iter().map(|e| e.action).collect();
    assert_eq!(actions, vec!["added", "strengthened"]);
}

#[test]
fn forgotten_memories_are_no_longer_listed_searched_or_recalled() {
    let mut m = store();
    let id = m
        .remember(draft(Kind::Preference, "Prefer tabs in Makefiles"), 1)
        .unwrap()
        .id();
    assert_eq!(m.search("makefiles", 10).unwrap().len(), 1);
    assert!(m.forget(id, 2).unwrap());
    assert!(!m.forget(id, 3).unwrap());
    assert!(m.search("makefiles", 10).unwrap().is_empty());
    assert!(m.get(id).unwrap().is_none());
    assert!(
        m.candidates(&query(&[]), "makefiles", 3)
            .unwrap()
            .is_empty()
    );
    let last = m.log().unwrap().pop().unwrap();
    assert_eq!((last.action.as_str(), last.memory), ("forgotten", Some(id)));
}

#[test]
fn search_is_full_text_and_takes_any_input_as_words() {
    let mut m = store();
    m.remember(draft(Kind::Pattern, "Close the connection pool in Drop"), 1)
        .unwrap();
    m.remember(draft(Kind::Pattern, "Name tests after behaviour"), 1)
        .unwrap();
    let hits = m.search("pool", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert!(hits[0].text.contains("pool"));
    for nasty in ["\"", "pool OR", "NEAR(", "*", "a:b", ")) --", ""] {
        m.search(nasty, 10).unwrap();
    }
}

#[test]
fn candidates_follow_scopes_and_carry_the_text_match() {
    let mut m = store();
    let mut db = draft(Kind::ProblemSolution, "The pool leaks connections");
    db.scope = Scope::files(vec!["src/db/**".into()]);
    let db = m.remember(db, 0).unwrap().id();
    let mut epic2 = draft(Kind::Decision, "Epic two uses events");
    epic2.scope.epic = Some("2".into());
    let epic2 = m.remember(epic2, 0).unwrap().id();
    let project = m
        .remember(draft(Kind::Pattern, "Keep commits small"), 0)
        .unwrap()
        .id();
    let ids = |q: &Query, words: &str| -> Vec<i64> {
        let mut v: Vec<i64> = m
            .candidates(q, words, 0)
            .unwrap()
            .iter()
            .map(|c| c.id)
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&query(&["src/db/pool.rs"]), ""), vec![db, project]);
    assert_eq!(ids(&query(&["src/web/app.rs"]), ""), vec![project]);
    let mut in_epic = query(&[]);
    in_epic.epic = Some("2".into());
    assert_eq!(ids(&in_epic, ""), vec![epic2, project]);
    let c = m
        .candidates(&query(&["src/db/pool.rs"]), "pool connections", 86_400 * 9)
        .unwrap();
    let leak = c.iter().find(|c| c.id == db).unwrap();
    assert!(leak.text_match > 0.9);
    assert_eq!(leak.text, "The pool leaks connections");
    assert!((leak.age_days - 9.0).abs() < 1e-9);
    assert_eq!(c.iter().find(|c| c.id == project).unwrap().text_match, 0.0);
}

#[test]
fn each_scope_is_capped_least_important_and_oldest_first() {
    let mut m = SqliteMemory::open_in_memory(3).unwrap();
    let mut ids = Vec::new();
    for (i, importance) in [(0, 5), (1, 9), (2, 5), (3, 7)] {
        let mut d = draft(Kind::Preference, &format!("preference {i}"));
        d.importance = importance;
        ids.push(m.remember(d, i).unwrap().id());
    }
    // Another scope is not counted against this one.
    let mut other = draft(Kind::Preference, "scoped");
    other.scope = Scope::files(vec!["a.rs".into()]);
    m.remember(other, 9).unwrap();
    let left: Vec<String> = m
        .list(&Filter::default())
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(
        left,
        vec!["scoped", "preference 3", "preference 2", "preference 1"]
    );
    let pruned: Vec<LogEntry> = m
        .log()
        .unwrap()
        .into_iter()
        .filter(|e| e.action == "pruned")
        .collect();
    assert_eq!(pruned.len(), 1);
    assert_eq!(pruned[0].memory, Some(ids[0]));
    assert!(
        pruned[0].detail.contains("preference 0"),
        "{}",
        pruned[0].detail
    );
}

#[test]
fn recalls_are_recorded_per_unit() {
    let mut m = store();
    let r = RecallRecord {
        run_id: "r1".into(),
        unit: "1-2-a".into(),
        stage: "dev".into(),
        memories: vec![3, 1],
        at: 5,
    };
    m.record_recall(&r).unwrap();
    assert_eq!(m.recalls("1-2-a").unwrap(), vec![r]);
    assert!(m.recalls("other").unwrap().is_empty());
}

fn finding(file: &str, issue: &str) -> Finding {
    Finding {
        severity: Severity::High,
        file: file.into(),
        line: Some(1),
        issue: issue.into(),
        suggestion: None,
    }
}

#[test]
fn findings_gone_from_the_next_review_are_the_resolved_ones() {
    let mut m = store();
    let first = [
        finding("a.rs", "Leaks the pool"),
        finding("b.rs", "No test"),
    ];
    assert!(m.settle_findings("1-1-x", &first).unwrap().is_empty());
    // The next round reworded one finding's spacing and fixed the other.
    let resolved = m
        .settle_findings("1-1-x", &[finding("./a.rs", "leaks  the pool.")])
        .unwrap();
    assert_eq!(resolved, vec![finding("b.rs", "No test")]);
    let resolved = m.settle_findings("1-1-x", &[]).unwrap();
    assert_eq!(resolved.len(), 1);
    assert!(m.settle_findings("1-1-x", &[]).unwrap().is_empty());
}

#[test]
fn a_file_that_is_not_a_database_is_set_aside_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    std::fs::write(
        &path,
        b"this is not sqlite, just text that is long enough to look like a header",
    )
    .unwrap();
    let err = SqliteMemory::open(&path, DEFAULT_CAP, 77).unwrap_err();
    let MemoryError::SetAside { moved_to, .. } = &err else {
        panic!("{err}");
    };
    assert!(err.to_string().contains("memory.db.corrupt-77"), "{err}");
    assert!(moved_to.is_file());
    assert!(!path.exists());
    // The next open starts afresh.
    let mut m = SqliteMemory::open(&path, DEFAULT_CAP, 78).unwrap();
    m.remember(draft(Kind::Pattern, "fresh"), 78).unwrap();
}

#[test]
fn ten_thousand_memories_recall_within_the_budget() {
    let mut m = store();
    for i in 0..10_000 {
        let mut d = draft(
            Kind::ProblemSolution,
            &format!("problem {i} in module {}", i % 97),
        );
        d.scope = Scope::files(vec![format!("src/m{}/**", i % 500)]);
        m.remember(d, i).unwrap();
    }
    let mut q = query(&["src/m7/lib.rs"]);
    q.budget_tokens = 120;
    let c = m.candidates(&q, "module", 10_000).unwrap();
    assert_eq!(c.len(), 20);
    let chosen = select(c, &q);
    let section = baton_core::memory::recall::render(&chosen, false);
    assert!(!chosen.is_empty());
    assert!(baton_core::memory::recall::tokens(&section) <= 120);
}

#[test]
fn a_glob_is_found_through_the_directory_it_starts_in() {
    assert_eq!(glob_dir("src/db/**"), "src/db/");
    assert_eq!(glob_dir("./src/db/*.rs"), "src/db/");
    assert_eq!(glob_dir("src/db_*.rs"), "src/");
    assert_eq!(glob_dir("Cargo.toml"), "");
    assert_eq!(glob_dir("**/*.sql"), "");
    assert_eq!(dirs_of("src/db/pool.rs"), vec!["", "src/", "src/db/"]);
    let mut m = store();
    for glob in ["**/*.sql", "src/db_*.rs", "src/db/**", "docs/**"] {
        let mut d = draft(Kind::Pattern, &format!("about {glob}"));
        d.scope = Scope::files(vec![glob.to_owned()]);
        m.remember(d, 0).unwrap();
    }
    let texts = |files: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = m
            .candidates(&query(files), "", 0)
            .unwrap()
            .into_iter()
            .map(|c| c.text)
            .collect();
        v.sort();
        v
    };
    assert_eq!(texts(&["migrations/1.sql"]), vec!["about **/*.sql"]);
    assert_eq!(
        texts(&["src/db_pool.rs", "src/db/x.rs"]),
        vec!["about src/db/**", "about src/db_*.rs"]
    );
    assert!(texts(&["src/web.rs"]).is_empty());
}

#[test]
fn a_read_only_store_reads_and_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    assert!(
        SqliteMemory::open_read_only(&path).is_err(),
        "nothing is created"
    );
    assert!(!path.exists());
    let mut m = SqliteMemory::open(&path, DEFAULT_CAP, 0).unwrap();
    let id = m.remember(draft(Kind::Pattern, "read me"), 0).unwrap().id();
    drop(m);
    let mut r = SqliteMemory::open_read_only(&path).unwrap();
    assert_eq!(r.get(id).unwrap().unwrap().text, "read me");
    assert!(r.remember(draft(Kind::Pattern, "write me"), 1).is_err());
    std::fs::write(
        dir.path().join("junk.db"),
        "not a database at all, just some text here",
    )
    .unwrap();
    assert!(SqliteMemory::open_read_only(&dir.path().join("junk.db")).is_err());
    assert!(
        dir.path().join("junk.db").exists(),
        "a viewer sets nothing aside"
    );
}

#[test]
fn a_draft_remembered_once_per_origin_changes_nothing_the_second_time() {
    let mut m = store();
    let d = draft(Kind::Decision, "lead with one account");
    let first = m
        .remember_once(d.clone(), "memlog|a|decision|lead", 1)
        .unwrap();
    assert!(matches!(first, Some(Curated::Added(_))));
    let log = m.log().unwrap().len();
    assert_eq!(
        m.remember_once(d.clone(), "memlog|a|decision|lead", 2)
            .unwrap(),
        None
    );
    let stored = m.list(&Filter::default()).unwrap();
    assert_eq!(
        (stored.len(), stored[0].strength, stored[0].updated_at),
        (1, 1, 1)
    );
    assert_eq!(m.log().unwrap().len(), log, "nothing logged");
    // The same lesson from another memlog is learned again.
    let other = m.remember_once(d, "memlog|b|decision|lead", 3).unwrap();
    assert!(matches!(other, Some(Curated::Strengthened(_))));
}

#[test]
fn a_version_one_database_gains_the_imports_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let v1 = SCHEMA.replace(
            "CREATE TABLE IF NOT EXISTS imports (\n    origin TEXT PRIMARY KEY,\n    memory_id INTEGER,\n    at INTEGER NOT NULL\n);\n",
            "",
        );
        assert_ne!(v1, SCHEMA);
        conn.execute_batch(&v1).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
    }
    let mut m = SqliteMemory::open(&path, 10, 1).unwrap();
    assert!(
        m.remember_once(draft(Kind::Pattern, "x"), "o", 1)
            .unwrap()
            .is_some()
    );
}
