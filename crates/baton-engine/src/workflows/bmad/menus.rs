//! Menus a skill ends its turn with: taken by baton within the tier's batch and confidence, or
//! put to a person as a checkpoint in the format the confidence calls for (from level 2, after a
//! party's advice when baton is unsure).

use super::history::{By, History, Reply, Selection};
use super::pass::Pass;
use super::validation::party_on;
use super::{Bmad, tail};
use crate::error::EngineError;
use crate::run::Run;
use baton_core::autopilot::confidence::CheckpointFormat;
use baton_core::autopilot::menu::Detection;
use baton_core::autopilot::turn::{self, MenuDecision};
use baton_core::autopilot::validation::Validation;
use baton_core::escalation::EscalationKind;
use std::sync::Arc;
use std::time::Instant;

impl Bmad {
    pub(super) async fn on_menu(
        &self,
        run: &Arc<Run>,
        history: &History,
        output: &str,
        d: &Detection,
        v: Option<&Validation>,
        last_menu: &mut Option<Instant>,
    ) -> Result<Pass, EngineError> {
        let tier = self.tier;
        let (continues, in_a_row) = history.streak();
        match turn::decide_menu(d, tier, continues, in_a_row, v.map(|v| v.passed)) {
            MenuDecision::Select {
                key: choice,
                label,
                confidence,
                reason,
            } => {
                if let Some(t) = last_menu {
                    let wait = self.limits.menu_interval.saturating_sub(t.elapsed());
                    tokio::time::sleep(wait).await;
                }
                *last_menu = Some(Instant::now());
                let selection = Selection {
                    options: d.options.iter().map(|o| o.key.clone()).collect(),
                    continues: label.trim().to_lowercase().starts_with("continue"),
                    selection: choice.clone(),
                    confidence,
                    reason,
                    at: run.clock.now().rfc3339,
                };
                self.reply(
                    run,
                    Reply {
                        text: choice,
                        by: By::Baton,
                        menu: Some(selection),
                        escalation: None,
                    },
                )?;
                Ok(Pass::Again)
            }
            MenuDecision::Checkpoint {
                format,
                recommended,
                confidence,
                reason,
            } => {
                let mut options: Vec<String> = d
                    .options
                    .iter()
                    .map(|o| format!("{}: {}", o.key, o.label))
                    .collect();
                if let Some(r) = &recommended
                    && let Some(at) = options
                        .iter()
                        .position(|o| o.starts_with(&format!("{r}: ")))
                {
                    let o = options.remove(at);
                    options.insert(0, o);
                }
                let mut finding = checkpoint_text(
                    format,
                    output,
                    history,
                    confidence,
                    &reason,
                    recommended.as_deref(),
                );
                // From level 2, a decision this unsure is discussed by a party first,
                // once per menu; its advice goes to the person with the checkpoint.
                let on = format!("menu after turn {}", history.turns());
                if baton_core::autopilot::party::due(tier, confidence, false)
                    && !party_on(history, &on)
                {
                    let topic = format!(
                        "The `{}` skill shows this menu and baton is not sure which option to take:\n{}",
                        self.skill.name,
                        tail(output, 20)
                    );
                    if let Some(d) = self.party(run, &topic, &on).await? {
                        finding
                            .push_str(&format!("\nA party of reviewers advises:\n{}", d.summary));
                    }
                }
                self.ask(
                    run,
                    EscalationKind::BmadMenu,
                    "menu checkpoint",
                    finding,
                    options,
                )
                .await
            }
        }
    }
}

/// What a person is shown at a menu checkpoint, by the format its confidence calls for.
fn checkpoint_text(
    format: CheckpointFormat,
    output: &str,
    history: &History,
    confidence: f64,
    reason: &str,
    recommended: Option<&str>,
) -> String {
    let rec = recommended.map_or_else(
        || "baton makes no recommendation".to_owned(),
        |r| format!("baton recommends `{r}`"),
    );
    match format {
        CheckpointFormat::Minimal => format!(
            "Checkpoint (minimal, confidence {confidence:.0}%): {reason}; {rec}. Confirm with the \
             first option."
        ),
        CheckpointFormat::Summary => {
            let menus = history.menus();
            let recent: Vec<String> = menus
                .iter()
                .rev()
                .take(5)
                .map(|m| {
                    format!(
                        "- chose `{}` ({:.0}%): {}",
                        m.selection, m.confidence, m.reason
                    )
                })
                .collect();
            format!(
                "Checkpoint (summary, confidence {confidence:.0}%): {reason}; {rec}.\nRecent \
                 decisions:\n{}\nThe skill's last words:\n{}",
                if recent.is_empty() {
                    "- none".to_owned()
                } else {
                    recent.join("\n")
                },
                tail(output, 12)
            )
        }
        CheckpointFormat::FullAudit => {
            let menus: Vec<String> = history
                .menus()
                .iter()
                .map(|m| {
                    format!(
                        "- {} chose `{}` of {:?} ({:.0}%): {}",
                        m.at, m.selection, m.options, m.confidence, m.reason
                    )
                })
                .collect();
            format!(
                "Checkpoint (full audit, confidence {confidence:.0}%): {reason}; {rec}.\nEvery \
                 decision so far:\n{}\nThe skill's whole turn:\n{}",
                if menus.is_empty() {
                    "- none".to_owned()
                } else {
                    menus.join("\n")
                },
                output.trim()
            )
        }
    }
}
