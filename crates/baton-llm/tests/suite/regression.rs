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
