//! The halves of one `Compat` split with `tokio::io::split` and driven by two tasks: the
//! background write is polled by both sides (the writer's flush, the reader's end of stream,
//! rule M5), and whichever side waits on it must be woken when it ends.

use std::io;
use std::time::Duration;

use baton::time::{sleep, timeout};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{run, tcp_pair};
use crate::CompatExt;

/// More than loopback's socket buffers hold, so the writer stalls until the peer reads.
const CHUNK: usize = 16 * 1024;
const CHUNKS: usize = 4096;

/// Bound of every wait here; no assertion is about speed.
const BOUND: Duration = Duration::from_secs(20);

/// The writer stalls on a full socket with its waker on the background write; the peer
/// half-closes, so the reader's end-of-stream path polls that write too. When the peer drains,
/// the write ends and the writer must be woken to send the rest.
#[test]
fn a_stalled_writer_is_woken_after_the_reader_found_the_end_of_the_stream() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let (mut reader, mut writer) = tokio::io::split(stream.compat());
        let reader_task = baton::spawn(async move {
            let mut got = Vec::new();
            reader.read_to_end(&mut got).await.map(|_| got.len())
        });
        let writer_task = baton::spawn(async move {
            let chunk = vec![7_u8; CHUNK];
            for _ in 0..CHUNKS {
                writer.write_all(&chunk).await?;
            }
            writer.shutdown().await
        });
        sleep(Duration::from_millis(300)).await;
        peer.shutdown().await?;
        sleep(Duration::from_millis(300)).await;
        let mut drained = 0;
        let drain = async {
            loop {
                let (result, _) = peer.read(Vec::with_capacity(1 << 20)).await;
                match result? {
                    0 => return Ok::<_, io::Error>(()),
                    n => drained += n,
                }
            }
        };
        let ended = timeout(BOUND, drain).await;
        assert!(
            ended.is_ok(),
            "the writer was never woken: the peer got {drained} of {} bytes",
            CHUNK * CHUNKS
        );
        assert_eq!(drained, CHUNK * CHUNKS);
        let read = timeout(BOUND, reader_task)
            .await
            .map_err(|_| io::Error::other("the reader never saw the end of the stream"))?;
        assert_eq!(read.map_err(io::Error::other)??, 0);
        timeout(BOUND, writer_task)
            .await
            .map_err(|_| io::Error::other("the writer never finished"))?
            .map_err(io::Error::other)?
    });
}

/// The mirror image: the reader waits at the end of the stream for the stalled write, then the
/// writer polls that write again (a flush retried on a heartbeat, as a `select!` would). When
/// the write ends the reader must be woken too, not only the side that polled last.
#[test]
fn a_reader_waiting_at_the_end_of_the_stream_is_woken_when_the_writer_finishes_the_write() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let (mut reader, mut writer) = tokio::io::split(stream.compat());
        let reader_task = baton::spawn(async move {
            // Starts once the peer's end of stream is queued and the writer is stalled.
            sleep(Duration::from_millis(800)).await;
            let mut got = Vec::new();
            reader.read_to_end(&mut got).await.map(|_| got.len())
        });
        let writer_task = baton::spawn(async move {
            let chunk = vec![7_u8; CHUNK];
            let mut beats = 0_u32;
            // Each write and the flush on a 50 ms heartbeat: a write that timed out accepted
            // nothing and is simply retried.
            for _ in 0..CHUNKS {
                loop {
                    match timeout(Duration::from_millis(50), writer.write_all(&chunk)).await {
                        Ok(done) => break done?,
                        Err(_) if beats < 2_000 => beats += 1,
                        Err(_) => return Err(io::Error::other("a write never finished")),
                    }
                }
            }
            loop {
                match timeout(Duration::from_millis(50), writer.flush()).await {
                    Ok(done) => return done,
                    Err(_) if beats < 2_000 => beats += 1,
                    Err(_) => return Err(io::Error::other("the flush never finished")),
                }
            }
        });
        sleep(Duration::from_millis(500)).await;
        peer.shutdown().await?;
        sleep(Duration::from_millis(600)).await;
        let drain = async {
            while !writer_task.is_finished() {
                let read = peer.read(Vec::with_capacity(1 << 20));
                let _ = timeout(Duration::from_millis(100), read).await;
            }
        };
        timeout(BOUND, drain)
            .await
            .map_err(|_| io::Error::other("the writer never finished"))?;
        writer_task.await.map_err(io::Error::other)??;
        let read = timeout(BOUND, reader_task).await.map_err(|_| {
            io::Error::other("the reader, which had the end of the stream, was never woken")
        })?;
        assert_eq!(read.map_err(io::Error::other)??, 0);
        Ok(())
    });
}
