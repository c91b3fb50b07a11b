//! The model clients of a run's native agents: one per `provider/model`, shared by every agent
//! that uses it, with the price its calls are billed at and the output cap of each turn.

use super::{DEFAULT_MAX_TOKENS, Setup, SetupError};
use baton_llm::pricing;
use baton_llm::registry;
use baton_llm::{ModelClient, ModelSpec};
use std::sync::Arc;

impl Setup {
    /// The price of a native agent's calls on `spec`: the model's price, its cache writes billed
    /// at the 1-hour rate when the provider's breakpoints ask for the 1-hour lifetime.
    pub(super) fn native_price(&self, spec: &ModelSpec) -> Option<pricing::Price> {
        let price = pricing::price_for(spec, &self.prices);
        let one_hour = registry::resolve_provider(&spec.provider, &self.providers)
            .is_ok_and(|p| p.cache == Some(baton_llm::cache::PromptCache::OneHour));
        if one_hour {
            price.map(pricing::Price::with_one_hour_writes)
        } else {
            price
        }
    }

    pub(super) fn client(
        &self,
        agent: &str,
        spec: &ModelSpec,
    ) -> Result<Arc<dyn ModelClient>, SetupError> {
        let key = spec.to_string();
        if let Ok(cache) = self.clients.lock()
            && let Some(c) = cache.get(&key)
        {
            return Ok(c.clone());
        }
        let client =
            registry::build_client(spec, &self.providers, &self.root).map_err(|source| {
                SetupError::Client {
                    agent: agent.to_owned(),
                    source,
                }
            })?;
        if let Ok(mut cache) = self.clients.lock() {
            cache.insert(key, client.clone());
        }
        Ok(client)
    }

    /// The output cap of agent `agent` on `spec`: the smaller of the agent's (its own entry, else
    /// the agents' default) and the provider's, [`DEFAULT_MAX_TOKENS`] when neither is set.
    pub fn max_tokens_for(&self, agent: &str, spec: &ModelSpec) -> u32 {
        let agent_cap = self
            .agent_max_tokens
            .get(agent)
            .copied()
            .or(self.max_tokens);
        let provider_cap = registry::resolve_provider(&spec.provider, &self.providers)
            .ok()
            .and_then(|p| p.max_tokens);
        match (agent_cap, provider_cap) {
            (Some(a), Some(p)) => a.min(p),
            (Some(n), None) | (None, Some(n)) => n,
            (None, None) => DEFAULT_MAX_TOKENS,
        }
        .max(1)
    }
}
