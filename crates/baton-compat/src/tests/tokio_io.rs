//! `Compat` through tokio's traits and `io-util` helpers.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use super::{pattern, read_all, run, tcp_pair};
use crate::CompatExt;
use baton_tests::paced;

/// Reads `reader` through a `CHUNK`-byte buffer until it ends or `limit` bytes came.
pub(super) async fn read_in_chunks<const CHUNK: usize>(
    reader: &mut (impl tokio::io::AsyncRead + Unpin),
    limit: usize,
) -> io::Result<Vec<u8>> {
    let mut received = Vec::new();
    let mut chunk = [0u8; CHUNK];
    while received.len() < limit {
        let count = reader.read(&mut chunk).await?;
        if count == 0 {
            break;
        }
        received.extend_from_slice(&chunk[..count]);
    }
    Ok(received)
}

#[test]
fn small_caller_buffers_reassemble_a_large_body_in_order() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let sent = pattern(100_000);
        let expected = sent.clone();
        let writer = baton::spawn(async move {
            let (result, _) = peer.write_all(sent).await;
            result
        });
        let mut compat = stream.compat();
        let received = read_in_chunks::<7>(&mut compat, expected.len()).await?;
        writer.await.map_err(io::Error::other)??;
        assert!(
            received == expected,
            "the bytes came out of order or were lost"
        );
        Ok(())
    });
}

/// A `poll_read` abandoned mid-wait (here by a timeout) leaves its readiness wait in the
/// `Compat`; the next read delivers what arrived, and a write can go out while that read
/// waits.
#[test]
fn an_abandoned_read_stays_in_flight_and_a_write_passes_it() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let mut compat = stream.compat();
        let mut buf = [0u8; 16];
        let abandoned =
            baton::time::timeout(Duration::from_millis(20), compat.read(&mut buf)).await;
        assert!(
            abandoned.is_err(),
            "nothing was sent, so the read had to time out"
        );
        assert!(format!("{compat:?}").contains("reading: true"));

        compat.write_all(b"ping").await?;
        compat.flush().await?;
        let (result, got) = peer.read(Vec::with_capacity(16)).await;
        assert_eq!(result?, 4);
        assert_eq!(got, b"ping");

        peer.write_all(b"pong".to_vec()).await.0?;
        let count = compat.read(&mut buf).await?;
        assert_eq!(&buf[..count], b"pong");
        Ok(())
    });
}

#[test]
fn a_large_write_is_all_delivered_by_flush_and_shutdown() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let reader = baton::spawn(async move { read_all(&peer).await });
        let mut compat = stream.compat();
        let sent = pattern(1 << 20);
        compat.write_all(&sent).await?;
        compat.flush().await?;
        compat.shutdown().await?;
        let received = reader.await.map_err(io::Error::other)??;
        assert!(
            received == sent,
            "the peer got other bytes than were written"
        );
        Ok(())
    });
}

/// A vectored write takes its slices in order, as much as the socket has room for.
#[test]
fn vectored_writes_are_gathered_in_order_up_to_the_limit() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let reader = baton::spawn(async move { read_all(&peer).await });
        let mut compat = stream.compat();
        let sent = pattern(300 * 1024);
        let (head, body) = sent.split_at(100);
        let slices = [io::IoSlice::new(head), io::IoSlice::new(body)];
        let taken = compat.write_vectored(&slices).await?;
        assert!(taken > 0 && taken <= sent.len(), "{taken}");
        compat.write_all(&sent[taken..]).await?;
        compat.flush().await?;
        compat.shutdown().await?;
        let received = reader.await.map_err(io::Error::other)??;
        assert!(received == sent, "the slices went out out of order");
        Ok(())
    });
}

