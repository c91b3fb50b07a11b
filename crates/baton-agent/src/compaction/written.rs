//! What the model wrote, compacted: the large text arguments of its old `write_file` and
//! `edit_file` calls.
//!
//! A file the developer wrote in turn 5 travels inside that turn's call, and so is sent again
//! with every later request, like a document it read. Once the call has run, the text is on disk
//! and the call's result says so; past the same threshold as old results, such an argument is
//! replaced, in what is sent, by a marker naming its size, its turn and how to see it again. The
//! call keeps its id, its name, its path and every short argument, so the conversation stays
//! answered and readable.
//!
//! The marker begins with [`MARKER`], which `write_file` and `edit_file` refuse as content: a
//! model that copies the marker from its own history into a new call is told to send the text
//! instead of writing the marker into the file.

use baton_llm::ToolCall;
use serde_json::Value;

/// The start of every compacted argument, refused as content by the writing tools.
pub const MARKER: &str = "[baton: compacted";

/// The end of every marker.
const MARKER_END: &str = "Never send this marker as content.]";

/// Whether `text` is a marker this module wrote (a model copying one from its history into a
/// new call): the writing tools refuse it as content.
pub fn is_marker(text: &str) -> bool {
    let text = text.trim();
    text.starts_with(MARKER) && text.ends_with(MARKER_END)
}

/// The tools whose text arguments are what the model wrote, and those arguments.
const WRITTEN: [(&str, &[&str]); 2] = [
    ("write_file", &["content"]),
    ("edit_file", &["old_string", "new_string"]),
];

/// One argument of a call to replace: its name, the full text's size, and its marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The argument.
    pub argument: &'static str,
    /// The full text's size, in bytes.
    pub bytes: u64,
    /// What is sent instead.
    pub marker: String,
}

/// The arguments of `call` (made in `turn`) long enough to compact: at least `min_bytes` each.
pub fn compactable(call: &ToolCall, turn: u32, min_bytes: usize) -> Vec<Written> {
    let Some((_, names)) = WRITTEN.iter().find(|(tool, _)| *tool == call.name) else {
        return Vec::new();
    };
    let Ok(args) = &call.arguments else {
        return Vec::new();
    };
    let path = args["path"].as_str().unwrap_or("the file");
    names
        .iter()
        .filter_map(|name| {
            let text = args.get(*name)?.as_str()?;
            if text.len() < min_bytes || text.starts_with(MARKER) {
                return None;
            }
            Some(Written {
                argument: name,
                bytes: text.len() as u64,
                marker: marker(&call.name, name, path, text, turn),
            })
        })
        .collect()
}

/// Replaces the arguments `written` of `call` by their markers, in the parsed arguments and in
/// the raw text both wires send.
pub fn apply(call: &mut ToolCall, written: &[Written]) {
    let Ok(Value::Object(args)) = &mut call.arguments else {
        return;
    };
    for w in written {
        args.insert(w.argument.to_owned(), Value::String(w.marker.clone()));
    }
    call.raw_arguments = Value::Object(args.clone()).to_string();
}

/// The marker of `argument` (of a call of `tool` on `path` in `turn`): deterministic.
fn marker(tool: &str, argument: &str, path: &str, text: &str, turn: u32) -> String {
    let what = match (tool, argument) {
        ("edit_file", "old_string") => "the text replaced",
        ("edit_file", _) => "the text written",
        _ => "the content written",
    };
    format!(
        "{MARKER}: {what} in turn {turn} ({}), sent in full then; `{path}` holds what was \
         written: read it if you need it. {MARKER_END}",
        super::size_of(text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall::new("c1", name, args.to_string())
    }

    #[test]
    fn long_written_text_becomes_a_marker_and_the_rest_of_the_call_stays() {
        let content = "fn main() {}\n".repeat(200);
        let mut c = call(
            "write_file",
            json!({ "path": "src/main.rs", "content": content }),
        );
        let found = compactable(&c, 4, 1024);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].bytes, content.len() as u64);
        apply(&mut c, &found);
        let args = c.arguments.as_ref().unwrap();
        assert_eq!(args["path"], "src/main.rs");
        let marker = args["content"].as_str().unwrap();
        assert!(marker.starts_with(MARKER), "{marker}");
        assert!(
            marker.contains("turn 4") && marker.contains("3 KB, 200 lines"),
            "{marker}"
        );
        assert!(marker.contains("`src/main.rs`"), "{marker}");
        let raw: Value = serde_json::from_str(&c.raw_arguments).unwrap();
        assert_eq!(&raw, args, "the raw text both wires may send agrees");
        assert!(
            compactable(&c, 4, 1024).is_empty(),
            "a marker is never compacted again"
        );
        assert!(is_marker(marker));
        assert!(!is_marker("[baton: compacted text is fine inside a file]"));
    }

    #[test]
    fn short_text_other_tools_and_unparsed_calls_stay() {
        let short = call(
            "write_file",
            json!({ "path": "a", "content": "x".repeat(100) }),
        );
        assert!(compactable(&short, 1, 1024).is_empty());
        let read = call(
            "read_file",
            json!({ "path": "a", "content": "x".repeat(5000) }),
        );
        assert!(compactable(&read, 1, 1024).is_empty());
        let broken = ToolCall::new("c", "write_file", "{not json");
        assert!(compactable(&broken, 1, 1024).is_empty());
    }

    #[test]
    fn an_edit_compacts_each_long_side_and_the_marker_is_deterministic() {
        let c = call(
            "edit_file",
            json!({ "path": "a.rs", "old_string": "o".repeat(2000), "new_string": "n".repeat(3000) }),
        );
        let found = compactable(&c, 7, 1024);
        let names: Vec<&str> = found.iter().map(|w| w.argument).collect();
        assert_eq!(names, ["old_string", "new_string"]);
        assert_eq!(found, compactable(&c, 7, 1024));
        assert!(found[0].marker.contains("the text replaced"));
        assert!(found[1].marker.contains("the text written"));
    }
}
