pub mod cli_workers;
pub mod compaction;
pub mod protected;
pub mod rules;
pub mod runner;
pub mod sandbox;
pub mod tools;
pub mod wire;
