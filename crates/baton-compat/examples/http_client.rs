//! An HTTP/1.1 client with hyper 1.x on Baton: `CONNECTIONS` keep-alive connections (default 1)
//! each fetch `PATH` `COUNT` times (default 1), all on one Baton runtime; prints the first
//! status and body length, then the request count, time taken and requests per second. Every
//! response must be `200 OK` with the first one's length, else it exits with an error.
//!
//! ```text
//! cargo run --release -p baton-compat --example http_client -- ADDR [PATH] [COUNT] [CONNECTIONS]
//! ```

#[path = "shared/http_fetch.rs"]
mod http_fetch;

use std::net::SocketAddr;
use std::time::Instant;

use http_fetch::FetchError;
use hyper::StatusCode;

fn main() -> Result<(), FetchError> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args
        .next()
        .ok_or("usage: http_client ADDR [PATH] [COUNT] [CONNECTIONS]")?
        .parse()?;
    let path = args.next().unwrap_or_else(|| "/json".into());
    let count: usize = args.next().map_or(Ok(1), |count| count.parse())?;
    let connections: usize = args.next().map_or(Ok(1), |count| count.parse())?;
    baton::Runtime::new()?.block_on(async move {
        // One request first, to learn the body length every other response must have.
        let (mut sender, connection) = http_fetch::connect(addr).await?;
        let (status, body) = http_fetch::get(&mut sender, addr, &path).await?;
        println!("{status} {} bytes", body.len());
        drop(sender);
        connection.await??;
        let expected_len = body.len();

        let started = Instant::now();
        let clients: Vec<_> = (0..connections)
            .map(|_| {
                let path = path.clone();
                baton::spawn(async move {
                    let (mut sender, connection) = http_fetch::connect(addr).await?;
                    for _ in 0..count {
                        let (status, body) = http_fetch::get(&mut sender, addr, &path).await?;
                        if status != StatusCode::OK || body.len() != expected_len {
                            return Err(FetchError::from(format!(
                                "got {status} with {} bytes",
                                body.len()
                            )));
                        }
                    }
                    drop(sender);
                    connection.await??;
                    Ok(())
                })
            })
            .collect();
        for client in clients {
            client.await.map_err(|error| error.to_string())??;
        }
        let elapsed = started.elapsed();
        let requests = count * connections;
        println!(
            "{requests} requests over {connections} connections in {elapsed:.2?}: {:.0} req/s",
            requests as f64 / elapsed.as_secs_f64()
        );
        Ok(())
    })
}
