//! End to end: the socket calls' edge cases — what they do after the runtime shut down, and
//! after the peer went away — match what every other call and tokio do.

use std::io;
use std::net::Shutdown;
use std::time::Duration;

use baton::net::{TcpListener, TcpStream, UnixListener};
use baton_tests::on_runtime;

#[test]
fn binding_a_listener_after_shutdown_is_closed_like_every_other_call() {
    let rt = baton::Runtime::new().expect("runtime");
    let handle = rt.handle();
    let report = rt.shutdown_timeout(Duration::from_secs(5));
    assert!(report.is_clean(), "{report:?}");
    let path = std::env::temp_dir().join(format!("baton-bind-closed-{}", std::process::id()));
    let (tcp, unix) = handle.block_on(async {
        (
            TcpListener::bind("127.0.0.1:0").map(drop),
            UnixListener::bind(&path).map(drop),
        )
    });
    let _ = std::fs::remove_file(&path);
    for (call, result) in [("TcpListener::bind", tcp), ("UnixListener::bind", unix)] {
        let err = result.expect_err(call);
        assert!(baton::Error::is_closed(&err), "{call}: {err:?}");
    }
}

#[test]
fn shutting_down_a_stream_whose_peer_already_closed_is_ok() -> io::Result<()> {
    on_runtime(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let client = TcpStream::connect(addr).await?;
        let (server, _) = listener.accept().await?;
        // The server closes with the client's bytes unread, so the kernel resets the
        // connection: the client's socket is no longer connected.
        client.write_all(b"unread".to_vec()).await.0?;
        baton::time::sleep(Duration::from_millis(20)).await;
        drop(server);
        baton::time::sleep(Duration::from_millis(20)).await;
        for how in [Shutdown::Write, Shutdown::Read, Shutdown::Both] {
            client.shutdown_with(how).await?;
        }
        Ok(())
    })
}
