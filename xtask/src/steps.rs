//! The steps of each task, and the runner that announces, times and summarizes them.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// One command of a task, announced before it starts and timed.
#[derive(Debug)]
pub(crate) struct Step {
    name: String,
    command: Command,
}

/// What a step may turn out as in the summary.
#[derive(Debug)]
enum Outcome {
    Passed(Duration),
    Failed(Duration, String),
    Skipped(String),
}

/// A step that may be skipped with a reason (for example: no nightly toolchain here).
#[derive(Debug)]
pub(crate) enum Planned {
    Run(Step),
    Skip { name: String, why: String },
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

fn step(name: &str, mut command: Command) -> Planned {
    command.current_dir(workspace_root());
    Planned::Run(Step {
        name: name.to_string(),
        command,
    })
}

/// Crates under `crates/`, sorted, as (package name, directory).
fn crate_dirs() -> Result<Vec<(String, PathBuf)>, String> {
    let dir = workspace_root().join("crates");
    let mut found = Vec::new();
    let entries =
        std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        if entry.path().join("Cargo.toml").is_file() {
            found.push((
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            ));
        }
    }
    found.sort();
    Ok(found)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn mentions(files: &[PathBuf], needle: &str) -> bool {
    files
        .iter()
        .any(|f| std::fs::read_to_string(f).is_ok_and(|text| text.contains(needle)))
}

/// The loom steps: per crate, the lib's `loom_*` models and each `tests/loom_*.rs` target.
fn loom_steps() -> Result<Vec<Planned>, String> {
    let mut steps = Vec::new();
    for (name, dir) in crate_dirs()? {
        let mut src = Vec::new();
        rust_files(&dir.join("src"), &mut src);
        let mut targets: Vec<String> = std::fs::read_dir(dir.join("tests"))
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| {
                        let stem = e.path().file_stem()?.to_string_lossy().into_owned();
                        let is_rs = e.path().extension().is_some_and(|x| x == "rs");
                        (is_rs && stem.starts_with("loom_")).then_some(stem)
                    })
                    .collect()
            })
            .unwrap_or_default();
        targets.sort();
        let lib_models = mentions(&src, "cfg(all(test, loom))");
        if !lib_models && targets.is_empty() {
            continue;
        }
        let mut command = cargo();
        command.args(["test", "--release", "-p", &name]);
        if lib_models {
            command.arg("--lib");
        }
        for target in &targets {
            command.args(["--test", target]);
        }
        command.args(["--", "loom_", "--test-threads=2"]);
        command
            .env("RUSTFLAGS", "--cfg loom -D warnings")
            .env("CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS", "true")
            .env("CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS", "true")
            .env(
                "CARGO_TARGET_DIR",
                workspace_root().join("target").join("loom"),
            )
            .env("LOOM_MAX_PREEMPTIONS", "2");
        steps.push(step(&format!("loom models of {name}"), command));
    }
    if steps.is_empty() {
        return Err("no loom models found (expected `loom_*` tests under cfg(loom))".into());
    }
    Ok(steps)
}

pub(crate) fn loom_plan() -> Result<Vec<Planned>, String> {
    loom_steps()
}

