//! An HTTP server with hyper 1.x on Baton: `/json` (a small JSON body) and `/file` (a file read
//! at start, or 1 MiB generated when none is given).
//!
//! ```text
//! cargo run --release -p baton-compat --example http_server -- [ADDR] [--http2] [--file PATH]
//! ```
//!
//! `ADDR` defaults to `$BATON_HTTP_ADDR`, else `127.0.0.1:0`; the bound address is the first
//! line on stdout. `--http2` serves HTTP/2 with prior knowledge (h2c) instead of HTTP/1.1.

#[path = "shared/http_app.rs"]
mod http_app;

use std::sync::Arc;
use std::time::Duration;

use http_app::{Config, Protocol, Stats};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = std::env::var("BATON_HTTP_ADDR").unwrap_or_else(|_| "127.0.0.1:0".into());
    let mut protocol = Protocol::Http1;
    let mut file = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http2" => protocol = Protocol::Http2,
            "--file" => file = Some(args.next().ok_or("--file needs a path")?),
            _ => addr = arg,
        }
    }
    // Read once at start with std: serving it from memory keeps the example about hyper.
    let file = match file {
        Some(path) => std::fs::read(&path)
            .map_err(|error| format!("reading {path}: {error}"))?
            .into(),
        None => http_app::generated_file(http_app::GENERATED_FILE_LEN),
    };
    let config = Arc::new(Config {
        protocol,
        header_read_timeout: Duration::from_secs(10),
        file,
    });
    let runtime = baton::Runtime::new()?;
    runtime.block_on(async move {
        let listener = baton::net::TcpListener::bind(addr.as_str())?;
        println!("{}", listener.local_addr()?);
        http_app::serve(listener, config, Arc::new(Stats::default())).await
    })?;
    Ok(())
}
