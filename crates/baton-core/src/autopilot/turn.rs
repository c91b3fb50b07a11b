//! What the autopilot makes of one turn of a skill, and what it answers.
//!
//! A turn is read in this order: the JSON status a headless run ends with ([`super::headless`]);
//! a validation that did not pass ([`super::validation`]); a menu ([`super::menu`]); a question
//! (the turn's last line asks one); otherwise the skill has finished. A headless skill must end
//! with its status, so a headless turn without one is an error, never a finish.
//!
//! A menu is answered by [`decide_menu`]: its confidence is the detection's score (a clear menu
//! scores 100) with the tier's adjustment, and 30 points less after a failing validation.
//! Below 80 a person decides, shown the checkpoint format that confidence calls for (minimal,
//! summary with a recommendation from 50, full audit without one below 50). Otherwise a
//! `Continue` option is taken within the tier's batch: levels 0–1 take every one, level 2 asks
//! at the 5th in a row, level 3 at the 3rd, level 4 at each. A menu without `Continue` is
//! answered alone only at levels 0–1 (its first option); above, a person chooses. After 10 menus
//! answered in a row a person is asked whatever the tier.

use super::confidence::CheckpointFormat;
use super::headless::{self, Status, StatusError};
use super::menu::{self, Detection};
use super::tier::{Batch, MAX_MENUS_IN_A_ROW, Tier};
use super::validation::{self, Validation};
use regex::Regex;

/// What a turn is.
#[derive(Debug, Clone, PartialEq)]
pub enum Reading {
    /// The skill's final status (checked), or why the status is unusable.
    Status(Result<Status, StatusError>),
    /// A validation that did not pass.
    Validation(Validation),
    /// A menu, with the validation the turn also reported (if it passed).
    Menu(Detection, Option<Validation>),
    /// A question for the user (the turn's last line).
    Question(String),
    /// The skill finished.
    Finished,
}

/// Reads `turn`; `headless` when the skill runs its headless protocol; `custom` are the
/// project's validation patterns.
pub fn read(turn: &str, headless: bool, custom: &[Regex]) -> Reading {
    let status = headless::parse(turn);
    if headless || status.is_ok() {
        return Reading::Status(status);
    }
    let v = validation::read(turn, custom);
    if let Some(v) = v.as_ref().filter(|v| !v.passed) {
        return Reading::Validation(v.clone());
    }
    let d = menu::detect(turn);
    if d.is_menu() {
        return Reading::Menu(d, v);
    }
    let last = turn.lines().rev().map(str::trim).find(|l| !l.is_empty());
    match last {
        Some(l) if l.ends_with('?') => Reading::Question(l.to_owned()),
        _ => Reading::Finished,
    }
}

/// How a menu is answered.
#[derive(Debug, Clone, PartialEq)]
pub enum MenuDecision {
    /// baton answers with this option's key.
    Select {
        /// The key sent.
        key: String,
        /// What it says.
        label: String,
        /// The decision's confidence, 0–100.
        confidence: f64,
        /// Why, for the menu history.
        reason: String,
    },
    /// A person decides.
    Checkpoint {
        /// How the checkpoint is shown.
        format: CheckpointFormat,
        /// The option baton recommends (none below 50).
        recommended: Option<String>,
        /// The decision's confidence.
        confidence: f64,
        /// Why a person is asked.
        reason: String,
    },
}

/// Points a failing validation takes off a menu decision.
const FAILED_VALIDATION_PENALTY: f64 = 30.0;

/// The confidence of answering menu `d` at `tier`, after a validation that `passed` (if any).
pub fn menu_confidence(d: &Detection, tier: Tier, passed: Option<bool>) -> f64 {
    let mut c = f64::from(d.score.min(100)) + f64::from(tier.confidence_adjustment());
    if passed == Some(false) {
        c -= FAILED_VALIDATION_PENALTY;
    }
    c.clamp(0.0, 100.0)
}

fn format_of(confidence: f64) -> CheckpointFormat {
    if confidence >= 80.0 {
        CheckpointFormat::Minimal
    } else if confidence >= 50.0 {
        CheckpointFormat::Summary
    } else {
        CheckpointFormat::FullAudit
    }
}

/// Answers menu `d` at `tier`: `continues` is how many continues baton took since the last
/// person's answer, `in_a_row` how many menus it answered since then.
pub fn decide_menu(
    d: &Detection,
    tier: Tier,
    continues: u32,
    in_a_row: u32,
    passed: Option<bool>,
) -> MenuDecision {
    let confidence = menu_confidence(d, tier, passed);
    let recommended = d
        .continue_option()
        .or(d.options.first())
        .map(|o| o.key.clone());
    let ask = |reason: String| MenuDecision::Checkpoint {
        format: format_of(confidence),
        recommended: if confidence >= 50.0 {
            recommended.clone()
        } else {
            None
        },
        confidence,
        reason,
    };
    if in_a_row >= MAX_MENUS_IN_A_ROW {
        return ask(format!("{MAX_MENUS_IN_A_ROW} menus answered in a row"));
    }
    if confidence < 80.0 {
        return ask(format!("confidence {confidence:.0} is below 80"));
    }
    if let Some(c) = d.continue_option() {
        if let Batch::UpTo(n) = tier.batch()
            && continues + 1 >= n
        {
            return ask(format!(
                "level {} confirms every {n}{} continue",
                tier.level(),
                match n {
                    1 => "",
                    2 => "nd",
                    3 => "rd",
                    _ => "th",
                }
            ));
        }
        return MenuDecision::Select {
            key: c.key.clone(),
            label: c.label.clone(),
            confidence,
            reason: format!("continue within level {}'s batch", tier.level()),
        };
    }
    match (tier.batch(), d.options.first()) {
        (Batch::All, Some(first)) => MenuDecision::Select {
            key: first.key.clone(),
            label: first.label.clone(),
            confidence,
            reason: format!("level {} takes the first option", tier.level()),
        },
        _ => ask("a choice other than continue".into()),
    }
}

