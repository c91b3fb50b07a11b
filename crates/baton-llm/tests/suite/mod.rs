//! Test modules; `common` holds the shared helpers.

mod anthropic;
mod cache;
mod common;
mod openai;
mod registry;
mod regression;
mod retry;
mod script;
