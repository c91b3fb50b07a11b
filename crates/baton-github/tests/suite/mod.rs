mod common;
mod contract;
mod regression;
mod rules;
