//! Budget arithmetic: how much a run may spend, and whether it has.
//!
//! Limits are in US dollars (`warn_usd`, `hard_usd`) and tokens (input, output). A run is checked
//! before every model call and while a response streams in (with the stream's estimated cost
//! added); crossing a hard limit stops it. Before an agent is dispatched, its cost is projected
//! from that agent's average so far ([`BudgetLimits::admit`]): a dispatch that would cross
//! `warn_usd` is warned about, one that would cross `hard_usd` is refused unless
//! `allow_over_budget` (the stream is still stopped at the hard limit). Starting several stories
//! at once is projected from what a finished story used on average ([`BudgetLimits::fan_out`]),
//! its dollars priced with the cache's own rates and its cache share shown.

use crate::meter::Meter;
use serde::{Deserialize, Serialize};

/// Limits of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetLimits {
    /// Warn once spending reaches this.
    pub warn_usd: Option<f64>,
    /// Stop once spending reaches this.
    pub hard_usd: Option<f64>,
    /// Stop once this many input tokens were used.
    pub max_input_tokens: Option<u64>,
    /// Stop once this many output tokens were used.
    pub max_output_tokens: Option<u64>,
    /// Dispatch an agent even when its projected cost crosses `hard_usd`.
    #[serde(default)]
    pub allow_over_budget: bool,
}

/// Whether an agent may be dispatched, from its projected cost.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Go ahead.
    Go,
    /// Go ahead, but say this first.
    Warn(String),
    /// Do not dispatch.
    Refuse(String),
}

/// What a run has spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spend {
    /// US dollars.
    pub usd: f64,
    /// Input tokens (all kinds).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

impl Spend {
    /// The sum of two spends.
    pub fn plus(self, other: Spend) -> Spend {
        Spend {
            usd: self.usd + other.usd,
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
        }
    }
}

/// Where a spend stands against the limits.
#[derive(Debug, Clone, PartialEq)]
pub enum BudgetState {
    /// Within every limit.
    Ok,
    /// Past the warning line.
    Warn(String),
    /// A hard limit is reached: stop.
    Exhausted(String),
}

impl BudgetLimits {
    /// Assesses a spend.
    pub fn assess(&self, s: Spend) -> BudgetState {
        if let Some(hard) = self.hard_usd
            && s.usd >= hard
        {
            return BudgetState::Exhausted(format!(
                "hard budget of ${hard} reached (spent ${:.4})",
                s.usd
            ));
        }
        if let Some(max) = self.max_input_tokens
            && s.input_tokens >= max
        {
            return BudgetState::Exhausted(format!(
                "input token cap of {max} reached ({} used)",
                s.input_tokens
            ));
        }
        if let Some(max) = self.max_output_tokens
            && s.output_tokens >= max
        {
            return BudgetState::Exhausted(format!(
                "output token cap of {max} reached ({} used)",
                s.output_tokens
            ));
        }
        if let Some(warn) = self.warn_usd
            && s.usd >= warn
        {
            return BudgetState::Warn(format!(
                "spent ${:.4}, past the warning line of ${warn}",
                s.usd
            ));
        }
        BudgetState::Ok
    }

    /// Whether `agent` may be dispatched with `spent_usd` spent, its run projected to cost
    /// `projected_usd` (its average so far; `None`: no run of it yet, nothing to project).
    pub fn admit(&self, agent: &str, spent_usd: f64, projected_usd: Option<f64>) -> Admission {
        let Some(next) = projected_usd.filter(|p| p.is_finite() && *p > 0.0) else {
            return Admission::Go;
        };
        let after = spent_usd + next;
        if let Some(hard) = self.hard_usd
            && after >= hard
        {
            let what = format!(
                "the next `{agent}` run (about ${next:.4}, its average so far) would take \
                 spending from ${spent_usd:.4} to ${after:.4}, past the hard limit of ${hard}"
            );
            return if self.allow_over_budget {
                Admission::Warn(format!(
                    "{what}; dispatched anyway (over budget allowed), it stops at the limit"
                ))
            } else {
                Admission::Refuse(format!(
                    "{what}; not dispatched (allow it with --allow-over-budget)"
                ))
            };
        }
        if let Some(warn) = self.warn_usd
            && spent_usd < warn
            && after >= warn
        {
            return Admission::Warn(format!(
                "the next `{agent}` run (about ${next:.4}, its average so far) would take \
                 spending from ${spent_usd:.4} to ${after:.4}, past the warning line of ${warn}"
            ));
        }
        Admission::Go
    }
}

/// What starting several stories at once is projected to cost, against the limits.
#[derive(Debug, Clone, PartialEq)]
pub enum FanOut {
    /// Within every limit (or no limit is set).
    Within(String),
    /// Past `warn_usd`, within `hard_usd`.
    Warn(String),
    /// Past `hard_usd`: the stories would not all finish.
    Over(String),
    /// No story finished before: nothing to project from.
    Unknown(String),
}

impl FanOut {
    /// The sentence that says it.
    pub fn text(&self) -> &str {
        match self {
            FanOut::Within(s) | FanOut::Warn(s) | FanOut::Over(s) | FanOut::Unknown(s) => s,
        }
    }
}

