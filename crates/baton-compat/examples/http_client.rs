//! An HTTP/1.1 client with hyper 1.x on Baton: fetches `PATH` from `ADDR` `COUNT` times over
//! one keep-alive connection and prints each status and body length.
//!
//! ```text
//! cargo run -p baton-compat --example http_client -- ADDR [PATH] [COUNT]
//! ```

#[path = "shared/http_fetch.rs"]
mod http_fetch;

use std::net::SocketAddr;

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args
        .next()
        .ok_or("usage: http_client ADDR [PATH] [COUNT]")?
        .parse()?;
    let path = args.next().unwrap_or_else(|| "/json".into());
    let count: u32 = args.next().map_or(Ok(1), |count| count.parse())?;
    baton::Runtime::new()?.block_on(async move {
        let (mut sender, connection) = http_fetch::connect(addr).await?;
        for _ in 0..count {
            let (status, body) = http_fetch::get(&mut sender, addr, &path).await?;
            println!("{status} {} bytes", body.len());
        }
        drop(sender);
        connection.await??;
        Ok(())
    })
}
