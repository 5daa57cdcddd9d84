//! `Compat` through `futures_io`'s traits and the `futures` crate's helpers.

use std::io;

use futures::{AsyncReadExt, AsyncWriteExt};

use super::{pattern, run, tcp_pair};
use crate::CompatExt;

/// Echo through `futures::io::copy` on one side's two halves (`AsyncReadExt::split`): a read
/// and a write in flight on one `Compat` at once.
#[test]
fn futures_copy_echoes_a_large_body() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let echo = baton::spawn(async move {
            let (reader, mut writer) = peer.compat().split();
            futures::io::copy(reader, &mut writer).await?;
            writer.close().await
        });
        let mut compat = stream.compat();
        let sent = pattern(300_000);
        let (mut reader, mut writer) = (&mut compat).split();
        let send = async {
            writer.write_all(&sent).await?;
            writer.close().await
        };
        let mut received = Vec::new();
        let receive = reader.read_to_end(&mut received);
        let (sent_result, received_result) = futures::join!(send, receive);
        sent_result?;
        received_result?;
        echo.await.map_err(io::Error::other)??;
        assert!(received == sent, "the echo differs");
        Ok(())
    });
}
