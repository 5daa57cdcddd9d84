//! A TCP echo server — tokio's classic example, with owned buffers.
//!
//! ```text
//! cargo run --release --example echo_server -- 127.0.0.1:8080
//! # in another terminal:  nc 127.0.0.1 8080
//! ```

use std::env;
use std::io;

use baton::net::TcpListener;

fn main() -> io::Result<()> {
    let addr = env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_string());

    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let listener = TcpListener::bind(&addr)?;
        println!("Listening on: {}", listener.local_addr()?);

        loop {
            let (socket, peer) = listener.accept().await?;

            baton::spawn(async move {
                // A read fills the buffer from its beginning and hands it back with its length
                // set to the count, so it can be written straight back.
                let mut buf = Vec::with_capacity(4096);

                loop {
                    let (res, b) = socket.read(buf).await;
                    match res {
                        Ok(0) => return,
                        Ok(_) => {}
                        Err(e) => {
                            eprintln!("failed to read from {peer}; err = {e:?}");
                            return;
                        }
                    }

                    let (res, b) = socket.write_all(b).await;
                    if let Err(e) = res {
                        eprintln!("failed to write to {peer}; err = {e:?}");
                        return;
                    }

                    buf = b;
                }
            });
        }
    })
}
