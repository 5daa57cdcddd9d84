//! [`ReadBuffer`]: the bytes a [`Compat`](crate::Compat) read and has not handed out yet, the
//! same for both engines.

use std::io;

/// The bytes of the last completed read, `[pos..]` not yet handed out, and whether that read
/// found the end of the stream. The buffer is empty (and, before the first read, unallocated)
/// while a read holds it.
#[derive(Debug, Default)]
pub(crate) struct ReadBuffer {
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
}

impl ReadBuffer {
    /// How many bytes are waiting to be handed out.
    pub(crate) fn waiting(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The bytes waiting to be handed out (empty when none are).
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Whether the last read found the end of the stream, not reported yet.
    pub(crate) fn at_eof(&self) -> bool {
        self.eof
    }

    /// Marks the end of the stream reported: the next fill reads again (a file may grow).
    pub(crate) fn eof_reported(&mut self) {
        self.eof = false;
    }

    /// The buffer, emptied, with room for at least `size` bytes, for the next read to fill.
    pub(crate) fn lend(&mut self, size: usize) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.buf);
        self.pos = 0;
        buf.clear();
        if buf.capacity() < size {
            buf.reserve_exact(size);
        }
        buf
    }

    /// Takes back the buffer a read filled and what the read returned: `Ok(0)` is the end of
    /// the stream; an error fills nothing (the buffer is kept for the next read) and is
    /// returned.
    pub(crate) fn filled(&mut self, result: io::Result<usize>, buf: Vec<u8>) -> io::Result<()> {
        self.buf = buf;
        self.pos = 0;
        match result {
            Ok(0) => self.eof = true,
            Ok(_) => {}
            Err(error) => {
                self.buf.clear();
                return Err(error);
            }
        }
        Ok(())
    }

    /// Forgets the bytes waiting (their stream took them back).
    pub(crate) fn discard(&mut self) {
        self.pos = self.buf.len();
    }

    /// Marks `amount` of [`bytes`](Self::bytes) handed out.
    pub(crate) fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.buf.len());
    }
}
