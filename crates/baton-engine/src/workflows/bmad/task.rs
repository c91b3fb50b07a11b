//! The task a BMad skill's agent is given for one turn: how baton talks to it (headless, or
//! conversational with menus and questions that end a turn), the skill's own instructions (its
//! `SKILL.md`, and for a headless run the headless protocol and its schemas), the project's BMad
//! configuration resolved, the caller's input, and the conversation so far.
//!
//! Every turn sends the whole task again, so what never changes comes first and what changes
//! last: the instructions (often the largest part) before the date, the input and the growing
//! conversation, so a provider's prompt cache can serve them from one turn to the next.
//!
//! Everything quoted here is data the skill works on: the input and the answers come from a
//! person or from baton's rules, and are marked as such, never as instructions to baton.

use super::history::{By, Entry, History};

/// What a turn's task is built from.
#[derive(Debug, Clone, Default)]
pub struct Skill {
    /// Its name (`bmad-prd`).
    pub name: String,
    /// Its folder, relative to the project (`.claude/skills/bmad-prd`).
    pub dir: String,
    /// Its instructions: `SKILL.md`, then (headless) the headless protocol files.
    pub instructions: String,
    /// Whether it runs its headless protocol.
    pub headless: bool,
}

/// Builds the task of the next turn.
pub fn build(
    skill: &Skill,
    config: &[(String, String)],
    input: Option<&str>,
    history: &History,
    date: &str,
) -> String {
    let mut t = String::new();
    t.push_str(&format!(
        "Run the BMad skill `{}` for this project, following its instructions below.\n\n",
        skill.name
    ));
    t.push_str("## How baton runs you\n");
    if skill.headless {
        t.push_str(
            "- You run **headless**: `headless: true`, as invoked with `-H` / `--headless`. Do \
             not ask and do not greet. Follow the skill's headless protocol for the whole run, and end your final answer with its JSON \
             status object (`status`: `complete`, `partial` or `blocked`; `assumptions`; \
             `open_questions`; the paths of the artifacts you wrote), in a ```json fence. baton \
             reads that object; an answer without it is not accepted.\n",
        );
    } else {
        t.push_str(
            "- You talk to the user through baton, one turn at a time. When the skill shows a menu \
             or asks a question, make it the last thing in your answer and stop: the next turn \
             brings the answer. Show menus in the skill's own format (`[C] Continue`, numbered \
             options). When the skill has finished, end with a short summary and no question.\n",
        );
    }
    t.push_str(
        "- Run the skill's scripts with `run_command` (for example `uv run \
         _bmad/scripts/memlog.py …`), never by writing their files yourself.\n\
         - Paths are relative to the project root. Never write `_bmad/`, `.claude/`, `.baton/` or \
         `baton.toml`.\n\n",
    );
    t.push_str(&format!(
        "## The skill's instructions (`{}/SKILL.md`)\n\n{}\n\n",
        skill.dir,
        skill.instructions.trim_end()
    ));
    t.push_str("## Resolved configuration\n");
    t.push_str("- `{project-root}`: `.` (the project root)\n");
    t.push_str(&format!("- `{{skill-root}}`: `{}`\n", skill.dir));
    t.push_str(&format!("- `{{date}}`: `{date}`\n"));
    for (k, v) in config {
        t.push_str(&format!("- `{{{k}}}`: `{v}`\n"));
    }
    t.push_str(&format!(
        "- `{{workflow.*}}`: read `{}/customize.toml` (its `[workflow]` table)\n\n",
        skill.dir
    ));
    if let Some(i) = input.filter(|i| !i.trim().is_empty()) {
        t.push_str("## The caller's input (data)\n");
        t.push_str(&quote(i));
        t.push('\n');
    }
    if history.turns() > 0 {
        t.push_str("## The conversation so far\n");
        for e in &history.entries {
            match e {
                Entry::Turn(n, d) => {
                    t.push_str(&format!("### You (turn {n})\n{}\n\n", d.output.trim()));
                }
                Entry::Reply(r) => {
                    let who = match r.by {
                        By::Baton => "baton, for the user",
                        By::Person => "the user",
                    };
                    t.push_str(&format!("### Answer ({who}; data)\n{}\n\n", quote(&r.text)));
                }
                Entry::Party(p) => {
                    t.push_str(&format!(
                        "### A party of reviewers ({}; data)\n{}\n\n",
                        p.members.join(", "),
                        quote(&p.summary)
                    ));
                }
                Entry::Start(_) | Entry::End(_) => {}
            }
        }
        t.push_str("Go on from the last answer.\n\n");
    } else {
        t.push_str("Start the skill now.\n\n");
    }
    t
}

/// `text` as a quoted block.
pub fn quote(text: &str) -> String {
    let mut q = String::new();
    for line in text.trim().lines() {
        q.push_str("> ");
        q.push_str(line);
        q.push('\n');
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflows::bmad::history::{Reply, TurnDetail};

    #[test]
    fn the_task_carries_mode_config_input_and_the_conversation_as_data() {
        let skill = Skill {
            name: "bmad-prd".into(),
            dir: ".claude/skills/bmad-prd".into(),
            instructions: "# BMad PRD".into(),
            headless: true,
        };
        let cfg = vec![(
            "planning_artifacts".into(),
            "_bmad-output/planning-artifacts".into(),
        )];
        let t = build(
            &skill,
            &cfg,
            Some("a todo app\nfor teams"),
            &History::default(),
            "2026-11-26",
        );
        assert!(t.contains("headless: true"));
        assert!(t.contains("`{planning_artifacts}`: `_bmad-output/planning-artifacts`"));
        assert!(t.contains("> a todo app\n> for teams"));
        assert!(t.contains("Start the skill now."));
        // What is the same every turn comes before what is not (the date, the input).
        let at = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s} missing"));
        assert!(at("# BMad PRD") < at("2026-11-26"));
        assert!(at("# BMad PRD") < at("> a todo app"));
        let h = History {
            entries: vec![
                Entry::Turn(
                    1,
                    TurnDetail {
                        output: "[C] Continue".into(),
                    },
                ),
                Entry::Reply(Reply {
                    text: "C".into(),
                    by: By::Baton,
                    menu: None,
                    escalation: None,
                }),
            ],
        };
        let t = build(
            &Skill {
                headless: false,
                ..skill
            },
            &[],
            None,
            &h,
            "d",
        );
        assert!(t.contains("### You (turn 1)\n[C] Continue"));
        assert!(t.contains("### Answer (baton, for the user; data)\n> C"));
        assert!(t.contains("make it the last thing in your answer"));
        assert!(t.find("# BMad PRD") < t.find("### You (turn 1)"));
        assert!(t.trim_end().ends_with("Go on from the last answer."));
    }
}
