mod common;
mod contract;
mod rules;
