//! Token prices, for turning [`Usage`] into an estimated cost in US dollars.
//!
//! A small bundled table (USD per million tokens, list prices at the time of writing) keyed by
//! `provider/model`, overridable from configuration. Local providers cost nothing. Prices are an
//! estimate for budgets, not an invoice: providers change them, and a model missing from the
//! table has no price at all ([`price_for`] returns `None`) rather than a guessed one.
//!
//! A [`Usage`] holds uncached input, cache reads and cache writes as separate counts (each wire
//! turns its provider's report into that: Anthropic's `input_tokens` exclude the cache, OpenAI's
//! `prompt_tokens` include the cached tokens and are reduced by them), so each count is priced
//! once at its own rate: cache reads at `cache_read_per_mtok` (Anthropic: 0.1 × input; OpenAI:
//! its per-model cached-input price), cache writes at `cache_write_per_mtok` (Anthropic's
//! 5-minute entries, 1.25 × input) or, for the part written to 1-hour entries where a stream says
//! so, `cache_write_1h_per_mtok` (2 × input).

use crate::types::{ModelSpec, Usage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(from = "PriceSpec")]
pub struct Price {
    /// Plain input tokens.
    pub input_per_mtok: f64,
    /// Output tokens.
    pub output_per_mtok: f64,
    /// Input tokens read from the prompt cache (default: a tenth of the input price).
    pub cache_read_per_mtok: f64,
    /// Input tokens written to the prompt cache (default: 1.25 × the input price, what
    /// Anthropic bills for 5-minute entries).
    pub cache_write_per_mtok: f64,
    /// Input tokens written to 1-hour cache entries (default: 2 × the input price).
    pub cache_write_1h_per_mtok: f64,
}

/// [`Price`] as written in configuration, cache prices optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceSpec {
    input_per_mtok: f64,
    output_per_mtok: f64,
    #[serde(default)]
    cache_read_per_mtok: Option<f64>,
    #[serde(default)]
    cache_write_per_mtok: Option<f64>,
    #[serde(default)]
    cache_write_1h_per_mtok: Option<f64>,
}

impl From<PriceSpec> for Price {
    fn from(spec: PriceSpec) -> Price {
        Price {
            input_per_mtok: spec.input_per_mtok,
            output_per_mtok: spec.output_per_mtok,
            cache_read_per_mtok: spec
                .cache_read_per_mtok
                .unwrap_or(spec.input_per_mtok * 0.1),
            cache_write_per_mtok: spec
                .cache_write_per_mtok
                .unwrap_or(spec.input_per_mtok * 1.25),
            cache_write_1h_per_mtok: spec
                .cache_write_1h_per_mtok
                .unwrap_or(spec.input_per_mtok * 2.0),
        }
    }
}

impl Price {
    /// A price with the default cache prices (read 0.1 ×, write 1.25 × the input price).
    pub fn new(input_per_mtok: f64, output_per_mtok: f64) -> Price {
        Price::from(PriceSpec {
            input_per_mtok,
            output_per_mtok,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
            cache_write_1h_per_mtok: None,
        })
    }

    /// This price with every cache write billed as a 1-hour entry: for a provider whose cache
    /// breakpoints all ask for the 1-hour lifetime.
    pub fn with_one_hour_writes(self) -> Price {
        Price {
            cache_write_per_mtok: self.cache_write_1h_per_mtok,
            ..self
        }
    }

    /// Nothing to pay.
    pub const FREE: Price = Price {
        input_per_mtok: 0.0,
        output_per_mtok: 0.0,
        cache_read_per_mtok: 0.0,
        cache_write_per_mtok: 0.0,
        cache_write_1h_per_mtok: 0.0,
    };

    fn with_cache(self, read: f64, write: f64) -> Price {
        Price {
            cache_read_per_mtok: read,
            cache_write_per_mtok: write,
            cache_write_1h_per_mtok: write,
            ..self
        }
    }
}

/// Providers that run on the user's machine (or replay scripts) and cost nothing.
pub const FREE_PROVIDERS: &[&str] = &["ollama", "vllm", "llamacpp", "script"];

