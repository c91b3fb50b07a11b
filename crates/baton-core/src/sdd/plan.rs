//! Plan files: the tasks of subagent-driven development, read from markdown.
//!
//! A plan names its tasks in a fenced ` ```baton-tasks ` block (` ```superteam-tasks ` is
//! accepted too) holding YAML: a list of tasks, or a map with a `tasks` list, each task with
//! `id`, `title`, `files` and an optional `acceptance_test`. A plan without such a block falls
//! back to `### Task N: Title` headings, each task's text being what follows its heading. Input
//! that cannot be read with certainty is refused with the line it is on: the engine never runs a
//! plan it guessed at.

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

/// Info strings of the task block (compared trimmed and case-insensitively).
pub const BLOCK_INFO: &[&str] = &["baton-tasks", "superteam-tasks"];

/// One task of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanTask {
    /// Its id, unique in the plan.
    pub id: String,
    /// Its title.
    pub title: String,
    /// The files it is expected to touch.
    pub files: Vec<String>,
    /// The acceptance test that shows it done, if named.
    pub acceptance_test: Option<String>,
    /// The line of the plan it starts on (from 1).
    pub line: usize,
    /// The text under its heading (heading plans only; empty for a block).
    pub body: String,
}

/// Where a plan's tasks came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanSource {
    /// A fenced task block.
    Block,
    /// `### Task N: Title` headings.
    Headings,
}

/// A parsed plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The tasks, in plan order.
    pub tasks: Vec<PlanTask>,
    /// Where they came from.
    pub source: PlanSource,
}

/// Why a plan cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct PlanError {
    /// The line (from 1).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

fn err(line: usize, message: impl Into<String>) -> PlanError {
    PlanError {
        line,
        message: message.into(),
    }
}

