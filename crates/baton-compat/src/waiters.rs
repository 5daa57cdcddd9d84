//! Who waits on a [`Compat`](crate::Compat)'s one shared operation: the write side (a
//! `poll_write` or `poll_flush` that must see it finish) and the read side. On a socket the
//! shared operation is the background write, which a read that found the end of the stream
//! waits for (rule M5); on a stream driven through owned calls (a file, a buffered stream) it is
//! whichever call holds the stream, which the other side waits for (rule M6).
//!
//! Why: the operation is one future, and a future keeps one waker, the last poller's. With the
//! halves of a split `Compat` in two tasks, the side that polled it last would be the only one
//! woken when it ends, and the other would wait forever. So while both sides wait, the
//! operation is polled with a waker that wakes both; while only one waits (the common case) it
//! is polled with that side's own waker, as any future would be.

use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Which side polls the shared operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// A `poll_write`, `poll_flush` or `poll_shutdown` that returns `Pending` until the
    /// operation ends.
    Writer,
    /// A read: the end-of-stream path on a socket (M5), any read on an owned-call stream (M6).
    Reader,
    /// The first poll of a write just started, whose `poll_write` returns `Ready` whatever it
    /// gives: nobody waits on it yet.
    Starter,
}

/// The wakers of the sides waiting on the shared operation.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    writer: Option<Waker>,
    reader: Option<Waker>,
}

impl Waiters {
    /// Polls the operation through `poll` on behalf of `side`, woken by `cx` and by the other
    /// side if it waits too. A side that gets `Pending` is recorded as waiting; when it ends,
    /// both sides' records are cleared, and the other side is woken if it waited.
    pub(crate) fn poll<T>(
        &mut self,
        side: Side,
        cx: &mut Context<'_>,
        poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        let other = match side {
            Side::Writer | Side::Starter => self.reader.as_ref(),
            Side::Reader => self.writer.as_ref(),
        };
        let polled = match other {
            None => poll(cx),
            Some(other) => {
                let both = Waker::from(Arc::new(Both([cx.waker().clone(), other.clone()])));
                poll(&mut Context::from_waker(&both))
            }
        };
        match polled {
            Poll::Pending => {
                let own = match side {
                    Side::Writer => &mut self.writer,
                    Side::Reader => &mut self.reader,
                    Side::Starter => return Poll::Pending,
                };
                if !own.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *own = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Poll::Ready(done) => {
                let other = match side {
                    Side::Writer | Side::Starter => self.reader.take(),
                    Side::Reader => self.writer.take(),
                };
                self.writer = None;
                self.reader = None;
                if let Some(other) = other {
                    other.wake();
                }
                Poll::Ready(done)
            }
        }
    }
}

/// Two wakers woken as one.
struct Both([Waker; 2]);

impl Wake for Both {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        for waker in &self.0 {
            waker.wake_by_ref();
        }
    }
}
