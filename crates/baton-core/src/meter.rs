//! The token meter: what model calls used and cost, with the prompt cache's share kept apart.
//!
//! One [`Meter`] is the sum of some model calls: a stage, a story, a run, a sprint. Every front
//! end (the sprint report, `--json`, `baton status`, the board, the budget's projection) shows
//! the same four counts and the same dollars, so a figure means one thing wherever it appears.
//!
//! # The counting rule
//!
//! `input_tokens` is **every** input token the model read: the uncached ones, the ones read from
//! the prompt cache and the ones written to it. `cache_read_tokens` and `cache_write_tokens` are
//! parts of it, never added on top; the uncached part is what is left
//! ([`Meter::uncached_input_tokens`]). Providers report input differently, and each wire turns
//! its report into this rule once, where it is read:
//!
//! - Anthropic's `input_tokens` *excludes* the cache: all input is `input_tokens +
//!   cache_read_input_tokens + cache_creation_input_tokens` (Claude Code's stream and pi report
//!   the same way);
//! - OpenAI's `prompt_tokens` (Codex: `input_tokens`) *include* the cached ones
//!   (`prompt_tokens_details.cached_tokens`, Codex: `cached_input_tokens`): the uncached part is
//!   `prompt_tokens - cached_tokens`, and the cached tokens are cache reads (OpenAI bills no
//!   cache writes).
//!
//! Below the wires, a call's usage holds uncached input, cache reads and cache writes as three
//! separate counts (`baton_llm::Usage`), so nothing is counted twice; a [`Meter`] is made from
//! those three with [`Meter::of_call`].
//!
//! # Prices
//!
//! Dollars are computed per call at the model's price for each kind of token (uncached input,
//! cache read, cache write, output; `baton_llm::pricing`) and summed: Anthropic bills a cache
//! read at 0.1 × the input price and a cache write at 1.25 × (5-minute entries) or 2 × (1-hour
//! entries); OpenAI bills cached input at its own per-model price.

use serde::{Deserialize, Serialize};

/// Tokens and dollars of some model calls. See the module's counting rule: `input_tokens`
/// includes the cache reads and writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Meter {
    /// Every input token: uncached, read from the cache and written to it.
    pub input_tokens: u64,
    /// The part of `input_tokens` read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the provider's prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// US dollars, each kind of token at its own price.
    pub cost_usd: f64,
}

impl Meter {
    /// One call's meter from its usage as the wires leave it: `uncached` input (cache excluded),
    /// cache reads, cache writes, output, and its cost.
    pub fn of_call(uncached: u64, read: u64, write: u64, output: u64, cost_usd: f64) -> Meter {
        Meter {
            input_tokens: uncached.saturating_add(read).saturating_add(write),
            cache_read_tokens: read,
            cache_write_tokens: write,
            output_tokens: output,
            cost_usd,
        }
    }

    /// The input tokens neither read from nor written to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    /// The sum of two meters.
    pub fn plus(self, other: Meter) -> Meter {
        Meter {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            cache_read_tokens: self
                .cache_read_tokens
                .saturating_add(other.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(other.cache_write_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cost_usd: self.cost_usd + other.cost_usd,
        }
    }

    /// Adds `other` to this meter.
    pub fn add(&mut self, other: Meter) {
        *self = self.plus(other);
    }

    /// The average of `n` of whatever this meter sums (itself when `n` is 0 or 1).
    pub fn per(self, n: u32) -> Meter {
        if n <= 1 {
            return self;
        }
        let each = |v: u64| v / u64::from(n);
        Meter {
            input_tokens: each(self.input_tokens),
            cache_read_tokens: each(self.cache_read_tokens),
            cache_write_tokens: each(self.cache_write_tokens),
            output_tokens: each(self.output_tokens),
            cost_usd: self.cost_usd / f64::from(n),
        }
    }

    /// Nothing was used.
    pub fn is_empty(&self) -> bool {
        self.input_tokens == 0 && self.output_tokens == 0 && self.cost_usd == 0.0
    }

    /// The share of the input read from the cache, in whole percent (`None` without input).
    pub fn cache_read_percent(&self) -> Option<u64> {
        (self.input_tokens > 0).then(|| {
            let share = self.cache_read_tokens as f64 * 100.0 / self.input_tokens as f64;
            share.round() as u64
        })
    }

    /// One line for people: `7502 in (5000 cache read, 1000 cache write), 357 out, $0.0123`;
    /// the parenthesis only when the cache was used.
    pub fn describe(&self) -> String {
        let cache = match (self.cache_read_tokens, self.cache_write_tokens) {
            (0, 0) => String::new(),
            (r, w) => format!(" ({r} cache read, {w} cache write)"),
        };
        format!(
            "{} in{cache}, {} out, ${:.4}",
            self.input_tokens, self.output_tokens, self.cost_usd
        )
    }
}

impl std::iter::Sum for Meter {
    fn sum<I: Iterator<Item = Meter>>(iter: I) -> Meter {
        iter.fold(Meter::default(), Meter::plus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_includes_the_cache_and_the_uncached_part_is_what_is_left() {
        let m = Meter::of_call(100, 900, 50, 20, 0.01);
        assert_eq!(m.input_tokens, 1050);
        assert_eq!(m.uncached_input_tokens(), 100);
        assert_eq!(m.cache_read_percent(), Some(86));
        assert_eq!(Meter::default().cache_read_percent(), None);
    }

    #[test]
    fn meters_sum_field_by_field() {
        let a = Meter::of_call(10, 20, 30, 4, 0.5);
        let b = Meter::of_call(1, 2, 3, 5, 0.25);
        let total: Meter = [a, b].into_iter().sum();
        assert_eq!(total, Meter::of_call(11, 22, 33, 9, 0.75));
        let mut c = a;
        c.add(b);
        assert_eq!(c, total);
        assert!(Meter::default().is_empty() && !a.is_empty());
        let half = Meter {
            input_tokens: 33,
            cache_read_tokens: 11,
            cache_write_tokens: 16,
            output_tokens: 4,
            cost_usd: 0.375,
        };
        assert_eq!(total.per(2), half);
        assert_eq!(total.per(0), total);
    }

    #[test]
    fn the_line_shows_the_cache_only_when_it_was_used() {
        assert_eq!(
            Meter::of_call(10, 0, 0, 3, 0.0).describe(),
            "10 in, 3 out, $0.0000"
        );
        assert_eq!(
            Meter::of_call(10, 80, 10, 3, 0.0123).describe(),
            "100 in (80 cache read, 10 cache write), 3 out, $0.0123"
        );
    }

    #[test]
    fn json_of_an_older_writer_without_the_cache_fields_reads() {
        let m: Meter =
            serde_json::from_str(r#"{"input_tokens":5,"output_tokens":1,"cost_usd":0.5}"#)
                .expect("reads");
        assert_eq!(m, Meter::of_call(5, 0, 0, 1, 0.5));
    }
}
