//! Budget arithmetic: how much a run may spend, and whether it has.
//!
//! Limits are in US dollars (`warn_usd`, `hard_usd`) and tokens (input, output). A run is checked
//! before every model call and while a response streams in (with the stream's estimated cost
//! added); crossing a hard limit stops it.

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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_limits_win_over_warnings() {
        let l = BudgetLimits {
            warn_usd: Some(1.0),
            hard_usd: Some(2.0),
            max_input_tokens: None,
            max_output_tokens: Some(100),
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
}
