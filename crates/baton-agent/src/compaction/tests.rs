use super::*;
use serde_json::json;

/// `n` bytes of text in lines of 50.
fn text(n: usize) -> String {
    let line = format!("{}\n", "x".repeat(49));
    line.repeat(n / 50 + 1)[..n].to_owned()
}

/// One turn: the calls `(tool, arguments, result)` and their results.
fn turn(n: u32, calls: &[(&str, serde_json::Value, String)]) -> Vec<Message> {
    let mut out = vec![Message::Assistant {
        text: format!("turn {n}"),
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(k, (tool, args, _))| ToolCall::new(format!("c{n}_{k}"), *tool, args.to_string()))
            .collect(),
    }];
    for (k, (tool, _, content)) in calls.iter().enumerate() {
        out.push(Message::ToolResult {
            call_id: format!("c{n}_{k}"),
            name: (*tool).to_owned(),
            content: content.clone(),
            is_error: false,
        });
    }
    out
}

fn read(path: &str, bytes: usize) -> (&'static str, serde_json::Value, String) {
    ("read_file", json!({ "path": path }), text(bytes))
}

fn task() -> Vec<Message> {
    vec![Message::User {
        text: "implement the story".into(),
    }]
}

fn results(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult {
                call_id, content, ..
            } => Some((call_id.clone(), content.clone())),
            _ => None,
        })
        .collect()
}

fn bytes_of(messages: &[Message]) -> String {
    serde_json::to_string(messages).unwrap()
}

#[test]
fn nothing_is_compacted_below_the_threshold_or_when_off() {
    let mut messages = task();
    messages.extend(turn(1, &[read("a.md", 20_000)]));
    for n in 2..=5 {
        messages.extend(turn(n, &[read("b.md", 10)]));
    }
    let before = messages.clone();
    let mut c = Compactor::new(Compaction::after(20_000));
    assert_eq!(c.prepare(&mut messages), None);
    let mut off = Compactor::new(Compaction::off());
    assert_eq!(off.prepare(&mut messages), None);
    assert_eq!(Compaction::after(0), Compaction::off());
    assert_eq!(messages, before);
    assert!(c.stats().is_empty());
}

#[test]
fn past_the_threshold_old_results_become_stubs_and_the_last_turns_stay() {
    let mut messages = task();
    messages.extend(turn(
        1,
        &[
            read("docs/architecture.md", 61_000),
            read("story.md", 13_000),
        ],
    ));
    messages.extend(turn(2, &[read("src/lib.rs", 3_000)]));
    messages.extend(turn(3, &[read("src/main.rs", 4_000)]));
    messages.extend(turn(4, &[read("src/cli.rs", 5_000)]));
    let mut c = Compactor::new(Compaction::after(32 * 1024));
    let batch = c.prepare(&mut messages).expect("a compaction");
    // Turn 1's results are stubbed; turns 2 to 4 are the last three and stay whole.
    let ids: Vec<&str> = batch.results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["c1_0", "c1_1"]);
    assert_eq!(batch.bytes, 74_000);
    let r = results(&messages);
    assert_eq!(
        r[0].1,
        "`docs/architecture.md`, 61 KB, 1220 lines, read in turn 1: compacted to save context; \
         read it again (`read_file` {\"path\":\"docs/architecture.md\"}) if you need it."
    );
    assert!(
        r[1].1
            .starts_with("`story.md`, 13 KB, 260 lines, read in turn 1")
    );
    assert_eq!(r[2].1.len(), 3_000);
    assert_eq!(r[3].1.len(), 4_000);
    assert_eq!(r[4].1.len(), 5_000);
    let stats = c.stats();
    assert_eq!((stats.batches, stats.results), (1, 2));
    assert_eq!(stats.result_bytes, 74_000);
    assert_eq!(stats.bytes_not_sent, 74_000 - stats.stub_bytes);
}

