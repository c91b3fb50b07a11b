//! Holding a party: several agents discuss what the skill is stuck on, and what they conclude
//! goes back to the skill.
//!
//! From level 2, and when the project has BMad's `bmad-party-mode` skill, that skill runs the
//! party (one agent following its instructions, which voice BMad's personas). Below level 2, or
//! without it, baton simulates one: 3 to 5 personas from BMad's agent roster
//! (`bmad-agent-*` skills) each run as their own agent, concurrently, every round. A round has
//! [`ROUND_TIMEOUT`] by default; a member that does not answer in time is left out of it. The
//! party ends when a member's message is an exit keyword on a line of its own
//! ([`baton_core::autopilot::party::is_exit`]: `*exit`, `goodbye`, `end party`, `quit`, exactly),
//! after [`GRACE`] for the answers still arriving, or after [`MAX_ROUNDS`].

use super::history::PartyDetail;
use super::task::quote;
use crate::protocol::UnitKey;
use crate::run::Run;
use baton_agent::outcome::Status;
use baton_core::autopilot::party::{GRACE, is_exit, simulated_size};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::sync::Arc;
use std::time::Duration;

/// A party round's default time limit.
pub const ROUND_TIMEOUT: Duration = Duration::from_secs(120);
/// Rounds at most.
pub const MAX_ROUNDS: u32 = 3;

/// Someone who takes part.
#[derive(Debug, Clone)]
pub struct Persona {
    /// Its name (`bmad-agent-architect`, or `bmad-party-mode` for BMad's own party).
    pub name: String,
    /// Its instructions (the persona's or the party skill's `SKILL.md`).
    pub instructions: String,
}

/// Who can be called to a party.
#[derive(Debug, Clone, Default)]
pub struct Roster {
    /// BMad's party skill, when installed.
    pub party_skill: Option<Persona>,
    /// BMad's agent personas.
    pub personas: Vec<Persona>,
    /// A round's time limit.
    pub round_timeout: Option<Duration>,
}

impl Roster {
    /// The members of a party at `level`: BMad's party skill from level 2, else 3–5 personas;
    /// `None` when there are too few to hold one.
    pub fn members(&self, level: u8) -> Option<Vec<Persona>> {
        if level >= 2
            && let Some(p) = &self.party_skill
        {
            return Some(vec![p.clone()]);
        }
        let n = simulated_size(self.personas.len())?;
        Some(self.personas[..n].to_vec())
    }
}

fn member_task(p: &Persona, topic: &str, said: &[(String, String)], round: u32) -> String {
    let mut t = format!(
        "You take part in a party of reviewers helping a BMad workflow that is stuck, as `{}`. \
         Round {round} of at most {MAX_ROUNDS}. Say what you advise, briefly and concretely. When \
         the party has said what it can, end your message with `*exit` on a line of its own.\n\n\
         ## What the workflow is stuck on (data)\n{}\n",
        p.name,
        quote(topic)
    );
    if !said.is_empty() {
        t.push_str("## Said so far (data)\n");
        for (who, text) in said {
            t.push_str(&format!("**{who}**:\n{}\n", quote(text)));
        }
    }
    t.push_str(&format!("\n## Your instructions\n\n{}\n", p.instructions));
    t
}

/// Holds a party of `members` on `topic` for `unit`, each member run as `agent`.
pub async fn hold(
    run: &Arc<Run>,
    unit: &UnitKey,
    agent: &str,
    members: &[Persona],
    topic: &str,
    on: &str,
    round_timeout: Duration,
) -> PartyDetail {
    let u = run.unit(unit.clone());
    let mut said: Vec<(String, String)> = Vec::new();
    let mut exited = false;
    let mut rounds = 0;
    while rounds < MAX_ROUNDS && !exited && !run.cancelled() {
        rounds += 1;
        let mut pending: FuturesUnordered<_> = members
            .iter()
            .map(|p| {
                let task = member_task(p, topic, &said, rounds);
                let (run, u, name) = (run.clone(), u.clone(), p.name.clone());
                async move {
                    let o =
                        tokio::time::timeout(round_timeout, run.run_agent(&u, agent, &task)).await;
                    (name, o.ok().filter(|o| o.status == Status::Completed))
                }
            })
            .collect();
        let mut deadline: Option<tokio::time::Instant> = None;
        loop {
            let next = match deadline {
                Some(d) => match tokio::time::timeout_at(d, pending.next()).await {
                    Ok(n) => n,
                    Err(_) => break,
                },
                None => pending.next().await,
            };
            let Some((name, outcome)) = next else { break };
            if let Some(o) = outcome {
                let text = o.summary.trim().to_owned();
                if text.lines().any(is_exit) && deadline.is_none() {
                    exited = true;
                    deadline = Some(tokio::time::Instant::now() + GRACE);
                }
                said.push((name, text));
            }
        }
    }
    let summary = said
        .iter()
        .map(|(who, text)| {
            let kept: Vec<&str> = text.lines().filter(|l| !is_exit(l)).collect();
            format!("{who}: {}", kept.join("\n").trim())
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    PartyDetail {
        on: on.to_owned(),
        members: members.iter().map(|p| p.name.clone()).collect(),
        rounds,
        exited,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: &str) -> Persona {
        Persona {
            name: n.into(),
            instructions: String::new(),
        }
    }

    #[test]
    fn bmad_s_party_skill_from_level_2_else_three_to_five_personas() {
        let mut r = Roster {
            party_skill: Some(p("bmad-party-mode")),
            personas: ["a", "b", "c", "d", "e", "f"].map(p).to_vec(),
            round_timeout: None,
        };
        assert_eq!(r.members(2).unwrap()[0].name, "bmad-party-mode");
        assert_eq!(r.members(1).unwrap().len(), 5);
        r.party_skill = None;
        assert_eq!(r.members(3).unwrap().len(), 5);
        r.personas.truncate(2);
        assert!(r.members(1).is_none());
    }

    #[test]
    fn a_member_s_task_quotes_the_topic_and_what_was_said() {
        let t = member_task(
            &p("arch"),
            "FR3 untestable",
            &[("pm".into(), "split it".into())],
            2,
        );
        assert!(t.contains("Round 2 of at most 3"));
        assert!(t.contains("> FR3 untestable"));
        assert!(t.contains("**pm**:\n> split it"));
    }
}
