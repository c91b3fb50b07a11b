//! Party mode: when the autopilot calls several agents to discuss, and how a party ends.
//!
//! A party is called when a validation reports more than 3 blocking errors or more than 5 major
//! issues (BMad Builder's thresholds), on a stall ([`super::stall`]), when confidence is below 60
//! at tier 2 or above, and always before the final step at tiers 3–4. A compliance score below
//! 70 calls for advanced elicitation instead. A party ends on an exit keyword, matched literally
//! as a whole line: `*exit` (the asterisk is part of it), `goodbye`, `end party`, `quit`.
//! Answers still arriving get [`GRACE`] before the party is closed.

use super::tier::Tier;
use std::time::Duration;

/// The keywords that end a party, matched exactly.
pub const EXIT_KEYWORDS: [&str; 4] = ["*exit", "goodbye", "end party", "quit"];

/// How long answers in flight get once a party ends.
pub const GRACE: Duration = Duration::from_millis(500);

/// Whether `message` ends the party: one of its lines, trimmed, is an exit keyword exactly.
pub fn is_exit(message: &str) -> bool {
    message
        .lines()
        .map(str::trim)
        .any(|l| EXIT_KEYWORDS.contains(&l))
}

/// What a validation of BMad Builder's calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Go on.
    Continue,
    /// Call a party.
    Party,
    /// Run advanced elicitation.
    AdvancedElicitation,
}

/// BMad Builder's thresholds: a party for more than 3 blocking errors or more than 5 major
/// issues; advanced elicitation for a compliance score below 70; otherwise continue.
pub fn gate(blocking_errors: u32, major_issues: u32, compliance: Option<f64>) -> Gate {
    if blocking_errors > 3 || major_issues > 5 {
        Gate::Party
    } else if compliance.is_some_and(|c| c < 70.0) {
        Gate::AdvancedElicitation
    } else {
        Gate::Continue
    }
}

/// Whether a party is due at `tier` for a decision of `confidence`, before the final step or
/// not.
pub fn due(tier: Tier, confidence: f64, before_final: bool) -> bool {
    (tier.level() >= 2 && confidence < 60.0) || (before_final && tier.party_before_final())
}

/// A simulated party (below tier 2) has 3 to 5 personas.
pub fn simulated_size(available: usize) -> Option<usize> {
    (available >= 3).then_some(available.min(5))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_keywords_end_a_party() {
        for yes in [
            "*exit",
            "goodbye",
            "end party",
            "quit",
            "  *exit  ",
            "Thanks all.\n*exit\n",
        ] {
            assert!(is_exit(yes), "{yes:?}");
        }
        for no in [
            "exit",
            "* exit",
            "*EXIT",
            "Goodbye",
            "goodbye!",
            "let's end party soon",
            "quitting",
            "we should quit now",
            "",
        ] {
            assert!(!is_exit(no), "{no:?}");
        }
    }

    #[test]
    fn builder_thresholds() {
        let table = [
            (4, 0, None, Gate::Party),
            (0, 6, Some(90.0), Gate::Party),
            (3, 5, Some(69.9), Gate::AdvancedElicitation),
            (3, 5, Some(70.0), Gate::Continue),
            (0, 0, None, Gate::Continue),
        ];
        for (b, m, c, want) in table {
            assert_eq!(gate(b, m, c), want, "{b} {m} {c:?}");
        }
    }

    #[test]
    fn when_a_party_is_due() {
        let t = |l| Tier::new(l).unwrap();
        assert!(!due(t(1), 10.0, false));
        assert!(due(t(2), 59.9, false));
        assert!(!due(t(2), 60.0, true));
        assert!(due(t(3), 95.0, true));
        assert!(!due(t(3), 95.0, false));
        assert_eq!(simulated_size(2), None);
        assert_eq!(simulated_size(3), Some(3));
        assert_eq!(simulated_size(12), Some(5));
    }
}