/// The bundled price table, keyed by `provider/model`.
pub fn bundled_prices() -> BTreeMap<String, Price> {
    // OpenAI bills no cache writes and discounts cache reads per model.
    let entries = [
        ("anthropic/claude-opus-4-5", Price::new(5.0, 25.0)),
        ("anthropic/claude-opus-4-1", Price::new(15.0, 75.0)),
        ("anthropic/claude-sonnet-4-5", Price::new(3.0, 15.0)),
        ("anthropic/claude-haiku-4-5", Price::new(1.0, 5.0)),
        (
            "openai/gpt-5",
            Price::new(1.25, 10.0).with_cache(0.125, 1.25),
        ),
        (
            "openai/gpt-5-mini",
            Price::new(0.25, 2.0).with_cache(0.025, 0.25),
        ),
        ("openai/gpt-4.1", Price::new(2.0, 8.0).with_cache(0.5, 2.0)),
        ("openai/gpt-4o", Price::new(2.5, 10.0).with_cache(1.25, 2.5)),
        (
            "openai/gpt-4o-mini",
            Price::new(0.15, 0.6).with_cache(0.075, 0.15),
        ),
    ];
    entries
        .into_iter()
        .map(|(key, price)| (key.to_owned(), price))
        .collect()
}

/// The price of `spec`: an override for `provider/model` or `provider/*`, else the bundled
/// entry (a dated id such as `gpt-4o-2024-08-06` takes the longest listed model it extends),
/// else free for local providers, else `None`.
pub fn price_for(spec: &ModelSpec, overrides: &BTreeMap<String, Price>) -> Option<Price> {
    let key = spec.to_string();
    if let Some(price) = overrides.get(&key) {
        return Some(*price);
    }
    if let Some(price) = overrides.get(&format!("{}/*", spec.provider)) {
        return Some(*price);
    }
    let bundled = bundled_prices();
    if let Some(price) = bundled.get(&key) {
        return Some(*price);
    }
    let extended = bundled
        .iter()
        .filter(|(listed, _)| {
            key.strip_prefix(listed.as_str())
                .is_some_and(|rest| rest.starts_with('-'))
        })
        .max_by_key(|(listed, _)| listed.len());
    if let Some((_, price)) = extended {
        return Some(*price);
    }
    FREE_PROVIDERS
        .contains(&spec.provider.as_str())
        .then_some(Price::FREE)
}

fn per_million(n: u64) -> f64 {
    n as f64 / 1_000_000.0
}

/// The cost of `usage` at `price`, in USD: uncached input, cache reads, cache writes and output,
/// each at its own rate (every write at `cache_write_per_mtok`).
pub fn cost_usd(usage: &Usage, price: &Price) -> f64 {
    per_million(usage.input_tokens) * price.input_per_mtok
        + per_million(usage.output_tokens) * price.output_per_mtok
        + per_million(usage.cache_read_tokens) * price.cache_read_per_mtok
        + per_million(usage.cache_write_tokens) * price.cache_write_per_mtok
}

