//! `baton`: the command-line front end.
//!
//! Parses arguments, locates the project, runs one command and maps its result to the exit codes
//! of DESIGN.md (0 done, 1 error, 2 usage, 3 paused on an escalation, 4 stopped by budget). All
//! workflow logic lives in the library crates; this crate renders their results as text or JSON.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cli;
mod commands;
mod config;
mod env;
mod limits;
mod narrow;
mod project;
mod trust;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match commands::run(args) {
        Ok(code) => code.into(),
        Err(err) => {
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            commands::Code::Error.into()
        }
    }
}
