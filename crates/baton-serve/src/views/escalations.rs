//! The escalations page: each open escalation as a card with its options (stable ids and
//! labels) and the recommended one, then the answered ones.

use super::{ViewError, journal_of};
use crate::Host;
use baton_core::escalation::{Choice, EscalationKind};
use baton_store::journal::EscalationRecord;
use serde::Serialize;

/// An escalation as a card: its options with their ids, the recommended one first.
#[derive(Debug, Clone, Serialize)]
pub struct EscalationCard {
    /// Id.
    pub id: i64,
    /// The story (or task).
    pub key: Option<String>,
    /// Whether the key is a story's (a plan task's has no story page).
    pub story: bool,
    /// What raised it.
    pub kind: String,
    /// Title.
    pub title: String,
    /// What was found.
    pub finding: String,
    /// The options, in order.
    pub options: Vec<OptionView>,
    /// The recommended option's id: baton lists the choice that keeps the work going first.
    pub recommended: Option<String>,
    /// The answer's label, once answered.
    pub answer: Option<String>,
    /// When it was raised.
    pub created_at: String,
    /// The run that raised it.
    pub run_id: Option<String>,
}

/// One option of an escalation.
#[derive(Debug, Clone, Serialize)]
pub struct OptionView {
    /// 1-based number (what `baton answer ID N` takes).
    pub number: usize,
    /// Stable id (what the journal stores).
    pub id: String,
    /// Label.
    pub label: String,
}

impl EscalationCard {
    /// The card of a journaled escalation.
    pub fn of(e: &EscalationRecord) -> EscalationCard {
        let kind = EscalationKind::parse(&e.kind);
        let options: Vec<OptionView> = e
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let c = Choice::from_stored(kind, o);
                OptionView {
                    number: i + 1,
                    id: o.clone(),
                    label: c.label().to_owned(),
                }
            })
            .collect();
        EscalationCard {
            id: e.id,
            key: e.key.clone(),
            story: e.key.as_deref().is_some_and(|k| {
                matches!(
                    baton_core::key::classify(k),
                    baton_core::key::KeyKind::Story { .. }
                )
            }),
            kind: e.kind.clone(),
            title: e.title.clone(),
            finding: e.finding.clone(),
            recommended: options.first().map(|o| o.id.clone()),
            options,
            answer: e.answer.as_deref().map(|a| Choice::label_of(kind, a)),
            created_at: e.created_at.clone(),
            run_id: e.run_id.clone(),
        }
    }
}

/// The escalations page.
#[derive(Debug, Clone, Serialize)]
pub struct Escalations {
    /// The journal number the page was built at.
    pub seq: i64,
    /// Open ones, oldest first.
    pub open: Vec<EscalationCard>,
    /// Answered ones, newest first (at most 20).
    pub answered: Vec<EscalationCard>,
}

/// Builds the escalations page.
pub fn escalations(host: &dyn Host) -> Result<Escalations, ViewError> {
    let Some(j) = journal_of(host) else {
        return Ok(Escalations {
            seq: 0,
            open: Vec::new(),
            answered: Vec::new(),
        });
    };
    let all = j.escalations(false)?;
    let open = all
        .iter()
        .filter(|e| e.answer.is_none())
        .map(EscalationCard::of)
        .collect();
    let mut answered: Vec<EscalationCard> = all
        .iter()
        .filter(|e| e.answer.is_some())
        .map(EscalationCard::of)
        .collect();
    answered.reverse();
    answered.truncate(20);
    Ok(Escalations {
        seq: j.last_event_seq()?,
        open,
        answered,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &str, kind: &str, options: &[&str]) -> EscalationRecord {
        EscalationRecord {
            id: 4,
            run_id: None,
            key: Some(key.into()),
            title: "t".into(),
            finding: "f".into(),
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            answer: None,
            created_at: "t".into(),
            answered_at: None,
            kind: kind.into(),
            resolved_at: None,
            after_step: 0,
        }
    }

    #[test]
    fn a_card_offers_labels_by_stable_id_and_recommends_the_first() {
        let c = EscalationCard::of(&record(
            "1-2-login",
            "max-review-rounds",
            &["another-round", "accept", "stop"],
        ));
        assert!(c.story);
        assert_eq!(c.recommended.as_deref(), Some("another-round"));
        let labels: Vec<(usize, &str, &str)> = c
            .options
            .iter()
            .map(|o| (o.number, o.id.as_str(), o.label.as_str()))
            .collect();
        assert_eq!(labels[0], (1, "another-round", "another fix round"));
        assert_eq!(labels.len(), 3);
        // A plan task's escalation has no story page to link to.
        let task = EscalationCard::of(&record("sdd:PLAN.md#2", "sdd-agent", &["retry"]));
        assert!(!task.story);
    }
}
