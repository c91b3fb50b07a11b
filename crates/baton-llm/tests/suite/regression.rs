//! One test per fixed bug.

use baton_llm::ToolCall;
use serde_json::json;

/// `ToolCall` derived `Deserialize` with a skipped `Result` field, which does not compile; it now
/// deserializes through `ToolCall::new`, so `arguments` is parsed again from `raw_arguments`.
#[test]
fn tool_calls_round_trip_through_json_and_reparse_their_arguments() {
    let good = ToolCall::new("c1", "read", r#"{"path":"a"}"#);
    let bad = ToolCall::new("c2", "read", "{broken");
    let text = serde_json::to_string(&[&good, &bad]).expect("serialize");
    assert!(
        !text.contains("arguments\":{"),
        "parsed arguments are not serialized: {text}"
    );
    let back: Vec<ToolCall> = serde_json::from_str(&text).expect("deserialize");
    assert_eq!(back, [good, bad]);
    assert_eq!(back[0].arguments, Ok(json!({"path": "a"})));
    assert!(back[1].arguments.is_err());
}

/// Regression (issue 8): an endless SSE line grew memory by ~170 MB/s until the call timed out.
/// The answer is now capped: the call fails with `answer exceeded N bytes`, without retrying.
#[tokio::test]
async fn an_endless_sse_line_fails_at_the_answer_cap() {
    use super::common::{BOTH, fast_policy, guard, run, user_request};
    use baton_llm::LlmError;
    use baton_llm::retry::{DEFAULT_MAX_ANSWER_BYTES, RetryPolicy};
    use baton_test_support::{MockResponse, MockServer};

    let chunk = "x".repeat(64 * 1024);
    for wire in BOTH {
        for (cap, body) in [
            // One line that never ends.
            (200_000, "data: {\"never\": \"".to_owned()),
            // An event whose data lines never stop.
            (300_000, "event: message\ndata: a\n".to_owned()),
            // The default cap.
            (DEFAULT_MAX_ANSWER_BYTES, "data: ".to_owned()),
        ] {
            let server = MockServer::start().await;
            let trickle = if body.starts_with("event") {
                format!("data: {chunk}\n")
            } else {
                chunk.clone()
            };
            server.enqueue(MockResponse::sse(vec![(0, body)]).trickle(0, &trickle));
            let policy = RetryPolicy {
                max_answer_bytes: cap,
                ..fast_policy()
            };
            let client = wire.client(&server, policy);
            let (result, _) = guard(run(&*client, &user_request("hi"))).await;
            match result {
                Err(e @ LlmError::AnswerTooLarge { .. }) => {
                    assert!(
                        e.to_string()
                            .ends_with(&format!("answer exceeded {cap} bytes")),
                        "{e}"
                    );
                }
                other => panic!("{wire:?} cap {cap}: expected AnswerTooLarge, got {other:?}"),
            }
            assert_eq!(server.requests().len(), 1, "not retried");
        }
    }
}

/// The cap is configurable per provider (`max_answer_bytes`), and an answer within it passes.
#[test]
fn the_answer_cap_comes_from_the_provider_entry() {
    use baton_llm::registry::{ProviderConfig, ProviderKind};
    let entry = ProviderConfig {
        max_answer_bytes: Some(1234),
        ..ProviderConfig::new(ProviderKind::OpenAi)
    };
    assert_eq!(entry.retry_policy().max_answer_bytes, 1234);
    let default = ProviderConfig::new(ProviderKind::OpenAi);
    assert_eq!(
        default.retry_policy().max_answer_bytes,
        baton_llm::retry::DEFAULT_MAX_ANSWER_BYTES
    );
}

/// A script file that is a link to a device is refused, not read until memory runs out.
#[test]
fn a_script_linked_to_dev_zero_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("t.yaml");
    std::os::unix::fs::symlink("/dev/zero", &path).expect("link");
    let Err(err) = baton_llm::script::ScriptClient::load(&path) else {
        panic!("a link to /dev/zero was loaded");
    };
    assert!(err.to_string().contains("not a regular file"), "{err}");
}
