//! Who waits on a [`Compat`](crate::Compat)'s background write: the write side (a
//! `poll_write` or `poll_flush` that must see it finish) and the read side (a read that found
//! the end of the stream and reports it only after the write, rule M5).
//!
//! Why: the write is one ring operation, and an operation keeps one waker, the last poller's.
//! With the halves of a split `Compat` in two tasks, the side that polled the write last would
//! be the only one woken when it ends, and the other would wait forever. So while both sides
//! wait, the write is polled with a waker that wakes both; while only one waits (the common
//! case) it is polled with that side's own waker, as any future would be.

use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Which side polls the background write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// A `poll_write` or `poll_flush` that returns `Pending` until the write ends.
    Writer,
    /// The read side's end-of-stream path (M5).
    Reader,
    /// The first poll of a write just started, whose `poll_write` returns `Ready` whatever it
    /// gives: nobody waits on it yet.
    Starter,
}

/// The wakers of the sides waiting on the background write.
#[derive(Debug, Default)]
pub(crate) struct WriteWaiters {
    writer: Option<Waker>,
    reader: Option<Waker>,
}

impl WriteWaiters {
    /// Polls the write through `poll` on behalf of `side`, woken by `cx` and by the other side
    /// if it waits too. A side that gets `Pending` is recorded as waiting; when the write ends,
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
