pub mod cli_workers;
pub mod protected;
pub mod rules;
pub mod runner;
pub mod sandbox;
pub mod sections;
pub mod tools;
pub mod wire;
