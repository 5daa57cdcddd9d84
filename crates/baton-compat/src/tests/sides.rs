//! `Compat` over the sockets that have one side, or whose sides live apart: a stream's owned
//! and borrowed halves and a child's piped stdio, through tokio's traits.

use std::io;

use baton::process::{Command, Stdio};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use super::{pattern, read_all, run, tcp_pair};
use crate::CompatExt;

/// Each owned half, in a task of its own, carries 100 000 bytes one way while the other half
/// carries 100 000 the other way; the write half's shutdown ends the peer's read.
#[test]
fn owned_halves_read_and_write_from_two_tasks() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let (read_half, write_half) = stream.into_split();
        let outgoing = pattern(100_000);
        let expected_out = outgoing.clone();
        let writer = baton::spawn(async move {
            let mut write_half = write_half.compat();
            write_half.write_all(&outgoing).await?;
            write_half.shutdown().await
        });
        let reader = baton::spawn(async move {
            let mut read_half = read_half.compat();
            let mut received = Vec::new();
            read_half.read_to_end(&mut received).await?;
            Ok::<_, io::Error>(received)
        });
        let incoming = pattern(100_003);
        let (result, _) = peer.write_all(incoming.clone()).await;
        result?;
        peer.shutdown().await?;
        assert!(
            read_all(&peer).await? == expected_out,
            "the peer got other bytes"
        );
        writer.await.map_err(io::Error::other)??;
        let received = reader.await.map_err(io::Error::other)??;
        assert!(received == incoming, "the read half got other bytes");
        Ok(())
    });
}

/// Borrowed halves in one task: a read waiting on one half does not hold back a write on the
/// other.
#[test]
fn borrowed_halves_wait_at_once_in_one_task() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let (read_half, write_half) = stream.split();
        let (mut read_half, mut write_half) = (read_half.compat(), write_half.compat());
        let echo = async {
            let mut request = [0u8; 5];
            let (result, got) =
                baton::io::AsyncReadExt::read_exact(&mut &peer, Vec::with_capacity(5)).await;
            result?;
            request.copy_from_slice(&got);
            let (result, _) = peer.write_all(request.to_vec()).await;
            result
        };
        let client = async {
            let mut reply = [0u8; 5];
            let (read, write) = tokio::join!(read_half.read_exact(&mut reply), async {
                write_half.write_all(b"hello").await?;
                write_half.flush().await
            });
            write?;
            read?;
            Ok::<_, io::Error>(reply)
        };
        let (echoed, reply) = tokio::join!(echo, client);
        echoed?;
        assert_eq!(&reply?, b"hello");
        Ok(())
    });
}

/// A child's stdin and stdout through `Compat`: 200 000 bytes through `cat`, the shutdown of
/// stdin ending it; its stderr read line by line through `AsyncBufRead`.
#[test]
fn child_stdio_is_a_tokio_stream() {
    run(async {
        let (mut child, stdin, stdout) = baton_tests::cat()?;
        let sent = pattern(200_000);
        let expected = sent.clone();
        let feeder = baton::spawn(async move {
            let mut stdin = stdin.compat();
            stdin.write_all(&sent).await?;
            stdin.shutdown().await
        });
        let mut received = Vec::new();
        stdout.compat().read_to_end(&mut received).await?;
        feeder.await.map_err(io::Error::other)??;
        assert!(child.wait().await?.success());
        assert!(received == expected, "cat echoed other bytes");

        let mut child = Command::new("sh")
            .args(["-c", "echo first >&2; echo second >&2"])
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().expect("stderr was piped");
        let mut lines = tokio::io::BufReader::new(stderr.compat()).lines();
        assert_eq!(lines.next_line().await?.as_deref(), Some("first"));
        assert_eq!(lines.next_line().await?.as_deref(), Some("second"));
        assert_eq!(lines.next_line().await?, None);
        assert!(child.wait().await?.success());
        Ok(())
    });
}
