//! The engine's side of the protocol: the contract itself is the `baton-protocol` crate
//! (re-exported here, so `baton_engine::protocol::Event` and `baton_protocol::Event` are one
//! type); this module turns the engine's own values into it: an agent's event into a flat
//! [`EventBody`], and a journaled escalation into the [`EscalationView`] front ends show.

pub use baton_protocol::*;

use baton_agent::runner::AgentEvent;
use baton_core::escalation::{Choice, EscalationKind};
use baton_store::journal::EscalationRecord;

/// The flat event for an agent's own event.
pub fn agent_body(e: &AgentEvent) -> EventBody {
    match e {
        AgentEvent::Started { agent, model } => EventBody::AgentStarted {
            agent: agent.clone(),
            model: model.clone(),
        },
        AgentEvent::Turn { agent, turn } => EventBody::Turn {
            agent: agent.clone(),
            turn: *turn,
        },
        AgentEvent::ToolCall { agent, tool } => EventBody::ToolCall {
            agent: agent.clone(),
            tool: tool.clone(),
        },
        AgentEvent::Refused {
            agent,
            tool,
            reason,
        } => EventBody::Refused {
            agent: agent.clone(),
            tool: tool.clone(),
            reason: reason.clone(),
        },
        AgentEvent::Usage {
            agent,
            usage,
            cost_usd,
            estimated,
        } => EventBody::Usage {
            agent: agent.clone(),
            input_tokens: usage.total_input(),
            cache_read_tokens: usage.cache_read_tokens,
            cache_write_tokens: usage.cache_write_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: *cost_usd,
            estimated: *estimated,
        },
        AgentEvent::Streaming {
            agent,
            turn,
            output_tokens,
            elapsed_secs,
        } => EventBody::Streaming {
            agent: agent.clone(),
            turn: *turn,
            output_tokens: *output_tokens,
            elapsed_secs: *elapsed_secs,
        },
        AgentEvent::UsageEstimated { agent, provider } => EventBody::UsageEstimated {
            agent: agent.clone(),
            provider: provider.clone(),
        },
        AgentEvent::BudgetWarning { agent, message } => EventBody::BudgetWarning {
            agent: agent.clone(),
            message: message.clone(),
        },
        AgentEvent::Finished { agent, status } => EventBody::AgentFinished {
            agent: agent.clone(),
            status: status.as_str().to_owned(),
        },
    }
}

/// The view of a journaled escalation (`awaiting`: the engine waits for its answer now).
pub fn escalation_view(e: &EscalationRecord, awaiting: bool) -> EscalationView {
    let kind = EscalationKind::parse(&e.kind);
    EscalationView {
        id: e.id,
        key: e.key.clone(),
        kind: e.kind.clone(),
        title: e.title.clone(),
        finding: e.finding.clone(),
        options: e
            .options
            .iter()
            .map(|o| Choice::label_of(kind, o))
            .collect(),
        choices: e
            .options
            .iter()
            .map(|o| {
                let c = Choice::from_stored(kind, o);
                ChoiceView {
                    id: c.id().to_owned(),
                    label: c.label().to_owned(),
                }
            })
            .collect(),
        answer: e.answer.as_deref().map(|a| Choice::label_of(kind, a)),
        awaiting,
        created_at: e.created_at.clone(),
        answered_at: e.answered_at.clone(),
        resolved_at: e.resolved_at.clone(),
        run_id: e.run_id.clone(),
    }
}
