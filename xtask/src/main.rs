//! Baton's developer tasks, run as `cargo xtask <task>` (plain Rust, no shell scripts).
//!
//! * `ci` — everything a submission must pass, in order, stopping at the first failure:
//!   formatting, the rule-citation check (`rules`), clippy with `-D warnings`, every test
//!   target (unit, integration, property and doc tests), the loom models, a check that the
//!   benchmark crate compiles, and AddressSanitizer when a nightly toolchain is present
//!   (skipped, and said so, when it is not). Each step's output goes to a log under
//!   `<target>/xtask/ci/`; the console shows one line per step, a progress line while a long
//!   one runs, and a failed step's log tail.
//!   `XTASK_VERBOSE=1` streams the raw output instead.
//! * `loom` — only the loom models (`--cfg loom`, release with debug assertions,
//!   `LOOM_MAX_PREEMPTIONS=2`, in `<target>/loom` so the normal build cache survives).
//! * `bench [--quick]` — the side-by-side benchmark table (SPEC §8), never part of `ci`.
//!
//! The workspace root is found from the current directory at run time, and `<target>` is
//! `CARGO_TARGET_DIR` when set, so a shared target directory works. The loom models and the
//! sanitized crates are listed explicitly in `plan.rs`; see `docs/testing.md`.

mod plan;
mod rules;
mod run;
mod workspace;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprintln!("{}", usage());
        return ExitCode::FAILURE;
    };
    let rest = &args[1..];
    if matches!(task.as_str(), "help" | "--help" | "-h") {
        println!("{}", usage());
        return ExitCode::SUCCESS;
    }
    let cx = match workspace::root() {
        Ok(root) => plan::Context {
            target: workspace::target_dir(&root),
            root,
        },
        Err(message) => {
            eprintln!("xtask {task}: {message}");
            return ExitCode::FAILURE;
        }
    };
    if task == "rules" {
        return rules_task(&cx.root);
    }
    let planned = match task.as_str() {
        "ci" => {
            println!("{}", plan::toolchain_note(&cx.root));
            plan::ci_plan(&cx)
        }
        "loom" => plan::loom_plan(&cx),
        "bench" => plan::bench_plan(&cx, rest.iter().any(|a| a == "--quick")),
        other => {
            eprintln!("unknown task `{other}`\n{}", usage());
            return ExitCode::FAILURE;
        }
    };
    match planned {
        Ok(steps) => run::run(task, steps, &run::log_dir(&cx.target, task)),
        Err(message) => {
            eprintln!("xtask {task}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask rules`: the rule-citation check, on its own.
fn rules_task(root: &std::path::Path) -> ExitCode {
    let (findings, rules, citations) = rules::check(root);
    for finding in &findings {
        println!(
            "{}:{}: {}",
            finding
                .file
                .strip_prefix(root)
                .unwrap_or(&finding.file)
                .display(),
            finding.line,
            finding.what
        );
    }
    println!(
        "xtask rules: {rules} rules defined ({}), {citations} citations, {} problem(s)",
        rules::sets(),
        findings.len()
    );
    if findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn usage() -> &'static str {
    "usage: cargo xtask <task>\n\
     tasks:\n  \
     ci            fmt, rules, clippy, tests, loom, bench compile check, sanitizers (if nightly)\n  \
     loom          the loom models only\n  \
     rules         every rule citation resolves to a rule that exists\n  \
     bench [--quick]  the benchmark table (SPEC §8)"
}
