//! hyper 1.x on Baton (feature `hyper`): [`Io`] (`hyper::rt::{Read, Write}` over a
//! [`Compat`]), [`Executor`] (hyper's background tasks, e.g. http2 streams, as Baton tasks)
//! and [`Timer`] (hyper's timeouts as Baton sleeps).
//!
//! ```no_run
//! # async fn serve(stream: baton::net::TcpStream) -> Result<(), hyper::Error> {
//! use baton_compat::hyper::{Io, Timer};
//!
//! let service = hyper::service::service_fn(|_request| async {
//!     Ok::<_, std::convert::Infallible>(hyper::Response::new(String::from("hello")))
//! });
//! hyper::server::conn::http1::Builder::new()
//!     .timer(Timer)
//!     .serve_connection(Io::new(stream), service)
//!     .await
//! # }
//! ```

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use hyper::rt::ReadBufCursor;

use crate::forward::{forward_writes, impl_for_stream};
use crate::socket::SocketEngine;
use crate::{Compat, CompatExt, CompatIo};

/// A Baton stream as hyper's transport: `Read` when it reads, `Write` when it writes (a
/// whole socket, for a connection).
#[derive(Debug)]
pub struct Io<S: CompatIo>(Compat<S>);

impl<S: CompatIo> Io<S> {
    /// Wraps `stream` (in a [`Compat`]: its buffers and guarantees are this type's).
    pub fn new(stream: S) -> Io<S> {
        Io(stream.compat())
    }
}

impl<S> Io<S>
where
    S: CompatIo<Engine = SocketEngine<S>>,
{
    /// The socket.
    pub fn get_ref(&self) -> &S {
        self.0.get_ref()
    }
}

impl_for_stream!(EngineRead: hyper::rt::Read => Io<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let room = buf.remaining();
        ready!(self.get_mut().0.poll_read_into(cx, room, |bytes| buf.put_slice(bytes)))?;
        Poll::Ready(Ok(()))
    }
});

impl_for_stream!(EngineWrite: hyper::rt::Write => Io<S> {
    forward_writes!(|this| this.0, vectored, poll_shutdown);
});

/// hyper's executor: each future becomes a task on the current Baton runtime
/// ([`baton::spawn`]), detached.
///
/// # Panics
///
/// `execute` panics outside a Baton runtime, as [`baton::spawn`] does.
#[derive(Debug, Clone, Copy, Default)]
pub struct Executor;

impl<F> hyper::rt::Executor<F> for Executor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        // Dropping the handle detaches the task; hyper watches its futures itself.
        drop(baton::spawn(future));
    }
}

/// hyper's timer: its sleeps are [`baton::time::Sleep`]s, on the runtime where they are polled.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timer;

impl hyper::rt::Timer for Timer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(Sleep(baton::time::sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(Sleep(baton::time::sleep_until(deadline)))
    }

    /// Moves one of this timer's sleeps in place (hyper resets its timers per request; the
    /// default would box a new sleep each time). Any other sleep is replaced, as by default.
    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<Sleep>() {
            Some(mut ours) => ours.0.reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// A Baton sleep as `hyper::rt::Sleep` (which must be `Send + Sync`, as Baton's sleep is).
#[derive(Debug)]
struct Sleep(baton::time::Sleep);

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // `baton::time::Sleep` is `Unpin`, so the pin projects plainly.
        Pin::new(&mut self.get_mut().0).poll(cx)
    }
}

impl hyper::rt::Sleep for Sleep {}