/// [`cost_usd`], with `one_hour_writes` of the usage's cache writes (at most all of them) billed
/// at the 1-hour rate: for a stream that reports how its writes split between lifetimes.
pub fn cost_usd_split(usage: &Usage, one_hour_writes: u64, price: &Price) -> f64 {
    let long = one_hour_writes.min(usage.cache_write_tokens);
    cost_usd(usage, price)
        + per_million(long) * (price.cache_write_1h_per_mtok - price.cache_write_per_mtok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> ModelSpec {
        ModelSpec::parse(s).expect("valid spec")
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn bundled_anthropic_prices_have_default_cache_prices() {
        let price = price_for(&spec("anthropic/claude-sonnet-4-5"), &BTreeMap::new());
        let price = price.expect("listed");
        assert!(close(price.input_per_mtok, 3.0) && close(price.output_per_mtok, 15.0));
        assert!(close(price.cache_read_per_mtok, 0.3));
        assert!(close(price.cache_write_per_mtok, 3.75));
    }

    #[test]
    fn dated_ids_take_the_longest_listed_model() {
        let empty = BTreeMap::new();
        let mini = price_for(&spec("openai/gpt-4o-mini-2024-07-18"), &empty).expect("listed");
        assert!(close(mini.input_per_mtok, 0.15));
        let full = price_for(&spec("openai/gpt-4o-2024-08-06"), &empty).expect("listed");
        assert!(close(full.input_per_mtok, 2.5));
        assert!(price_for(&spec("openai/gpt-4oz"), &empty).is_none());
    }

    #[test]
    fn local_providers_are_free_and_unknown_models_unpriced() {
        let empty = BTreeMap::new();
        assert_eq!(price_for(&spec("ollama/llama3"), &empty), Some(Price::FREE));
        assert_eq!(price_for(&spec("script/demo"), &empty), Some(Price::FREE));
        assert_eq!(price_for(&spec("openrouter/some/model"), &empty), None);
    }

    #[test]
    fn overrides_win_and_wildcards_apply() {
        let mut overrides = BTreeMap::new();
        overrides.insert(
            "anthropic/claude-sonnet-4-5".to_owned(),
            Price::new(1.0, 2.0),
        );
        overrides.insert("openrouter/*".to_owned(), Price::new(4.0, 8.0));
        let sonnet = price_for(&spec("anthropic/claude-sonnet-4-5"), &overrides).expect("set");
        assert!(close(sonnet.input_per_mtok, 1.0));
        let routed = price_for(&spec("openrouter/a/b"), &overrides).expect("wildcard");
        assert!(close(routed.output_per_mtok, 8.0));
    }

    #[test]
    fn cost_counts_every_kind_of_token() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 400_000,
        };
        let price = Price::new(3.0, 15.0);
        // 3 + 1.5 + 0.6 + 1.5
        assert!(close(cost_usd(&usage, &price), 6.6));
    }

    #[test]
    fn one_hour_writes_cost_twice_the_input_and_five_minute_ones_a_quarter_more() {
        let price = Price::new(3.0, 15.0);
        assert!(close(price.cache_write_1h_per_mtok, 6.0));
        let usage = Usage {
            cache_write_tokens: 1_000_000,
            ..Usage::default()
        };
        assert!(close(cost_usd(&usage, &price), 3.75));
        assert!(close(cost_usd(&usage, &price.with_one_hour_writes()), 6.0));
        assert!(close(
            cost_usd_split(&usage, 400_000, &price),
            3.75 + 0.4 * 2.25
        ));
        // More 1-hour writes than writes cannot be billed.
        assert!(close(cost_usd_split(&usage, 5_000_000, &price), 6.0));
        // OpenAI bills no cache writes apart from input, whatever their lifetime.
        let gpt = price_for(&spec("openai/gpt-5"), &BTreeMap::new()).expect("listed");
        assert!(close(gpt.cache_write_1h_per_mtok, gpt.cache_write_per_mtok));
    }

    #[test]
    fn openai_cached_input_is_priced_at_the_models_own_cached_rate() {
        // gpt-4o: $2.50 input, $1.25 cached input; prompt_tokens 1 M of which 800 k cached.
        let usage = Usage {
            input_tokens: 200_000,
            cache_read_tokens: 800_000,
            ..Usage::default()
        };
        let gpt4o = price_for(&spec("openai/gpt-4o"), &BTreeMap::new()).expect("listed");
        assert!(close(cost_usd(&usage, &gpt4o), 0.5 + 1.0));
    }

    #[test]
    fn prices_deserialize_with_default_cache_fields_and_refuse_unknown_ones() {
        let price: Price =
            serde_json::from_str(r#"{"input_per_mtok": 2.0, "output_per_mtok": 4.0}"#)
                .expect("valid");
        assert!(close(price.cache_read_per_mtok, 0.2) && close(price.cache_write_per_mtok, 2.5));
        assert!(close(price.cache_write_1h_per_mtok, 4.0));
        let explicit: Price = serde_json::from_str(
            r#"{"input_per_mtok": 2.0, "output_per_mtok": 4.0, "cache_read_per_mtok": 1.0}"#,
        )
        .expect("valid");
        assert!(close(explicit.cache_read_per_mtok, 1.0));
        let typo = r#"{"input_per_mtok": 2.0, "output_per_mtok": 4.0, "input": 1}"#;
        assert!(serde_json::from_str::<Price>(typo).is_err());
    }
}
