//! [`TestJoin`]: the output of a task spawned on the test worker (or of any test that completes a
//! future by hand, with its [`Done`] half), and [`YieldNow`], a root that wakes itself.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::sync::{self, Mutex};

/// The output slot of a spawned task.
#[derive(Debug)]
struct JoinState<T> {
    output: Mutex<(Option<T>, Option<Waker>)>,
}

/// Awaits a spawned task's output.
#[derive(Debug)]
pub(crate) struct TestJoin<T> {
    state: Arc<JoinState<T>>,
}

/// Completes a [`TestJoin`].
pub(crate) struct Done<T> {
    state: Arc<JoinState<T>>,
}

impl<T> TestJoin<T> {
    pub(crate) fn pair() -> (Self, Done<T>) {
        let state = Arc::new(JoinState {
            output: Mutex::new((None, None)),
        });
        (
            Self {
                state: Arc::clone(&state),
            },
            Done { state },
        )
    }

    /// The output, if the task finished (without waiting).
    pub(crate) fn try_take(&self) -> Option<T> {
        sync::lock(&self.state.output).0.take()
    }
}

impl<T> Done<T> {
    pub(crate) fn set(self, value: T) {
        let waker = {
            let mut output = sync::lock(&self.state.output);
            output.0 = Some(value);
            output.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Future for TestJoin<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut output = sync::lock(&self.state.output);
        match output.0.take() {
            Some(value) => Poll::Ready(value),
            None => {
                output.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A future that wakes itself and yields `times` times before completing.
#[derive(Debug)]
pub(crate) struct YieldNow {
    pub(crate) times: usize,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.times == 0 {
            return Poll::Ready(());
        }
        self.times -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
