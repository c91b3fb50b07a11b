pub mod runner;
pub mod sandbox;
pub mod tools;
