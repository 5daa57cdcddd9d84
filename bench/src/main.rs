//! `baton-bench`: Baton measured side by side with a raw io_uring loop, tokio (current-thread),
//! tokio-uring and monoio, in one process and one run; HTTP/1.1 through hyper on Baton, tokio
//! and monoio; and Baton's `Compat` adapter against its native I/O.
//!
//! What it guarantees: every (workload, contender) cell is measured as an untimed warm-up plus at
//! least five recorded runs of a fixed operation count, with the contenders interleaved within
//! each round (see [`harness`]); the report gives the median, min and max throughput, the ratio
//! of each median to the row's reference column (the raw loop for file I/O, tokio otherwise) and
//! the median allocations per operation from a counting global allocator. A contender that cannot
//! express a workload shows `n/a` with its reason; one that fails shows the error. All network
//! traffic stays on 127.0.0.1.
//!
//! How it is tested: unit tests cover the statistics, the offset generator, the job splitting,
//! the echo client and the HTTP load generator against reference servers, the parking executor and the argument parser;
//! `cargo xtask bench --quick` exercises every contender end to end (each transfer's length is
//! checked and echoed bytes are compared, so a broken contender fails loudly instead of
//! reporting a number).
//!
//! Run it with `cargo xtask bench [--quick]`, or directly with
//! `cargo run --release --manifest-path bench/Cargo.toml -- [--quick] [--runs N] [--out FILE]`.

mod alloc_count;
mod cli;
mod contenders;
mod echo_client;
mod fixture;
mod harness;
mod http_client;
mod jobs;
mod park;
mod report;
mod sample;
mod workloads;

use std::process::ExitCode;

use crate::alloc_count::CountingAllocator;
use crate::fixture::FileFixture;
use crate::harness::Settings;
use crate::workloads::Size;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn main() -> ExitCode {
    let options = match cli::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("error: {e}\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    let workloads: Vec<_> = workloads::catalog()
        .into_iter()
        .filter(|w| options.only.as_ref().is_none_or(|t| w.label().contains(t)))
        .collect();
    if workloads.is_empty() {
        eprintln!("error: no workload label contains the --only text");
        return ExitCode::from(2);
    }
    let file = match FileFixture::create() {
        Ok(file) => file,
        Err(e) => {
            eprintln!(
                "error: could not create the 64 MiB data file in {}: {e}",
                std::env::temp_dir().display()
            );
            return ExitCode::FAILURE;
        }
    };

    let mut names = Vec::new();
    let mut contenders = Vec::new();
    let mut setups = Vec::new();
    let mut unavailable = Vec::new();
    for entry in contenders::roster() {
        if !options.runs_contender(entry.name) {
            continue;
        }
        match entry.runtime {
            Ok(runtime) => {
                names.push(entry.name);
                setups.push(format!("- {}: {}\n", entry.name, runtime.setup()));
                contenders.push(runtime);
            }
            Err(why) => unavailable.push(format!("{}: could not start: {why}", entry.name)),
        }
    }
    for line in &unavailable {
        eprintln!("warning: {line}");
    }

    let settings = Settings {
        runs: options.runs,
        size: options.size,
    };
    eprintln!(
        "measuring {} workloads x {} contenders, warm-up + {} runs each ...",
        workloads.len(),
        contenders.len(),
        settings.runs
    );
    let started = std::time::Instant::now();
    let rows = harness::run_all(&workloads, &mut contenders, settings, &file);

    let mut text = header(&options, started.elapsed());
    text.push_str("\nContenders:\n\n");
    for line in &setups {
        text.push_str(line);
    }
    for line in &unavailable {
        text.push_str(&format!("- not run: {line}\n"));
    }
    for (name, why) in contenders::NOT_BUILT {
        text.push_str(&format!("- not built: {name}: {why}\n"));
    }
    text.push('\n');
    text.push_str(&report::markdown(&rows, &names, settings.runs));
    print!("{text}");
    if let Some(path) = &options.out
        && let Err(e) = std::fs::write(path, &text)
    {
        eprintln!(
            "error: could not write the report to {}: {e}",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The report's preamble: the command, the machine and how long it took.
fn header(options: &cli::Options, took: std::time::Duration) -> String {
    let size = match options.size {
        Size::Quick => " --quick",
        Size::Full => "",
    };
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "## baton-bench{size} ({} runs per cell)\n\n\
         - machine: {cpu}, {cores} cores available, Linux {kernel}\n\
         - measured in {:.0} s; contenders interleaved within each round\n",
        options.runs,
        took.as_secs_f64()
    )
}