/// The peer closes with unread data, so the kernel resets the connection: the writes that
/// follow fail (their error surfacing on a later `write`/`flush`), and `shutdown` is still `Ok`.
#[test]
fn after_the_peer_reset_writes_fail_and_shutdown_is_ok() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let mut compat = stream.compat();
        compat.write_all(b"never read").await?;
        compat.flush().await?;
        baton::time::sleep(Duration::from_millis(20)).await;
        drop(peer);
        baton::time::sleep(Duration::from_millis(20)).await;
        let mut failure = None;
        for _ in 0..1000 {
            let attempt = async {
                compat.write_all(&[0u8; 4096]).await?;
                compat.flush().await
            };
            if let Err(error) = attempt.await {
                failure = Some(error);
                break;
            }
        }
        let failure = failure.expect("writing to a reset connection fails");
        assert!(
            matches!(
                failure.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            ),
            "unexpected error {failure:?}"
        );
        compat.shutdown().await?;
        Ok(())
    });
}

#[test]
fn buffered_lines_read_through_async_buf_read() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        peer.write_all(b"first\nsecond\n".to_vec()).await.0?;
        drop(peer);
        let mut lines = stream.compat().lines();
        assert_eq!(lines.next_line().await?.as_deref(), Some("first"));
        assert_eq!(lines.next_line().await?.as_deref(), Some("second"));
        assert_eq!(lines.next_line().await?, None);
        Ok(())
    });
}

/// Baton's owned halves are not `Compat`'s (see the crate docs); `tokio::io::split` over one
/// `Compat` gives halves that two tasks drive at once.
#[test]
fn tokio_split_halves_read_and_write_from_two_tasks() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let echo = baton::spawn(async move {
            let (reader, mut writer) = tokio::io::split(peer.compat());
            let mut reader = tokio::io::BufReader::new(reader);
            tokio::io::copy_buf(&mut reader, &mut writer).await?;
            writer.shutdown().await
        });
        let (mut reader, mut writer) = tokio::io::split(stream.compat());
        let sent = pattern(500_000);
        let expected = sent.clone();
        let sender = baton::spawn(async move {
            writer.write_all(&sent).await?;
            writer.shutdown().await
        });
        let mut received = Vec::new();
        reader.read_to_end(&mut received).await?;
        sender.await.map_err(io::Error::other)??;
        echo.await.map_err(io::Error::other)??;
        assert!(received == expected, "the echo differs");
        Ok(())
    });
}

/// Owned-buffer reads cut short by tight timeouts (whose bytes the stash keeps when the kernel
/// delivered them late), then `Compat` reads of the rest: every byte arrives once, in order —
/// the `Compat`'s receives take stashed bytes before the socket's own (M1).
#[test]
fn owned_reads_cut_short_and_compat_reads_interleave_in_order() {
    const TOTAL: usize = 6000;
    run(async {
        let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let writer = paced::spawn_writer(addr, TOTAL);
        let (stream, _) = listener.accept().await?;
        let mut compat = stream.compat();
        paced::collect_in_order(TOTAL, writer, async |round, got| {
            // A `Compat` buffers what it received, so owned reads come only before it reads.
            if got.len() < TOTAL / 2 {
                let owned = compat.get_ref().read(Vec::with_capacity(7));
                let cut = Duration::from_micros(1 + round % 40);
                if let Ok((Ok(_), buf)) = baton::time::timeout(cut, owned).await {
                    got.extend_from_slice(&buf);
                }
            } else {
                let mut small = [0_u8; 5];
                let read = compat.read(&mut small);
                if let Ok(count) = baton::time::timeout(Duration::from_millis(50), read).await {
                    got.extend_from_slice(&small[..count?]);
                }
            }
            Ok(())
        })
        .await
    });
}

/// tokio code ends a reply with `write_all(..).await?` and returns, with no flush (tokio's
/// `TcpStream` has no write buffer). The background write is retained, so dropping the
/// `Compat` right after loses nothing, whether the write reached the ring or not.
#[test]
fn a_write_all_then_drop_without_flush_delivers_every_byte() {
    run(async {
        for len in [17, 4096, 16 * 1024] {
            let (stream, peer) = tcp_pair().await?;
            let sent = pattern(len);
            let mut compat = stream.compat();
            compat.write_all(&sent).await?;
            drop(compat);
            let received = baton::time::timeout(Duration::from_secs(30), read_all(&peer)).await??;
            assert!(
                received == sent,
                "{len} bytes written, {} read",
                received.len()
            );
        }
        Ok(())
    });
}
