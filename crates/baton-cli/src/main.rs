//! `baton`: the command-line front end.
//!
//! Parses arguments, locates the project, runs one command and maps its result to the exit codes
//! of DESIGN.md (0 done, 1 error, 2 usage, 3 paused on an escalation, 4 stopped by budget). All
//! workflow logic lives in the library crates; this crate renders their results as text or JSON.

#![allow(clippy::print_stdout, clippy::print_stderr)]

// One mask for every line the binary prints: these shadow the standard printing macros in every
// module below, so each terminal line and each `--json` document passes through
// [`baton_core::secrets::redact`] (the configured keys, tokens in URLs, header values).
macro_rules! println {
    () => { ::std::println!() };
    ($($arg:tt)*) => {
        ::std::println!("{}", ::baton_core::secrets::redact(&::std::format!($($arg)*)))
    };
}
macro_rules! print {
    ($($arg:tt)*) => {
        ::std::print!("{}", ::baton_core::secrets::redact(&::std::format!($($arg)*)))
    };
}
macro_rules! eprintln {
    () => { ::std::eprintln!() };
    ($($arg:tt)*) => {
        ::std::eprintln!("{}", ::baton_core::secrets::redact(&::std::format!($($arg)*)))
    };
}
macro_rules! eprint {
    ($($arg:tt)*) => {
        ::std::eprint!("{}", ::baton_core::secrets::redact(&::std::format!($($arg)*)))
    };
}

mod cli;
mod cli_workers;
mod commands;
mod config;
mod env;
mod interrupt;
mod plan_args;
mod project;
mod render;
mod trust;

use clap::Parser;
use std::process::ExitCode;

/// Makes a closed standard output (`baton status --json | head`) end the process quietly.
///
/// Rust ignores SIGPIPE, so `println!` to a pipe whose reader has gone panics with "failed
/// printing to stdout: Broken pipe". Nothing is left to say to anyone: the hook exits with 0
/// instead of printing a panic message (state on disk is always valid between writes). Every
/// other panic keeps the default report.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if (msg.starts_with("failed printing to stdout")
            || msg.starts_with("failed printing to stderr"))
            && msg.contains("Broken pipe")
        {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let args = cli::Cli::parse();
    match commands::run(args) {
        Ok(code) => code.into(),
        Err(err) => {
            let mut said = err.to_string();
            eprintln!("error: {said}");
            // A cause whose text the message above already holds is not repeated.
            for cause in err.chain().skip(1) {
                let text = cause.to_string();
                if !said.contains(&text) {
                    eprintln!("  caused by: {text}");
                    said.push_str(&text);
                }
            }
            commands::Code::Error.into()
        }
    }
}
