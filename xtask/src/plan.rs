//! What each task runs, in order.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::run::{Planned, Step};

/// The loom models, listed explicitly: per crate, whether its library has models (under
/// `cfg(all(test, loom))`) and which of its `tests/` targets are models (`#![cfg(loom)]`).
/// A listed target that does not exist fails the plan, so a renamed model cannot drop out.
const LOOM_MODELS: &[(&str, bool, &[&str])] = &[
    ("baton-cancel", true, &[]),
    ("baton-completion", false, &["loom_dispatch", "loom_pool"]),
    ("baton-task", true, &["loom_scheduler", "loom_workers"]),
    ("baton-uring", true, &[]),
    ("baton-loan", true, &[]),
];

/// The crates AddressSanitizer runs over: the pure ones, whose hand-made task allocations,
/// waker vtables and slot tables are where a use-after-free would hide.
const SANITIZED: &[&str] = &[
    "baton-cancel",
    "baton-completion",
    "baton-task",
    "baton-loan",
];

/// The name of `ci`'s rule-citation step.
const RULES_STEP: &str = "rule citations resolve (xtask rules)";

/// Where a task runs: the workspace root and the target directory it builds into.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) root: PathBuf,
    pub(crate) target: PathBuf,
}

impl Context {
    fn cargo(&self) -> Command {
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        command.current_dir(&self.root);
        command
    }

    fn step(&self, name: &str, mut command: Command) -> Planned {
        command.current_dir(&self.root);
        Planned::Run(Step {
            name: name.to_owned(),
            command,
        })
    }

    /// A step running `cargo` with `args`.
    fn cargo_step(&self, name: &str, args: &[&str]) -> Planned {
        let mut command = self.cargo();
        command.args(args);
        self.step(name, command)
    }

    fn bench_manifest(&self) -> PathBuf {
        self.root.join("bench").join("Cargo.toml")
    }

    /// The bench crate's manifest, or why the plan cannot run without it.
    fn existing_bench_manifest(&self) -> Result<PathBuf, String> {
        let manifest = self.bench_manifest();
        if manifest.is_file() {
            Ok(manifest)
        } else {
            Err(format!("{} is missing", manifest.display()))
        }
    }
}

/// The loom steps, one per crate (release with debug assertions, `LOOM_MAX_PREEMPTIONS=2`, in
/// `<target>/loom` so the normal build cache survives).
fn loom_steps(cx: &Context) -> Result<Vec<Planned>, String> {
    let mut steps = Vec::new();
    for (package, lib, targets) in LOOM_MODELS {
        let dir = cx.root.join("crates").join(package);
        for target in *targets {
            let file = dir.join("tests").join(format!("{target}.rs"));
            if !file.is_file() {
                return Err(format!(
                    "the loom model target {} is listed in xtask but does not exist",
                    file.display()
                ));
            }
        }
        let mut command = cx.cargo();
        command.args(["test", "--release", "-p", package]);
        if *lib {
            command.arg("--lib");
        }
        for target in *targets {
            command.args(["--test", target]);
        }
        command
            .args(["--", "--test-threads=2"])
            .env("RUSTFLAGS", "--cfg loom -D warnings")
            .env("CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS", "true")
            .env("CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS", "true")
            .env("CARGO_TARGET_DIR", cx.target.join("loom"))
            .env("LOOM_MAX_PREEMPTIONS", "2");
        steps.push(cx.step(&format!("loom models of {package}"), command));
    }
    Ok(steps)
}

pub(crate) fn loom_plan(cx: &Context) -> Result<Vec<Planned>, String> {
    loom_steps(cx)
}

