//! How sure the autopilot is of a decision, 0–100, from up to four signals (and an optional
//! fifth):
//!
//! | signal | points | priority when signals conflict |
//! |---|---|---|
//! | validation verdict | 0–35 | ×1.5 |
//! | memory match | 0–25 | ×1.25 |
//! | reviewer agreement | 0–25 | ×1.0 |
//! | party-mode outcome | 0–15 | ×0.75 |
//! | model selection (optional) | 0–10 | ×1.0 |
//!
//! Each signal present is read as a share of its maximum; the score is their average weighted by
//! those maxima (so four full signals add up to their points, and a missing signal does not drag
//! the score down). When two present signals differ by more than 30 points on that 0–100 scale
//! they conflict, and each weight is multiplied by its priority. The tier's adjustment is added,
//! the result kept within 0–100, and a score resting on one signal is capped at 60. No signal at
//! all gives 25; a signal that is not a number, or outside its range, makes the calculation fail,
//! which gives 30.

use super::tier::Tier;

/// The default with no signal.
pub const NO_SIGNALS: f64 = 25.0;
/// The score when the calculation fails.
pub const ON_FAILURE: f64 = 30.0;
/// The most a single signal can justify.
pub const SINGLE_SOURCE_CAP: f64 = 60.0;
/// How far apart two signals (0–100) must be to conflict.
pub const CONFLICT_SPREAD: f64 = 30.0;

/// The signals, in points; `None` where there is none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    /// The validation verdict, 0–35.
    pub validation: Option<f64>,
    /// How well memories match, 0–25.
    pub memory: Option<f64>,
    /// Whether reviewers agree, 0–25.
    pub reviewers: Option<f64>,
    /// What a party concluded, 0–15.
    pub party: Option<f64>,
    /// The model selection, 0–10.
    pub model: Option<f64>,
}

/// High, medium or low.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// 70 and above.
    High,
    /// 40 to 69.
    Medium,
    /// Below 40.
    Low,
}

/// How a checkpoint is shown to a person, by the decision's confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointFormat {
    /// 80 and above: a line or two and one confirmation.
    Minimal,
    /// 50 to 79: the key decisions, details on request.
    Summary,
    /// Below 50: everything that led to it.
    FullAudit,
}

/// A computed confidence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confidence {
    /// 0–100.
    pub score: f64,
    /// Whether present signals conflicted (and priorities decided).
    pub conflicting: bool,
    /// How many signals it rests on.
    pub sources: usize,
    /// Whether the calculation failed and the fallback was used.
    pub failed: bool,
}

impl Confidence {
    /// Its level.
    pub fn level(self) -> Level {
        if self.score >= 70.0 {
            Level::High
        } else if self.score >= 40.0 {
            Level::Medium
        } else {
            Level::Low
        }
    }

    /// Whether baton may decide alone (80 and above).
    pub fn autonomous(self) -> bool {
        self.score >= 80.0
    }

    /// The checkpoint format its score calls for.
    pub fn checkpoint(self) -> CheckpointFormat {
        if self.score >= 80.0 {
            CheckpointFormat::Minimal
        } else if self.score >= 50.0 {
            CheckpointFormat::Summary
        } else {
            CheckpointFormat::FullAudit
        }
    }
}

