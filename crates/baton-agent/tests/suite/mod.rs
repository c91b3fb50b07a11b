pub mod protected;
pub mod runner;
pub mod sandbox;
pub mod tools;
pub mod wire;