/// A task id as written: YAML may give a number or a string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawId {
    Int(i64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    id: Spanned<RawId>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    acceptance_test: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDoc {
    tasks: Vec<RawTask>,
}

/// Reads a plan. See the module docs for the format.
pub fn parse_plan(text: &str) -> Result<Plan, PlanError> {
    let lines: Vec<&str> = text.lines().collect();
    if let Some((open, body)) = task_block(&lines)? {
        let tasks = block_tasks(&body, open)?;
        return Ok(Plan {
            tasks,
            source: PlanSource::Block,
        });
    }
    let tasks = heading_tasks(&lines)?;
    if tasks.is_empty() {
        return Err(err(
            1,
            "no tasks: add a ```baton-tasks block, or `### Task 1: Title` headings",
        ));
    }
    Ok(Plan {
        tasks,
        source: PlanSource::Headings,
    })
}

/// The first task block: its opening line (from 1) and its body.
fn task_block(lines: &[&str]) -> Result<Option<(usize, String)>, PlanError> {
    let mut i = 0;
    while i < lines.len() {
        let Some((ch, len, info)) = fence(lines[i]) else {
            i += 1;
            continue;
        };
        let is_tasks = BLOCK_INFO.iter().any(|b| b.eq_ignore_ascii_case(info));
        let open = i;
        let mut body = Vec::new();
        let mut closed = false;
        i += 1;
        while i < lines.len() {
            if closes(lines[i], ch, len) {
                closed = true;
                break;
            }
            body.push(lines[i]);
            i += 1;
        }
        if is_tasks {
            if !closed {
                return Err(err(
                    open + 1,
                    format!("the ```{info} block is never closed"),
                ));
            }
            return Ok(Some((open + 1, body.join("\n"))));
        }
        i += 1;
    }
    Ok(None)
}

/// If `line` opens a fenced block: its character, length and info string.
fn fence(line: &str) -> Option<(char, usize, &str)> {
    let t = line.trim_start();
    let ch = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = t.chars().take_while(|&c| c == ch).count();
    if len < 3 {
        return None;
    }
    Some((ch, len, t.get(len..)?.trim()))
}

fn closes(line: &str, ch: char, len: usize) -> bool {
    let t = line.trim();
    t.chars().count() >= len && t.chars().all(|c| c == ch)
}

fn block_tasks(body: &str, open: usize) -> Result<Vec<PlanTask>, PlanError> {
    // Lines in the block count from the line after the fence.
    let at = |line: usize| open + line.max(1);
    let yaml_err = |e: serde_saphyr::Error| {
        let line = e.location().map(|l| l.line()).unwrap_or(0);
        let message = e.render_with_options(serde_saphyr::render_options! {
            snippets: serde_saphyr::SnippetMode::Off,
        });
        // The rendered message names the line inside the block; ours names the plan's line.
        let message = message
            .trim()
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_owned();
        err(
            at(usize::try_from(line).unwrap_or(0)),
            format!("the task block is not valid: {message}"),
        )
    };
    let starts_with_list = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| l.starts_with('-'));
    let raw: Vec<RawTask> = if starts_with_list {
        serde_saphyr::from_str(body).map_err(yaml_err)?
    } else if body.trim().is_empty() {
        Vec::new()
    } else {
        serde_saphyr::from_str::<RawDoc>(body)
            .map_err(yaml_err)?
            .tasks
    };
    if raw.is_empty() {
        return Err(err(open, "the task block lists no tasks"));
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut tasks = Vec::with_capacity(raw.len());
    for t in raw {
        let line = at(usize::try_from(t.id.referenced.line()).unwrap_or(0));
        let id = match t.id.value {
            RawId::Int(n) => n.to_string(),
            RawId::Text(s) => s.trim().to_owned(),
        };
        if id.is_empty() {
            return Err(err(line, "a task's `id` is empty"));
        }
        if let Some(first) = seen.insert(id.clone(), line) {
            return Err(err(
                line,
                format!("task id `{id}` is used twice (first on line {first})"),
            ));
        }
        let title = t.title.map(|s| s.trim().to_owned()).unwrap_or_default();
        if title.is_empty() {
            return Err(err(line, format!("task `{id}` has no `title`")));
        }
        if let Some(f) = t.files.iter().find(|f| f.trim().is_empty()) {
            return Err(err(
                line,
                format!("task `{id}` lists an empty file name ({f:?})"),
            ));
        }
        tasks.push(PlanTask {
            id,
            title,
            files: t.files.iter().map(|f| f.trim().to_owned()).collect(),
            acceptance_test: t
                .acceptance_test
                .map(|a| a.trim().to_owned())
                .filter(|a| !a.is_empty()),
            line,
            body: String::new(),
        });
    }
    Ok(tasks)
}

/// `### Task N: Title` headings, each with the text up to the next heading of its level or
/// above.
fn heading_tasks(lines: &[&str]) -> Result<Vec<PlanTask>, PlanError> {
    let mut tasks: Vec<PlanTask> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut body: Vec<&str> = Vec::new();
    let mut in_fence: Option<(char, usize)> = None;
    let flush = |tasks: &mut Vec<PlanTask>, body: &mut Vec<&str>| {
        if let Some(t) = tasks.last_mut() {
            t.body = body.join("\n").trim().to_owned();
        }
        body.clear();
    };
    for (i, line) in lines.iter().enumerate() {
        if let Some((ch, len)) = in_fence {
            if closes(line, ch, len) {
                in_fence = None;
            }
            body.push(line);
            continue;
        }
        if let Some((ch, len, _)) = fence(line) {
            in_fence = Some((ch, len));
            body.push(line);
            continue;
        }
        let t = line.trim_end();
        let level = t.chars().take_while(|&c| c == '#').count();
        if level == 0 || level > 3 || !t[level..].starts_with(' ') {
            body.push(line);
            continue;
        }
        let text = t[level..].trim();
        let task = text
            .strip_prefix("Task")
            .filter(|rest| rest.starts_with([' ', ':']) || rest.is_empty());
        match (level, task) {
            (3, Some(rest)) => {
                flush(&mut tasks, &mut body);
                let line_no = i + 1;
                let (n, title) = rest
                    .split_once(':')
                    .ok_or_else(|| err(line_no, format!("`{t}` is not `### Task N: Title`")))?;
                let n = n.trim();
                if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
                    return Err(err(
                        line_no,
                        format!("`{t}`: the task number is missing or not a number"),
                    ));
                }
                let title = title.trim();
                if title.is_empty() {
                    return Err(err(line_no, format!("`{t}`: the task has no title")));
                }
                if let Some(first) = seen.insert(n.to_owned(), line_no) {
                    return Err(err(
                        line_no,
                        format!("task {n} appears twice (first on line {first})"),
                    ));
                }
                tasks.push(PlanTask {
                    id: n.to_owned(),
                    title: title.to_owned(),
                    files: Vec::new(),
                    acceptance_test: None,
                    line: line_no,
                    body: String::new(),
                });
            }
            _ => {
                // A heading of the task's level or above ends its text.
                flush(&mut tasks, &mut body);
                if !tasks.is_empty() {
                    // Text after such a heading belongs to no task.
                    tasks.push(PlanTask {
                        id: String::new(),
                        title: String::new(),
                        files: Vec::new(),
                        acceptance_test: None,
                        line: 0,
                        body: String::new(),
                    });
                }
            }
        }
    }
    flush(&mut tasks, &mut body);
    tasks.retain(|t| !t.id.is_empty());
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(p: &Plan) -> Vec<(&str, &str, usize)> {
        p.tasks
            .iter()
            .map(|t| (t.id.as_str(), t.title.as_str(), t.line))
            .collect()
    }

    #[test]
    fn a_task_block_gives_ids_titles_files_and_lines() {
        let plan = "# Plan\n\nSome words.\n\n```baton-tasks\n- id: 1\n  title: Parse the input\n  \
                    files: [src/parse.rs]\n  acceptance_test: tests/parse.rs\n- id: two\n  \
                    title: Print it\n  files:\n    - src/print.rs\n```\n\n### Task 9: ignored\n";
        let p = parse_plan(plan).unwrap();
        assert_eq!(p.source, PlanSource::Block);
        assert_eq!(
            ids(&p),
            vec![("1", "Parse the input", 6), ("two", "Print it", 10)]
        );
        assert_eq!(p.tasks[0].files, vec!["src/parse.rs"]);
        assert_eq!(
            p.tasks[0].acceptance_test.as_deref(),
            Some("tests/parse.rs")
        );
        assert_eq!(p.tasks[1].files, vec!["src/print.rs"]);
        assert_eq!(p.tasks[1].acceptance_test, None);
    }

    #[test]
    fn superteam_blocks_and_a_tasks_map_are_read_too() {
        let plan = "~~~Superteam-Tasks\ntasks:\n  - id: a\n    title: A\n    files: []\n~~~\n";
        let p = parse_plan(plan).unwrap();
        assert_eq!(ids(&p), vec![("a", "A", 3)]);
    }

    #[test]
    fn headings_are_the_fallback_with_their_text() {
        let plan = "# Plan\n\n### Task 1: Add the parser\nWrite `parse`.\n\n```rust\n### Task 7: \
                    not a heading in code\n```\n### Task 2: Print\nThen print.\n## Notes\nnot \
                    task text\n";
        let p = parse_plan(plan).unwrap();
        assert_eq!(p.source, PlanSource::Headings);
        assert_eq!(ids(&p), vec![("1", "Add the parser", 3), ("2", "Print", 9)]);
        assert!(p.tasks[0].body.starts_with("Write `parse`."));
        assert!(p.tasks[0].body.contains("not a heading in code"));
        assert_eq!(p.tasks[1].body, "Then print.");
    }

    #[test]
    fn malformed_plans_name_the_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("nothing here\n", 1, "no tasks"),
            ("```baton-tasks\n- id: 1\n  title: A\n", 1, "never closed"),
            ("```baton-tasks\n```\n", 1, "lists no tasks"),
            (
                "x\n```baton-tasks\n- id: 1\n  files: []\n```\n",
                3,
                "has no `title`",
            ),
            (
                "```baton-tasks\n- id: 1\n  title: A\n- id: 1\n  title: B\n```\n",
                4,
                "used twice (first on line 2)",
            ),
            (
                "```baton-tasks\n- id: 1\n  title: A\n  owner: me\n```\n",
                4,
                "not valid",
            ),
            ("```baton-tasks\n- id: 1\n  title: [\n```\n", 3, "not valid"),
            (
                "```baton-tasks\n- id: 1\n  title: A\n  files: ['']\n```\n",
                2,
                "empty file",
            ),
            ("intro\n### Task 1 Parse\n", 2, "is not `### Task N: Title`"),
            ("### Task : Parse\n", 1, "task number"),
            ("### Task 1:\n", 1, "no title"),
            ("### Task 1: A\n### Task 1: B\n", 2, "appears twice"),
        ];
        for (text, line, what) in cases {
            let e = parse_plan(text).unwrap_err();
            assert_eq!(e.line, *line, "{text:?}: {e}");
            assert!(e.to_string().contains(what), "{text:?}: {e}");
        }
    }
}