pub(crate) fn nightly_available() -> bool {
    Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

pub(crate) fn ci_plan(cx: &Context) -> Result<Vec<Planned>, String> {
    let mut plan = Vec::new();

    plan.push(cx.cargo_step("rustfmt check", &["fmt", "--all", "--", "--check"]));

    // The rule-citation check (`cargo xtask rules`), run by this very binary: it is fast, so it
    // runs before anything builds.
    plan.push(match std::env::current_exe() {
        Ok(exe) => {
            let mut command = Command::new(exe);
            command.arg("rules");
            cx.step(RULES_STEP, command)
        }
        Err(_) => cx.cargo_step(RULES_STEP, &["xtask", "rules"]),
    });

    // Once with the default features, then with every feature on, so the optional integrations
    // are linted too (baton's `tracing`, `macros`, `bytes`; baton-compat's `tokio-io`,
    // `futures-io`, `hyper`).
    for (name, features) in [
        ("clippy (all targets, -D warnings)", None),
        ("clippy with every feature", Some("--all-features")),
    ] {
        let mut clippy = vec!["clippy", "--workspace", "--all-targets"];
        clippy.extend(features);
        clippy.extend(["--", "-D", "warnings"]);
        plan.push(cx.cargo_step(name, &clippy));
    }

    // Every test target, property tests included (their case count is set here, so a run is
    // the same everywhere unless PROPTEST_CASES says otherwise).
    let mut tests = cx.cargo();
    tests.args(["test", "--workspace"]).env(
        "PROPTEST_CASES",
        std::env::var("PROPTEST_CASES").unwrap_or_else(|_| "256".into()),
    );
    plan.push(cx.step("unit, integration, property and doc tests", tests));

    // The `tracing` feature's own test (off in the run above, so the no-op path is the one
    // every other test exercises).
    plan.push(cx.cargo_step(
        "tests of the tracing feature",
        &[
            "test",
            "-p",
            "baton",
            "--features",
            "tracing",
            "--test",
            "tracing",
        ],
    ));

    plan.extend(loom_steps(cx)?);

    let mut bench = cx.cargo();
    bench
        .args(["check", "--all-targets", "--manifest-path"])
        .arg(cx.existing_bench_manifest()?);
    plan.push(cx.step("benchmark crate compiles", bench));

    plan.push(sanitizer_step(cx));
    Ok(plan)
}

/// AddressSanitizer over the pure crates' unit, integration and property tests, on the
/// nightly toolchain when present.
///
/// LeakSanitizer stays off: SPEC §3 makes the runtime *leak on purpose* a value whose destructor
/// would run while the thread is already unwinding (a second panic would abort), and the tests
/// that prove that containment would be reported as leaks. ASan still catches use-after-free,
/// double free and out-of-bounds access; fd and `Arc` leaks are checked by the tests themselves.
fn sanitizer_step(cx: &Context) -> Planned {
    let name = "address sanitizer (nightly)";
    if std::env::var_os("BATON_SKIP_SANITIZERS").is_some() {
        return Planned::Skip {
            name: name.into(),
            why: "BATON_SKIP_SANITIZERS is set".into(),
        };
    }
    if !nightly_available() {
        return Planned::Skip {
            name: name.into(),
            why: "no nightly toolchain on this machine (`rustup run nightly rustc` failed); \
                  install one with `rustup toolchain install nightly` to run it"
                .into(),
        };
    }
    let mut asan = Command::new("rustup");
    asan.args([
        "run",
        "nightly",
        "cargo",
        "test",
        "--target",
        "x86_64-unknown-linux-gnu",
    ]);
    for package in SANITIZED {
        asan.args(["-p", package]);
    }
    asan.args(["--lib", "--tests"])
        .env("RUSTFLAGS", "-Zsanitizer=address")
        .env("RUSTDOCFLAGS", "-Zsanitizer=address")
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .env("CARGO_TARGET_DIR", cx.target.join("asan"))
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO");
    cx.step(name, asan)
}

pub(crate) fn bench_plan(cx: &Context, quick: bool) -> Result<Vec<Planned>, String> {
    let mut bench = cx.cargo();
    bench
        .args(["run", "--release", "--manifest-path"])
        .arg(cx.existing_bench_manifest()?)
        .arg("--");
    if quick {
        bench.arg("--quick");
    }
    Ok(vec![cx.step("benchmarks", bench)])
}

/// What the toolchain needs, printed before `ci` starts.
pub(crate) fn toolchain_note(root: &Path) -> String {
    let pinned = std::fs::read_to_string(root.join("rust-toolchain.toml"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.trim().strip_prefix("channel"))
                .map(|rest| {
                    rest.trim_start_matches([' ', '='])
                        .trim()
                        .trim_matches('"')
                        .to_owned()
                })
        })
        .unwrap_or_else(|| "the pinned toolchain".into());
    let nightly = if nightly_available() {
        "present: the AddressSanitizer step runs"
    } else {
        "absent: the AddressSanitizer step is skipped (optional)"
    };
    format!(
        "toolchain: Rust {pinned} with rustfmt and clippy (rust-toolchain.toml); nightly {nightly}"
    )
}
