//! What a project's tier (BMad's level 0–4) lets the autopilot do between human checkpoints:
//! how many "continue" menus it may answer in a row, how much a decision's confidence is
//! adjusted, and the pacing of menus.

use std::time::Duration;

/// A project's tier, BMad's level 0 (a fix) to 4 (an enterprise system).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tier(u8);

impl Tier {
    /// The highest tier.
    pub const MAX: u8 = 4;

    /// Tier `level`, or `None` above 4.
    pub fn new(level: u8) -> Option<Tier> {
        (level <= Tier::MAX).then_some(Tier(level))
    }

    /// Its level.
    pub fn level(self) -> u8 {
        self.0
    }

    /// How many continue menus may be answered before a checkpoint: all of them at levels 0–1,
    /// up to 5 at level 2, up to 3 at level 3, and one at level 4.
    pub fn batch(self) -> Batch {
        match self.0 {
            0 | 1 => Batch::All,
            2 => Batch::UpTo(5),
            3 => Batch::UpTo(3),
            _ => Batch::UpTo(1),
        }
    }

    /// Points added to a decision's confidence: a simple project's decisions weigh a little
    /// more, a complex one's less, so the same signals stop sooner for a human at level 4.
    pub fn confidence_adjustment(self) -> i32 {
        match self.0 {
            0 | 1 => 5,
            2 => 0,
            3 => -5,
            _ => -10,
        }
    }

    /// Whether a party must review before the workflow's final step (levels 3–4).
    pub fn party_before_final(self) -> bool {
        self.0 >= 3
    }
}

/// How many continue menus are answered between checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batch {
    /// Every one: no checkpoint for continues.
    All,
    /// At most this many, then a checkpoint.
    UpTo(u32),
}

impl Batch {
    /// Whether a checkpoint is due after `answered` continues in a row.
    pub fn checkpoint_due(self, answered: u32) -> bool {
        match self {
            Batch::All => false,
            Batch::UpTo(n) => answered >= n,
        }
    }
}

/// The least time between two menus presented in a row.
pub const MENU_INTERVAL: Duration = Duration::from_secs(2);

/// Menus in a row after which the autopilot pauses for a human, whatever the tier.
pub const MAX_MENUS_IN_A_ROW: u32 = 10;

/// Pacing of menus: how long to wait before answering the next one (`since_last` after the
/// previous), and whether the run must pause because `in_a_row` menus came without a pause.
pub fn pace(since_last: Option<Duration>, in_a_row: u32) -> (Duration, bool) {
    let wait = since_last.map_or(Duration::ZERO, |d| MENU_INTERVAL.saturating_sub(d));
    (wait, in_a_row >= MAX_MENUS_IN_A_ROW)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_and_adjustments_follow_the_tier() {
        let table = [
            (0, Batch::All, 5, false),
            (1, Batch::All, 5, false),
            (2, Batch::UpTo(5), 0, false),
            (3, Batch::UpTo(3), -5, true),
            (4, Batch::UpTo(1), -10, true),
        ];
        for (level, batch, adj, party) in table {
            let t = Tier::new(level).unwrap();
            assert_eq!(t.batch(), batch, "level {level}");
            assert_eq!(t.confidence_adjustment(), adj, "level {level}");
            assert_eq!(t.party_before_final(), party, "level {level}");
        }
        assert_eq!(Tier::new(5), None);
    }

    #[test]
    fn a_checkpoint_comes_after_the_batch() {
        assert!(!Batch::All.checkpoint_due(1_000));
        assert!(!Batch::UpTo(5).checkpoint_due(4));
        assert!(Batch::UpTo(5).checkpoint_due(5));
        assert!(Batch::UpTo(1).checkpoint_due(1));
    }

    #[test]
    fn menus_are_two_seconds_apart_and_pause_after_ten() {
        assert_eq!(pace(None, 0), (Duration::ZERO, false));
        assert_eq!(
            pace(Some(Duration::from_millis(500)), 3),
            (Duration::from_millis(1500), false)
        );
        assert_eq!(
            pace(Some(Duration::from_secs(9)), 9),
            (Duration::ZERO, false)
        );
        assert!(pace(Some(Duration::from_secs(9)), 10).1);
    }
}