#[test]
fn the_prefix_is_byte_stable_between_two_compactions() {
    let mut messages = task();
    messages.extend(turn(1, &[read("big.md", 40_000)]));
    let mut c = Compactor::new(Compaction::after(10_000));
    let mut sent = Vec::new();
    let mut batches = Vec::new();
    for n in 2..=16 {
        messages.extend(turn(n, &[read(&format!("f{n}.rs"), 3_000)]));
        if let Some(b) = c.prepare(&mut messages) {
            batches.push((n, b));
        }
        sent.push(bytes_of(&messages));
    }
    // 40 KB crosses the line as soon as turn 1 leaves the last three turns; then 3 KB a turn
    // crosses it again every fourth turn.
    let at: Vec<u32> = batches.iter().map(|(n, _)| *n).collect();
    assert_eq!(at, [4, 8, 12, 16]);
    // Between two compactions each request extends the one before byte for byte.
    for (k, pair) in sent.windows(2).enumerate() {
        let n = k as u32 + 3;
        if !at.contains(&n) {
            let (before, after) = (&pair[0], &pair[1]);
            let stable = before.len() - 1; // the closing `]` of the JSON array
            assert_eq!(before[..stable], after[..stable], "request of turn {n}");
        }
    }
    // A compaction changes nothing before the point the previous one froze.
    let frozen_len = |s: &str, id: &str| s.find(&format!("\"call_id\":\"{id}\"")).unwrap();
    let first = frozen_len(&sent[2], "c2_0");
    assert_eq!(sent[2][..first], sent[6][..first]);
    let stubs = results(&messages)
        .iter()
        .filter(|(_, c)| c.contains("compacted to save context"))
        .count();
    assert_eq!(stubs, 13);
}