impl BudgetLimits {
    /// Projects `stories` stories started at once, each using `per_story` (the average of the
    /// stories finished before, its dollars priced with the cache's rates; `None`: none was),
    /// with `spent_usd` spent, against the limits.
    pub fn fan_out(&self, spent_usd: f64, per_story: Option<Meter>, stories: usize) -> FanOut {
        let limits = match (self.warn_usd, self.hard_usd) {
            (None, None) => "no dollar limit is set".to_owned(),
            (Some(w), None) => format!("warning line ${w}, no hard limit"),
            (None, Some(h)) => format!("hard limit ${h}"),
            (Some(w), Some(h)) => format!("warning line ${w}, hard limit ${h}"),
        };
        let Some(story) = per_story.filter(|p| p.cost_usd.is_finite() && p.cost_usd >= 0.0) else {
            return FanOut::Unknown(format!(
                "{stories} stories at once; no story finished before, so their cost cannot be \
                 projected ({limits})"
            ));
        };
        let each = story.cost_usd;
        let n = u32::try_from(stories).unwrap_or(u32::MAX);
        let total = each * f64::from(n);
        let after = spent_usd + total;
        // What a story reads, and how much of it the cache serves, is what its price rests on.
        let tokens = match story.cache_read_percent() {
            Some(cached) => format!(
                ": {} input tokens, {cached} % of them cache reads, and {} output tokens",
                story.input_tokens, story.output_tokens
            ),
            None => String::new(),
        };
        let text = format!(
            "{stories} stories at once: about ${total:.2} (${each:.2} a story, the average so \
             far{tokens}), ${after:.2} with what is spent ({limits})"
        );
        if self.hard_usd.is_some_and(|h| after >= h) {
            FanOut::Over(text)
        } else if self.warn_usd.is_some_and(|w| after >= w) {
            FanOut::Warn(text)
        } else {
            FanOut::Within(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fan_out_is_projected_against_both_limits() {
        let l = BudgetLimits {
            warn_usd: Some(5.0),
            hard_usd: Some(10.0),
            ..BudgetLimits::default()
        };
        let cases = [
            (0.0, Some(1.0), 4, "within"),
            (0.0, Some(1.0), 5, "warn"),
            (2.0, Some(2.0), 4, "over"),
            (0.0, Some(2.5), 4, "over"),
            (9.0, Some(0.0), 8, "warn"),
            (0.0, None, 8, "unknown"),
            (0.0, Some(f64::NAN), 2, "unknown"),
        ];
        let usd = |each: Option<f64>| {
            each.map(|cost_usd| Meter {
                cost_usd,
                ..Meter::default()
            })
        };
        for (spent, each, n, want) in cases {
            let got = match l.fan_out(spent, usd(each), n) {
                FanOut::Within(_) => "within",
                FanOut::Warn(_) => "warn",
                FanOut::Over(_) => "over",
                FanOut::Unknown(_) => "unknown",
            };
            assert_eq!(got, want, "{spent} {each:?} {n}");
        }
        let text = l.fan_out(1.0, usd(Some(1.5)), 4);
        assert!(text.text().contains("about $6.00"), "{}", text.text());
        assert!(
            text.text().contains("$7.00 with what is spent"),
            "{}",
            text.text()
        );
        assert!(matches!(
            BudgetLimits::default().fan_out(100.0, usd(Some(50.0)), 16),
            FanOut::Within(_)
        ));
        // A story's tokens, when known, say how much of its input the cache served.
        let story = Meter::of_call(100_000, 900_000, 50_000, 20_000, 0.75);
        let text = l.fan_out(0.0, Some(story), 2);
        assert!(
            text.text().contains(
                "($0.75 a story, the average so far: 1050000 input tokens, 86 % of them cache \
                 reads, and 20000 output tokens)"
            ),
            "{}",
            text.text()
        );
    }

    #[test]
    fn hard_limits_win_over_warnings() {
        let l = BudgetLimits {
            warn_usd: Some(1.0),
            hard_usd: Some(2.0),
            max_input_tokens: None,
            max_output_tokens: Some(100),
            allow_over_budget: false,
        };
        let spend = |usd, output_tokens| Spend {
            usd,
            input_tokens: 0,
            output_tokens,
        };
        assert_eq!(l.assess(spend(0.5, 0)), BudgetState::Ok);
        assert!(matches!(l.assess(spend(1.5, 0)), BudgetState::Warn(_)));
        assert!(matches!(l.assess(spend(2.0, 0)), BudgetState::Exhausted(_)));
        assert!(matches!(
            l.assess(spend(0.0, 100)),
            BudgetState::Exhausted(_)
        ));
        assert_eq!(
            BudgetLimits::default().assess(spend(1e9, 1 << 40)),
            BudgetState::Ok
        );
    }

    #[test]
    fn a_dispatch_is_projected_from_the_agents_average() {
        let l = BudgetLimits {
            warn_usd: Some(1.0),
            hard_usd: Some(2.0),
            ..BudgetLimits::default()
        };
        // No run of the agent yet: nothing to project.
        assert_eq!(l.admit("a", 1.9, None), Admission::Go);
        assert_eq!(l.admit("a", 0.1, Some(0.5)), Admission::Go);
        // Crossing the warning line warns once it would be crossed, not after.
        let Admission::Warn(w) = l.admit("a", 0.6, Some(0.5)) else {
            panic!()
        };
        assert!(w.contains("warning line of $1"), "{w}");
        assert_eq!(l.admit("a", 1.2, Some(0.5)), Admission::Go);
        // Crossing the hard limit refuses, unless over budget is allowed.
        let Admission::Refuse(r) = l.admit("implementer", 1.6, Some(0.5)) else {
            panic!()
        };
        assert!(
            r.contains("`implementer`") && r.contains("--allow-over-budget"),
            "{r}"
        );
        let over = BudgetLimits {
            allow_over_budget: true,
            ..l
        };
        assert!(matches!(
            over.admit("implementer", 1.6, Some(0.5)),
            Admission::Warn(_)
        ));
        assert_eq!(
            BudgetLimits::default().admit("a", 1e9, Some(1e9)),
            Admission::Go
        );
    }
}
