//! Owned buffers as the facade's I/O methods take them.
//!
//! Every I/O method takes a `Vec<u8>` by value and hands it back with the result, because the
//! kernel may write into it until the operation's final completion (SPEC §4). Reads fill the
//! buffer's *length*; as a convenience for the `Vec::with_capacity(n)` idiom, an empty buffer
//! with spare capacity is read into its capacity and comes back truncated to the bytes read.

/// A read target: the buffer to hand to the ring, and whether it was grown from its capacity.
#[derive(Debug)]
pub(crate) struct ReadTarget {
    buf: Vec<u8>,
    grown: bool,
}

impl ReadTarget {
    /// Prepares `buf` for a read: an empty buffer with capacity is zero-filled to its capacity.
    pub(crate) fn new(mut buf: Vec<u8>) -> ReadTarget {
        let grown = buf.is_empty() && buf.capacity() > 0;
        if grown {
            buf.resize(buf.capacity(), 0);
        }
        ReadTarget { buf, grown }
    }

    /// The buffer to hand to the ring.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Restores the caller's view of the buffer the ring handed back after reading `read`
    /// bytes (`None` when the read failed).
    pub(crate) fn finish(&self, mut buf: Vec<u8>, read: Option<usize>) -> Vec<u8> {
        if self.grown {
            buf.truncate(read.unwrap_or(0));
        }
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_buffer_with_capacity_reads_into_capacity() {
        let mut target = ReadTarget::new(Vec::with_capacity(16));
        let buf = target.take();
        assert_eq!(buf.len(), 16);
        let buf = target.finish(buf, Some(5));
        assert_eq!(buf.len(), 5);
    }

    #[test]
    fn filled_buffer_keeps_its_length() {
        let mut target = ReadTarget::new(vec![7; 8]);
        let buf = target.take();
        assert_eq!(target.finish(buf, Some(3)).len(), 8);
    }

    #[test]
    fn failed_read_into_capacity_comes_back_empty() {
        let mut target = ReadTarget::new(Vec::with_capacity(4));
        let buf = target.take();
        assert!(target.finish(buf, None).is_empty());
    }
}