/// The confidence of a decision at `tier` from `signals`.
pub fn calculate(signals: &Signals, tier: Tier) -> Confidence {
    let present: Vec<(f64, f64, f64)> = [
        (signals.validation, 35.0, 1.5),
        (signals.memory, 25.0, 1.25),
        (signals.reviewers, 25.0, 1.0),
        (signals.party, 15.0, 0.75),
        (signals.model, 10.0, 1.0),
    ]
    .into_iter()
    .filter_map(|(v, max, priority)| v.map(|v| (v, max, priority)))
    .collect();
    if present.is_empty() {
        return Confidence {
            score: NO_SIGNALS,
            conflicting: false,
            sources: 0,
            failed: false,
        };
    }
    if present
        .iter()
        .any(|(v, max, _)| !v.is_finite() || *v < 0.0 || v > max)
    {
        return Confidence {
            score: ON_FAILURE,
            conflicting: false,
            sources: present.len(),
            failed: true,
        };
    }
    let normalised: Vec<f64> = present.iter().map(|(v, max, _)| v / max * 100.0).collect();
    let hi = normalised.iter().copied().fold(f64::MIN, f64::max);
    let lo = normalised.iter().copied().fold(f64::MAX, f64::min);
    let conflicting = present.len() > 1 && hi - lo > CONFLICT_SPREAD;
    let (sum, weights) =
        present
            .iter()
            .zip(&normalised)
            .fold((0.0, 0.0), |(s, w), ((_, max, priority), n)| {
                let weight = if conflicting { max * priority } else { *max };
                (s + n * weight, w + weight)
            });
    let mut score = (sum / weights + f64::from(tier.confidence_adjustment())).clamp(0.0, 100.0);
    if present.len() == 1 {
        score = score.min(SINGLE_SOURCE_CAP);
    }
    Confidence {
        score,
        conflicting,
        sources: present.len(),
        failed: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier(l: u8) -> Tier {
        Tier::new(l).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_table() {
        let all = |v, m, r, p| Signals {
            validation: Some(v),
            memory: Some(m),
            reviewers: Some(r),
            party: Some(p),
            model: None,
        };
        // (signals, tier, score, conflicting, sources)
        let table: Vec<(Signals, u8, f64, bool, usize)> = vec![
            // Nothing: the default, whatever the tier.
            (Signals::default(), 0, 25.0, false, 0),
            (Signals::default(), 4, 25.0, false, 0),
            // Four full signals add up to their points.
            (all(35.0, 25.0, 25.0, 15.0), 2, 100.0, false, 4),
            (all(28.0, 20.0, 20.0, 12.0), 2, 80.0, false, 4),
            // The tier's adjustment, kept within 0–100.
            (all(28.0, 20.0, 20.0, 12.0), 4, 70.0, false, 4),
            (all(35.0, 25.0, 25.0, 15.0), 0, 100.0, false, 4),
            // One source is capped at 60.
            (
                Signals {
                    validation: Some(35.0),
                    ..Signals::default()
                },
                0,
                60.0,
                false,
                1,
            ),
            (
                Signals {
                    party: Some(3.0),
                    ..Signals::default()
                },
                2,
                20.0,
                false,
                1,
            ),
            // A missing signal does not drag the score down: 80 % and 80 %.
            (
                Signals {
                    validation: Some(28.0),
                    reviewers: Some(20.0),
                    ..Signals::default()
                },
                2,
                80.0,
                false,
                2,
            ),
            // Conflict (100 vs 20): validation outweighs the reviewers by priority.
            // (100·35·1.5 + 20·25·1.0) / (35·1.5 + 25) = 5750 / 77.5
            (
                Signals {
                    validation: Some(35.0),
                    reviewers: Some(5.0),
                    ..Signals::default()
                },
                2,
                5750.0 / 77.5,
                true,
                2,
            ),
        ];
        for (signals, t, score, conflicting, sources) in table {
            let c = calculate(&signals, tier(t));
            assert!(
                close(c.score, score),
                "{signals:?} at {t}: {} ≠ {score}",
                c.score
            );
            assert_eq!(
                (c.conflicting, c.sources, c.failed),
                (conflicting, sources, false),
                "{signals:?}"
            );
        }
    }

    #[test]
    fn priority_only_matters_when_signals_conflict() {
        let agree = Signals {
            validation: Some(35.0 * 0.8),
            party: Some(15.0 * 0.6),
            ..Signals::default()
        };
        // 80 vs 60: within 30, a plain weighted average.
        let c = calculate(&agree, tier(2));
        assert!(!c.conflicting);
        assert!(close(c.score, (80.0 * 35.0 + 60.0 * 15.0) / 50.0));
    }

    #[test]
    fn a_fifth_signal_keeps_the_scale() {
        let s = Signals {
            validation: Some(35.0),
            memory: Some(25.0),
            reviewers: Some(25.0),
            party: Some(15.0),
            model: Some(10.0),
        };
        assert!(close(calculate(&s, tier(2)).score, 100.0));
        // 80 % of the model signal is within 30 points of the others: a plain average.
        let most = Signals {
            model: Some(8.0),
            ..s
        };
        assert!(close(
            calculate(&most, tier(2)).score,
            108.0 / 110.0 * 100.0
        ));
    }

    #[test]
    fn garbage_fails_to_thirty() {
        for bad in [f64::NAN, f64::INFINITY, -1.0, 36.0] {
            let c = calculate(
                &Signals {
                    validation: Some(bad),
                    memory: Some(20.0),
                    ..Signals::default()
                },
                tier(2),
            );
            assert_eq!((c.score, c.failed), (ON_FAILURE, true), "{bad}");
        }
    }

    #[test]
    fn levels_decisions_and_checkpoint_formats() {
        let at = |score| Confidence {
            score,
            conflicting: false,
            sources: 2,
            failed: false,
        };
        let table = [
            (100.0, Level::High, true, CheckpointFormat::Minimal),
            (80.0, Level::High, true, CheckpointFormat::Minimal),
            (79.9, Level::High, false, CheckpointFormat::Summary),
            (70.0, Level::High, false, CheckpointFormat::Summary),
            (69.9, Level::Medium, false, CheckpointFormat::Summary),
            (50.0, Level::Medium, false, CheckpointFormat::Summary),
            (49.9, Level::Medium, false, CheckpointFormat::FullAudit),
            (40.0, Level::Medium, false, CheckpointFormat::FullAudit),
            (39.9, Level::Low, false, CheckpointFormat::FullAudit),
            (0.0, Level::Low, false, CheckpointFormat::FullAudit),
        ];
        for (score, level, auto, format) in table {
            let c = at(score);
            assert_eq!(
                (c.level(), c.autonomous(), c.checkpoint()),
                (level, auto, format),
                "{score}"
            );
        }
    }
}