fn nightly_available() -> bool {
    Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn bench_manifest() -> PathBuf {
    workspace_root().join("bench").join("Cargo.toml")
}

pub(crate) fn ci_plan() -> Result<Vec<Planned>, String> {
    let mut plan = Vec::new();

    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    plan.push(step("rustfmt check", fmt));

    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    plan.push(step("clippy (all targets, -D warnings)", clippy));

    let mut tests = cargo();
    tests.args(["test", "--workspace", "--", "--skip", "prop_"]);
    plan.push(step("unit, integration and doc tests", tests));

    match loom_steps() {
        Ok(steps) => plan.extend(steps),
        Err(why) => plan.push(Planned::Skip {
            name: "loom models".into(),
            why,
        }),
    }

    let mut props = cargo();
    props.args(["test", "--workspace", "--lib", "--tests", "--", "prop_"]);
    props.env(
        "PROPTEST_CASES",
        std::env::var("PROPTEST_CASES").unwrap_or_else(|_| "256".into()),
    );
    plan.push(step("property tests", props));

    if bench_manifest().is_file() {
        let mut bench = cargo();
        bench
            .arg("build")
            .arg("--release")
            .arg("--manifest-path")
            .arg(bench_manifest());
        plan.push(step("benchmark crate builds", bench));
    } else {
        plan.push(Planned::Skip {
            name: "benchmark crate builds".into(),
            why: "bench/Cargo.toml does not exist yet".into(),
        });
    }

    plan.push(sanitizer_step());
    Ok(plan)
}

/// AddressSanitizer over the pure crates' unit, integration and property tests (their hand-made
/// task allocations, waker vtables and slot tables are where a use-after-free would hide), on
/// the nightly toolchain when present.
///
/// LeakSanitizer stays off: SPEC §3 makes the runtime *leak on purpose* a value whose destructor
/// would run while the thread is already unwinding (a second panic would abort), and the tests
/// that prove that containment would be reported as leaks. ASan still catches use-after-free,
/// double free and out-of-bounds access; fd and `Arc` leaks are checked by the tests themselves.
fn sanitizer_step() -> Planned {
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
            why: "no nightly toolchain on this machine (`rustup run nightly rustc` failed)".into(),
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
    for package in [
        "baton-cancel",
        "baton-completion",
        "baton-task",
        "baton-loan",
    ] {
        asan.args(["-p", package]);
    }
    asan.args(["--lib", "--tests"])
        .env("RUSTFLAGS", "-Zsanitizer=address")
        .env("RUSTDOCFLAGS", "-Zsanitizer=address")
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .env(
            "CARGO_TARGET_DIR",
            workspace_root().join("target").join("asan"),
        )
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO");
    step(name, asan)
}

pub(crate) fn bench_plan(quick: bool) -> Result<Vec<Planned>, String> {
    if !bench_manifest().is_file() {
        return Err("the benchmark crate (bench/Cargo.toml) does not exist yet".into());
    }
    let mut bench = cargo();
    bench
        .arg("run")
        .arg("--release")
        .arg("--manifest-path")
        .arg(bench_manifest())
        .arg("--");
    if quick {
        bench.arg("--quick");
    }
    Ok(vec![step("benchmarks", bench)])
}

/// Runs the plan in order, stopping at the first failure, then prints a timed summary.
pub(crate) fn run(task: &str, plan: Vec<Planned>) -> ExitCode {
    let total = plan.len();
    let mut results: Vec<(String, Outcome)> = Vec::new();
    let mut failed = false;
    for (index, planned) in plan.into_iter().enumerate() {
        if failed {
            break;
        }
        match planned {
            Planned::Skip { name, why } => {
                println!("==> [{}/{total}] {name}: SKIPPED ({why})", index + 1);
                results.push((name, Outcome::Skipped(why)));
            }
            Planned::Run(Step { name, mut command }) => {
                println!("==> [{}/{total}] {name}", index + 1);
                println!("    $ {}", describe(&command));
                let started = Instant::now();
                let status = command.status();
                let took = started.elapsed();
                let outcome = match status {
                    Ok(s) if s.success() => Outcome::Passed(took),
                    Ok(s) => Outcome::Failed(took, format!("exited with {s}")),
                    Err(e) => Outcome::Failed(took, format!("could not start: {e}")),
                };
                failed = matches!(outcome, Outcome::Failed(..));
                results.push((name, outcome));
            }
        }
    }
    println!("\n==> xtask {task} summary");
    for (name, outcome) in &results {
        match outcome {
            Outcome::Passed(t) => println!("    ok       {:>8.1}s  {name}", t.as_secs_f64()),
            Outcome::Failed(t, why) => {
                println!("    FAILED   {:>8.1}s  {name} ({why})", t.as_secs_f64())
            }
            Outcome::Skipped(why) => println!("    skipped            {name} ({why})"),
        }
    }
    let not_run = total - results.len();
    if not_run > 0 {
        println!("    ({not_run} later step(s) not run after the failure)");
    }
    if failed {
        println!("xtask {task}: FAILED");
        ExitCode::FAILURE
    } else {
        println!("xtask {task}: all steps passed");
        ExitCode::SUCCESS
    }
}

fn describe(command: &Command) -> String {
    let mut text = String::new();
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            text.push_str(&format!(
                "{}={} ",
                key.to_string_lossy(),
                value.to_string_lossy()
            ));
        }
    }
    text.push_str(&command.get_program().to_string_lossy());
    for arg in command.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}
