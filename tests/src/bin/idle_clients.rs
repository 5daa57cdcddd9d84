//! A peer process for the idle-connection tests: opens `count` connections to the Unix
//! socket at `path`, prints `connected` once all are open, then holds them idle until its
//! stdin closes (or says `exit`), and exits. The connections' peers live in this process so
//! the test process spends one descriptor per connection, not two. (Unix sockets, because ten
//! thousand loopback TCP connects to one port spend most of their time choosing ports.)
//!
//! Usage: `idle_clients <path> <count>`.

use std::io::{BufRead, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(count)) = (args.first(), args.get(1)) else {
        eprintln!("usage: idle_clients <path> <count>");
        return ExitCode::FAILURE;
    };
    let Ok(count) = count.parse::<usize>() else {
        eprintln!("idle_clients: <count> must be a number, not {count:?}");
        return ExitCode::FAILURE;
    };
    let start = Instant::now();
    let mut held = Vec::with_capacity(count);
    while held.len() < count {
        match UnixStream::connect(path) {
            Ok(stream) => held.push(stream),
            Err(err) if start.elapsed() < Duration::from_secs(60) => {
                // A full accept queue refuses the connect; try again shortly.
                eprintln!("idle_clients: connect {}: {err}; retrying", held.len());
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(err) => {
                eprintln!(
                    "idle_clients: gave up after {} connections: {err}",
                    held.len()
                );
                return ExitCode::FAILURE;
            }
        }
    }
    println!("connected");
    if std::io::stdout().flush().is_err() {
        return ExitCode::FAILURE;
    }
    for line in std::io::stdin().lock().lines() {
        if line.map_or(true, |l| l.trim() == "exit") {
            break;
        }
    }
    drop(held);
    ExitCode::SUCCESS
}
