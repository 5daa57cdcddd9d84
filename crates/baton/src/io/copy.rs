//! [`copy`]: everything from a reader to a writer.

use std::io;

use super::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// The size of the one buffer [`copy`] moves bytes through.
const COPY_BUF: usize = 64 * 1024;

/// Copies everything `reader` yields until its end into `writer`, through one owned buffer,
/// and returns how many bytes were copied. The writer is not flushed or shut down.
///
/// # Errors
///
/// The first error of a read or a write.
///
/// # Cancel safety
///
/// Not cancel-safe: a drop loses the bytes read but not yet written.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let (a, b) = baton::net::UnixStream::pair()?;
///     let mut source = std::io::Cursor::new(b"copied".to_vec());
///     let mut sink = a;
///     assert_eq!(baton::io::copy(&mut source, &mut sink).await?, 6);
///     baton::io::AsyncWrite::shutdown(&mut sink).await?;
///     let (res, got) = baton::io::AsyncReadExt::read_to_end(&mut &b, Vec::new()).await;
///     res?;
///     assert_eq!(got, b"copied");
///     Ok(())
/// })
/// # }
/// ```
pub async fn copy<R, W>(reader: &mut R, writer: &mut W) -> io::Result<u64>
where
    R: AsyncRead + Send + ?Sized,
    W: AsyncWrite + Send + ?Sized,
{
    let mut buf = Vec::with_capacity(COPY_BUF);
    let mut copied = 0u64;
    loop {
        let (res, back) = reader.read(buf).await;
        buf = back;
        match res {
            Ok(0) => return Ok(copied),
            Ok(n) => {
                let (res, back) = writer.write_all(buf).await;
                buf = back;
                res?;
                copied += n as u64;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
}
