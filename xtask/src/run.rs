//! The runner: announces each step, runs it with its output going to a log file, prints a
//! progress line while a long step runs, and a timed summary at the end. A failed step's log
//! tail is printed with the log's path; `XTASK_VERBOSE=1` streams the raw output instead.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// One command of a task.
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) name: String,
    pub(crate) command: Command,
}

/// A step that may be skipped with a reason (for example: no nightly toolchain here).
#[derive(Debug)]
pub(crate) enum Planned {
    Run(Step),
    Skip { name: String, why: String },
}

/// What a step turned out as, for the summary.
#[derive(Debug)]
enum Outcome {
    Passed(Duration),
    Failed(Duration, String),
    Skipped(String),
}

/// How often a running step reports that it is still running.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);
/// How much of a failed step's log is printed.
const TAIL_LINES: usize = 60;

/// Runs the plan in order, stopping at the first failure, then prints a timed summary. Logs go
/// to `logs`.
pub(crate) fn run(task: &str, plan: Vec<Planned>, logs: &Path) -> ExitCode {
    let verbose = std::env::var_os("XTASK_VERBOSE").is_some_and(|v| v != "0");
    if !verbose && let Err(err) = std::fs::create_dir_all(logs) {
        eprintln!(
            "xtask {task}: cannot create the log directory {}: {err}",
            logs.display()
        );
        return ExitCode::FAILURE;
    }
    let total = plan.len();
    let mut results: Vec<(String, Outcome)> = Vec::new();
    for (index, planned) in plan.into_iter().enumerate() {
        let number = index + 1;
        let outcome = match planned {
            Planned::Skip { name, why } => {
                println!("==> [{number}/{total}] {name}: SKIPPED ({why})");
                results.push((name, Outcome::Skipped(why)));
                continue;
            }
            Planned::Run(step) => {
                println!("==> [{number}/{total}] {}", step.name);
                let log = logs.join(format!("{number:02}-{}.log", slug(&step.name)));
                let outcome = if verbose {
                    run_streaming(step.command)
                } else {
                    run_logged(step.command, &log)
                };
                (step.name, outcome)
            }
        };
        let failed = matches!(outcome.1, Outcome::Failed(..));
        results.push(outcome);
        if failed {
            break;
        }
    }
    summarize(task, total, &results)
}

fn run_streaming(mut command: Command) -> Outcome {
    println!("    $ {}", describe(&command));
    let started = Instant::now();
    match command.status() {
        Ok(status) if status.success() => Outcome::Passed(started.elapsed()),
        Ok(status) => Outcome::Failed(started.elapsed(), format!("exited with {status}")),
        Err(err) => Outcome::Failed(started.elapsed(), format!("could not start: {err}")),
    }
}

fn run_logged(mut command: Command, log_path: &Path) -> Outcome {
    println!("    $ {}", describe(&command));
    println!("    log: {}", log_path.display());
    let started = Instant::now();
    let spawned = File::create(log_path).and_then(|log| {
        let err = log.try_clone()?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
    });
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => return Outcome::Failed(started.elapsed(), format!("could not start: {err}")),
    };
    let mut reported = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(err) => break Err(err),
        }
        if reported.elapsed() >= PROGRESS_EVERY {
            reported = Instant::now();
            println!(
                "    ... {:.0} s{}",
                started.elapsed().as_secs_f64(),
                progress(log_path)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let took = started.elapsed();
    match status {
        Ok(status) if status.success() => {
            println!(
                "    ok in {:.1} s{}",
                took.as_secs_f64(),
                progress(log_path)
            );
            Outcome::Passed(took)
        }
        Ok(status) => {
            print_tail(log_path);
            Outcome::Failed(
                took,
                format!("exited with {status}; full log: {}", log_path.display()),
            )
        }
        Err(err) => Outcome::Failed(took, format!("could not wait for it: {err}")),
    }
}

/// What the log says so far: how many test binaries finished and how many tests passed.
fn progress(log_path: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(log_path) else {
        return String::new();
    };
    let mut groups = 0;
    let mut passed = 0u64;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("test result: ") {
            groups += 1;
            passed += rest
                .split(';')
                .find_map(|part| part.trim().strip_suffix(" passed"))
                .and_then(|part| part.rsplit(' ').next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    if groups == 0 {
        String::new()
    } else {
        format!(" ({groups} test groups, {passed} tests passed)")
    }
}

fn print_tail(log_path: &Path) {
    let Ok(mut file) = File::open(log_path) else {
        return;
    };
    // The tail of a large log: the last 64 KiB is plenty for sixty lines.
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut text = String::new();
    if file.read_to_string(&mut text).is_err() {
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    println!(
        "    --- last {} lines of {} ---",
        lines.len() - start,
        log_path.display()
    );
    for line in &lines[start..] {
        println!("    | {line}");
    }
}

fn summarize(task: &str, total: usize, results: &[(String, Outcome)]) -> ExitCode {
    println!("\n==> xtask {task} summary");
    let mut failed = false;
    for (name, outcome) in results {
        match outcome {
            Outcome::Passed(t) => println!("    ok       {:>8.1}s  {name}", t.as_secs_f64()),
            Outcome::Failed(t, why) => {
                failed = true;
                println!("    FAILED   {:>8.1}s  {name} ({why})", t.as_secs_f64());
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

/// A file-name-safe form of a step's name.
fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_matches('-').to_owned()
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

/// Where a task's logs go.
pub(crate) fn log_dir(target: &Path, task: &str) -> PathBuf {
    target.join("xtask").join(task)
}
