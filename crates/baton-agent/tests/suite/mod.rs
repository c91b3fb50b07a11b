pub mod runner;
pub mod protected;
pub mod sandbox;
pub mod tools;
pub mod wire;