/// What baton says to the skill when it asks a question and no person is asked: the project's
/// input if there is one, and leave to decide with every assumption recorded.
pub fn default_reply(input: Option<&str>) -> String {
    let mut s = String::from(
        "I am not available to answer: decide as an expert would, record every assumption you \
         make, and go on.",
    );
    if let Some(i) = input.filter(|i| !i.trim().is_empty()) {
        s.push_str("\nWhat I gave you at the start:\n");
        s.push_str(i.trim());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autopilot::menu::MenuOption;

    fn menu(score: u32, keys: &[(&str, &str)]) -> Detection {
        Detection {
            score,
            options: keys
                .iter()
                .map(|(k, l)| MenuOption {
                    key: (*k).into(),
                    label: (*l).into(),
                })
                .collect(),
        }
    }

    fn t(l: u8) -> Tier {
        Tier::new(l).unwrap()
    }

    #[test]
    fn a_turn_is_a_status_a_failed_validation_a_menu_a_question_or_the_end() {
        let status = "Done.\n```json\n{\"status\": \"complete\", \"intent\": \"create\"}\n```";
        assert!(matches!(read(status, true, &[]), Reading::Status(Ok(_))));
        assert!(matches!(read(status, false, &[]), Reading::Status(Ok(_))));
        assert!(matches!(
            read("Here is your PRD!", true, &[]),
            Reading::Status(Err(_))
        ));
        assert!(matches!(
            read("Verdict: FAIL\n- no NFRs\n\n[C] Continue", false, &[]),
            Reading::Validation(_)
        ));
        let m = read(
            "Verdict: PASS\n\nSelect an option:\n[A] Advanced Elicitation\n[P] Party Mode\n[C] Continue",
            false,
            &[],
        );
        assert!(matches!(&m, Reading::Menu(d, Some(v)) if d.is_menu() && v.passed));
        assert_eq!(
            read("Who are the users?", false, &[]),
            Reading::Question("Who are the users?".into())
        );
        assert_eq!(read("All written.", false, &[]), Reading::Finished);
    }

    #[test]
    fn continues_follow_the_tier_batch() {
        let d = menu(100, &[("A", "Advanced"), ("C", "Continue")]);
        // (tier, continues taken since a person answered, selects?)
        let table = [
            (0, 50, true),
            (1, 9, true),
            (2, 3, true),
            (2, 4, false),
            (3, 1, true),
            (3, 2, false),
            (4, 0, false),
        ];
        for (level, continues, selects) in table {
            let got = decide_menu(&d, t(level), continues, continues.min(9), None);
            assert_eq!(
                matches!(got, MenuDecision::Select { ref key, .. } if key == "C"),
                selects,
                "level {level} after {continues}: {got:?}"
            );
        }
        // Level 4's checkpoint on a clear menu is minimal and recommends continue.
        assert!(matches!(
            decide_menu(&d, t(4), 0, 0, None),
            MenuDecision::Checkpoint { format: CheckpointFormat::Minimal, recommended: Some(k), .. } if k == "C"
        ));
    }

    #[test]
    fn low_confidence_asks_with_the_format_it_calls_for() {
        let d = menu(75, &[("C", "Continue")]);
        // 75 + 5 at level 1 = 80: taken.
        assert!(matches!(
            decide_menu(&d, t(1), 0, 0, None),
            MenuDecision::Select { .. }
        ));
        // 75 + 0 at level 2: a summary with a recommendation.
        assert!(matches!(
            decide_menu(&d, t(2), 0, 0, None),
            MenuDecision::Checkpoint {
                format: CheckpointFormat::Summary,
                recommended: Some(_),
                ..
            }
        ));
        // After a failing validation: 45 at level 2, a full audit without recommendation.
        assert!(matches!(
            decide_menu(&d, t(2), 0, 0, Some(false)),
            MenuDecision::Checkpoint {
                format: CheckpointFormat::FullAudit,
                recommended: None,
                ..
            }
        ));
        assert_eq!(menu_confidence(&menu(100, &[]), t(1), None), 100.0);
        assert_eq!(menu_confidence(&menu(70, &[]), t(4), Some(false)), 30.0);
    }

    #[test]
    fn other_choices_and_long_runs_go_to_a_person() {
        let d = menu(100, &[("1", "Create"), ("2", "Update")]);
        assert!(matches!(
            decide_menu(&d, t(1), 0, 0, None),
            MenuDecision::Select { key, .. } if key == "1"
        ));
        assert!(matches!(
            decide_menu(&d, t(2), 0, 0, None),
            MenuDecision::Checkpoint { .. }
        ));
        let c = menu(100, &[("C", "Continue")]);
        assert!(matches!(
            decide_menu(&c, t(0), 10, 10, None),
            MenuDecision::Checkpoint { reason, .. } if reason.contains("10 menus")
        ));
    }

    #[test]
    fn the_default_reply_carries_the_input() {
        assert!(default_reply(None).contains("record every assumption"));
        assert!(default_reply(Some("a todo app")).ends_with("a todo app"));
    }
}
