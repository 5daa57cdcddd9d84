//! Baton's developer tasks, run as `cargo xtask <task>` (plain Rust, no shell scripts).
//!
//! * `ci` — everything a submission must pass, in order, stopping at the first failure:
//!   formatting, clippy with `-D warnings`, unit + integration + doc tests, the loom models,
//!   the property tests, a check that the benchmark crate builds, and sanitizer runs when a
//!   nightly toolchain is present (skipped, and said so, when it is not).
//! * `loom` — only the loom models (`--cfg loom`, release with debug assertions,
//!   `LOOM_MAX_PREEMPTIONS=2`, in `target/loom` so the normal build cache survives).
//! * `bench [--quick]` — the side-by-side benchmark table (SPEC §8), never part of `ci`.
//!
//! Conventions the steps rely on (see `docs/testing.md`): property tests are named `prop_*`;
//! loom models are named `loom_*` and live either in a crate's `src/` under
//! `#[cfg(all(test, loom))]` or in `crates/<crate>/tests/loom_*.rs` starting with `#![cfg(loom)]`.

mod steps;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprintln!("{}", usage());
        return ExitCode::FAILURE;
    };
    let rest = &args[1..];
    let plan = match task.as_str() {
        "ci" => steps::ci_plan(),
        "loom" => steps::loom_plan(),
        "bench" => steps::bench_plan(rest.iter().any(|a| a == "--quick")),
        "help" | "--help" | "-h" => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        other => {
            eprintln!("unknown task `{other}`\n{}", usage());
            return ExitCode::FAILURE;
        }
    };
    match plan {
        Ok(plan) => steps::run(task, plan),
        Err(message) => {
            eprintln!("xtask {task}: {message}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> &'static str {
    "usage: cargo xtask <task>\n\
     tasks:\n  \
     ci            fmt, clippy, tests, loom, property tests, bench build, sanitizers (if nightly)\n  \
     loom          the loom models only\n  \
     bench [--quick]  the benchmark table (SPEC §8)"
}
