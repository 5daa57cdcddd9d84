//! End to end: after a runtime that did file and socket work is dropped, the process has
//! exactly the file descriptors it had before (ring, eventfd, files, sockets all closed).
//!
//! One test in its own binary, so no other test opens descriptors concurrently.

use std::io;
use std::time::Duration;

use baton::net::{TcpListener, TcpStream};

#[test]
fn no_fd_leak_after_the_runtime_is_dropped() -> io::Result<()> {
    let before = baton_tests::open_fd_count()?;
    for round in 0..3 {
        let rt = baton::Runtime::new()?;
        let path =
            std::env::temp_dir().join(format!("baton-e2e-fd-{}-{round}", std::process::id()));
        rt.block_on(async {
            baton::fs::write(&path, vec![7u8; 100_000]).await?;
            let _file = baton::fs::File::open(&path).await?;
            let listener = TcpListener::bind("127.0.0.1:0")?;
            let addr = listener.local_addr()?;
            let server = baton::spawn(async move {
                let (stream, _) = listener.accept().await?;
                let (res, _) = stream.write_all(b"bye".to_vec()).await;
                res
            });
            let client = TcpStream::connect(addr).await?;
            client.read(vec![0; 3]).await.0?;
            server.await.map_err(io::Error::other)??;
            // A read left pending when the runtime goes away: its socket must close too.
            let (a, _b) = baton::net::UnixStream::pair()?;
            let _pending = baton::spawn(async move { a.read(vec![0; 1]).await.0 });
            baton::time::sleep(Duration::from_millis(1)).await;
            baton::fs::remove_file(&path).await
        })?;
        let blocking = rt.block_on(rt.spawn_blocking(|| 5));
        assert_eq!(blocking, Ok(5));
        drop(rt);
    }
    let after = baton_tests::open_fd_count()?;
    assert_eq!(before, after, "descriptors leaked");
    Ok(())
}
