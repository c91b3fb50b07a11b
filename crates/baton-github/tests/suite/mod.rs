mod common;
mod contract;
mod octokit_fixtures;
mod regression;
mod rules;