#[test]
fn a_stub_never_changes_and_is_the_same_for_the_same_call() {
    let call = ToolCall::new(
        "c1",
        "run_command",
        json!({"program": "cargo", "args": ["test", "--lib"]}).to_string(),
    );
    let mut output = String::from("exit code: 101\n--- stdout ---\n");
    for k in 1..=40 {
        output.push_str(&format!("test t{k} ... ok\n"));
    }
    output
        .push_str("test result: FAILED. 39 passed; 1 failed\n--- stderr ---\nerror: test failed\n");
    let a = stub("run_command", Some(&call), &output, 5);
    assert_eq!(a, stub("run_command", Some(&call), &output, 5));
    assert_eq!(
        a,
        "`cargo test --lib`, run in turn 5: exit code: 101; its output (736 bytes, 45 lines) was \
         compacted to save context.\nFirst lines:\n  test t1 ... ok\n  test t2 ... ok\n  test t3 \
         ... ok\nLast lines:\n  test t38 ... ok\n  test t39 ... ok\n  test t40 ... ok\n  test \
         result: FAILED. 39 passed; 1 failed\n  error: test failed\nRun it again (`run_command` \
         {\"program\":\"cargo\",\"args\":[\"test\",\"--lib\"]}) if you need the whole output."
    );
    let grep = ToolCall::new("c2", "grep", r#"{"pattern":"fn main"}"#);
    assert_eq!(
        stub("grep", Some(&grep), &text(2_000), 3),
        "`grep` {\"pattern\":\"fn main\"}, in turn 3, returned 2 KB, 40 lines: compacted to save \
         context; call it again if you need it."
    );
    // A stub made once is frozen: later compactions leave it alone.
    let mut messages = task();
    messages.extend(turn(1, &[read("a.md", 50_000)]));
    for n in 2..=4 {
        messages.extend(turn(n, &[read("b.md", 100)]));
    }
    let mut c = Compactor::new(Compaction::after(1_000));
    c.prepare(&mut messages).expect("a compaction");
    let first = results(&messages)[0].clone();
    for n in 5..=12 {
        messages.extend(turn(n, &[read("c.md", 5_000)]));
        c.prepare(&mut messages);
        assert_eq!(results(&messages)[0], first);
    }
}

#[test]
fn the_latest_turns_are_never_compacted_however_large() {
    for keep in [0, 1, 2, 3, 5] {
        let mut messages = task();
        for n in 1..=8 {
            messages.extend(turn(n, &[read(&format!("f{n}.md"), 200_000)]));
            let settings = Compaction {
                after_bytes: Some(1),
                keep_turns: keep,
            };
            let mut c = Compactor::new(settings);
            c.prepare(&mut messages);
            let kept = keep.max(MIN_KEEP_TURNS);
            let r = results(&messages);
            for (k, (_, content)) in r.iter().enumerate() {
                let recent = k + kept >= r.len();
                assert_eq!(
                    content.len() == 200_000,
                    recent,
                    "keep {keep}, turn {n}, {k}"
                );
            }
        }
    }
}

#[test]
fn calls_short_results_and_write_results_are_left_as_they_are() {
    let mut messages = task();
    messages.extend(turn(
        1,
        &[
            (
                "write_file",
                json!({"path": "a.rs", "content": text(30_000)}),
                "wrote `a.rs`".into(),
            ),
            ("edit_file", json!({"path": "a.rs"}), text(5_000)),
            ("list_files", json!({}), text(900)),
            read("big.md", 40_000),
        ],
    ));
    for n in 2..=4 {
        messages.extend(turn(n, &[read("x.md", 10)]));
    }
    let calls_before: Vec<Message> = messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .cloned()
        .collect();
    let mut c = Compactor::new(Compaction::after(1_000));
    let batch = c.prepare(&mut messages).expect("a compaction");
    let what: Vec<(&str, Option<&str>)> = batch
        .results
        .iter()
        .map(|r| (r.tool.as_str(), r.argument.as_deref()))
        .collect();
    // The write's 30 KB of content goes (the file holds it); its short result stays.
    assert_eq!(what, [("write_file", Some("content")), ("read_file", None)]);
    let r = results(&messages);
    assert_eq!(r[0].1, "wrote `a.rs`");
    assert_eq!(r[1].1.len(), 5_000);
    assert_eq!(r[2].1.len(), 900);
    assert!(r[3].1.starts_with("`big.md`, 40 KB"));
    // Every call is still there, answered by its result, unchanged but for the written text.
    let mut calls_after: Vec<Message> = messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .cloned()
        .collect();
    let Message::Assistant { tool_calls, .. } = &mut calls_after[0] else {
        unreachable!()
    };
    let written = tool_calls[0].arguments.as_ref().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(written::is_marker(&written), "{written}");
    tool_calls[0] = ToolCall::new(
        "c1_0",
        "write_file",
        json!({"path": "a.rs", "content": text(30_000)}).to_string(),
    );
    assert_eq!(calls_before, calls_after);
    assert_eq!(r.len(), 7);
}

#[test]
fn a_result_without_its_call_gets_a_generic_stub() {
    let s = stub("read_file", None, &text(3_000), 2);
    assert_eq!(
        s,
        "`read_file`, in turn 2, returned 3 KB, 60 lines: compacted to save context; call it \
         again if you need it."
    );
    let broken = ToolCall::new("c", "read_file", "{not json");
    assert!(
        stub("read_file", Some(&broken), &text(3_000), 2).starts_with("`read_file` {not json,")
    );
}

#[test]
fn old_writes_are_compacted_with_the_results_and_the_calls_stay_answered() {
    let code = text(4_000);
    let mut messages = task();
    for n in 1..=8 {
        messages.extend(turn(
            n,
            &[(
                "write_file",
                json!({ "path": format!("src/m{n}.rs"), "content": code }),
                format!("wrote 4000 bytes to `src/m{n}.rs` (new file)"),
            )],
        ));
    }
    let before = results(&messages);
    let mut c = Compactor::new(Compaction::after(16_000));
    let batch = c.prepare(&mut messages).expect("a compaction");
    // Turns 1 to 5 hold 20 KB of written text, past 16 KB; turns 6 to 8 stay whole.
    let compacted: Vec<(u32, Option<&str>)> = batch
        .results
        .iter()
        .map(|r| (r.turn, r.argument.as_deref()))
        .collect();
    assert_eq!(
        compacted,
        (1..=5).map(|t| (t, Some("content"))).collect::<Vec<_>>()
    );
    assert_eq!(batch.bytes, 20_000);
    assert_eq!(results(&messages), before, "the results are untouched");
    let contents: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls.first().map(|c| {
                let args = c.arguments.as_ref().unwrap();
                assert!(args["path"].is_string(), "the path stays");
                args["content"].as_str().unwrap().to_owned()
            }),
            _ => None,
        })
        .collect();
    for (n, content) in contents.iter().enumerate() {
        if n < 5 {
            assert!(written::is_marker(content), "turn {}: {content}", n + 1);
            assert!(content.contains(&format!("`src/m{}.rs`", n + 1)));
        } else {
            assert_eq!(content, &code, "turn {} stays whole", n + 1);
        }
    }
    // Nothing changes again until the next batch crosses the line.
    let frozen = bytes_of(&messages);
    assert_eq!(c.prepare(&mut messages), None);
    assert_eq!(bytes_of(&messages), frozen);
}
