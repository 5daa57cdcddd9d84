//! Owned buffers as the facade's I/O methods take them.
//!
//! Every I/O method takes a `Vec<u8>` by value and hands it back with the result, because the
//! kernel may write into it until the operation's final completion (SPEC §4). The ring reads
//! into a buffer's *spare capacity* (`len..capacity`, see `baton_uring::ops`), so:
//!
//! 1. A buffer with spare capacity (the `Vec::with_capacity(n)` idiom) is passed through
//!    untouched — no zero-fill — and comes back holding its old contents followed by the bytes
//!    read.
//! 2. A buffer with no spare capacity (`vec![0; n]`) is read into its length, as the facade has
//!    always done: its length is set to 0 for the ring (which leaves the bytes in place) and
//!    restored afterwards, so it comes back at the same length with the first `count` bytes
//!    replaced.
//! 3. A buffer with no capacity at all is passed through; the ring refuses it with
//!    `InvalidInput`.
//! 4. A read that must land in the buffer's length whatever its capacity (`read_exact_at`)
//!    empties it as in rule 2; afterwards its length is restored, and bytes the ring read past
//!    that length (into extra capacity) are cut off.

/// A read target: the buffer to hand to the ring, and the length to restore (rule 2).
#[derive(Debug)]
pub(crate) struct ReadTarget {
    buf: Vec<u8>,
    /// `Some(len)` when a full buffer was emptied so the ring reads over its contents.
    restore: Option<usize>,
}

/// What [`ReadTarget::new`] did with a buffer.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Rules 1 and 3: the buffer goes to the ring as it is.
    PassThrough,
    /// Rule 2: the buffer was emptied; its length is restored afterwards.
    OverLength(usize),
}

fn target_for(buf: &Vec<u8>) -> Target {
    if buf.len() == buf.capacity() && !buf.is_empty() {
        Target::OverLength(buf.len())
    } else {
        Target::PassThrough
    }
}

impl ReadTarget {
    /// Prepares `buf` for a read (module rules 1–3); never writes its bytes.
    pub(crate) fn new(mut buf: Vec<u8>) -> ReadTarget {
        let restore = match target_for(&buf) {
            Target::PassThrough => None,
            Target::OverLength(len) => {
                // rule 2: only the length changes; `u8` has no drop glue, so the bytes stay.
                buf.clear();
                Some(len)
            }
        };
        ReadTarget { buf, restore }
    }

    /// Prepares `buf` to be read over its length whatever its capacity (module rule 4).
    pub(crate) fn over_length(mut buf: Vec<u8>) -> ReadTarget {
        let len = buf.len();
        buf.clear();
        ReadTarget {
            buf,
            restore: Some(len),
        }
    }

    /// The buffer to hand to the ring.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Restores the caller's view of the buffer the ring handed back (rules 2 and 4); a
    /// passed-through buffer comes back as the ring returned it (rule 1).
    pub(crate) fn finish(&self, mut buf: Vec<u8>) -> Vec<u8> {
        match self.restore {
            Some(len) if buf.len() >= len => buf.truncate(len),
            Some(len) if buf.capacity() >= len => {
                // SAFETY: `buf` is the caller's buffer of length `len`, emptied by `new` or
                // `over_length` without touching its bytes (`u8` has no drop glue) and owned by
                // the ring until now, which only initialized `buf[..buf.len()]` in the same
                // allocation; so `buf[buf.len()..len]` still holds the caller's initialized
                // bytes, and `len` fits the capacity (checked).
                unsafe { buf.set_len(len) };
            }
            _ => {}
        }
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(bytes: &[u8]) -> Vec<u8> {
        let mut buf = bytes.to_vec();
        buf.shrink_to_fit();
        buf
    }

    #[test]
    fn buffer_with_spare_capacity_passes_through() {
        let mut buf = Vec::with_capacity(16);
        buf.extend_from_slice(b"ab");
        let mut target = ReadTarget::new(buf);
        let mut buf = target.take();
        assert_eq!(buf, b"ab", "no zero-fill, no change");
        buf.extend_from_slice(b"cde");
        assert_eq!(
            target.finish(buf),
            b"abcde",
            "prefix, then what the ring read"
        );
    }

    #[test]
    fn full_buffer_is_read_over_its_length() {
        let mut target = ReadTarget::new(full(b"xxxxxxxx"));
        let mut buf = target.take();
        assert!(buf.is_empty());
        assert_eq!(buf.capacity(), 8);
        buf.extend_from_slice(b"abc");
        assert_eq!(target.finish(buf), b"abcxxxxx");
    }

    #[test]
    fn failed_read_over_a_full_buffer_leaves_it_untouched() {
        let mut target = ReadTarget::new(full(b"keep"));
        let buf = target.take();
        assert_eq!(target.finish(buf), b"keep");
    }

    #[test]
    fn over_length_restores_the_length_and_cuts_an_overshoot() {
        let mut buf = Vec::with_capacity(8);
        buf.extend_from_slice(b"xxxx");
        let mut target = ReadTarget::over_length(buf);
        let mut short = target.take();
        assert!(short.is_empty());
        short.extend_from_slice(b"a");
        let restored = target.finish(short);
        assert_eq!(restored, b"axxx", "the old bytes past the read are kept");
        let mut target = ReadTarget::over_length(restored);
        let mut long = target.take();
        long.extend_from_slice(b"abcdef");
        assert_eq!(target.finish(long), b"abcd");
    }

    #[test]
    fn buffer_without_capacity_passes_through() {
        let mut target = ReadTarget::new(Vec::new());
        assert_eq!(target.take().capacity(), 0);
    }
}
