//! End to end: `Handle::block_on` called from inside a task poll (SPEC §5 "never deadlocks").
//!
//! The worker is busy polling the very task that calls `block_on`, so the nested future's
//! timers and I/O can only progress if that call drives the driver itself. Each scenario runs
//! on its own thread and reports through a channel with a generous bound, so a regression
//! fails the test instead of hanging it.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use baton::Handle;
use baton::net::TcpStream;

/// Far above what any scenario needs; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(20);

/// What the nested drive's panic (rule N4) says.
const HELD: &str = "waits for another task of the same worker";

/// The message of the panic that ended a task, or an error when the task did not panic.
fn panic_message<T>(outcome: Result<T, baton::JoinError>) -> io::Result<String> {
    let err = outcome
        .err()
        .filter(baton::JoinError::is_panic)
        .ok_or_else(|| io::Error::other("the nested wait did not panic"))?;
    let payload = err.into_panic();
    let message = payload.downcast_ref::<&str>().copied().unwrap_or_default();
    Ok(message.to_string())
}

/// How long a sibling task stays unfinished: long enough that a loaded machine cannot let it
/// finish before the nested `block_on` first polls its handle.
const SIBLING_SLEEP: Duration = Duration::from_secs(1);

/// Runs `scenario` on a fresh thread and returns its result, or fails when it does not finish
/// within [`BOUND`] (the stuck thread is left behind; the test reports instead of hanging).
fn within_bound<T: Send + 'static>(
    what: &str,
    scenario: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _sent = tx.send(scenario());
    });
    match rx.recv_timeout(BOUND) {
        Ok(Ok(value)) => value,
        Ok(Err(err)) => panic!("{what} failed: {err}"),
        Err(_) => panic!("{what} did not finish within {BOUND:?}: block_on inside a task hung"),
    }
}

#[test]
fn block_on_sleep_inside_a_task_spawned_from_outside_finishes() {
    let out = within_bound("sleep in a background task", || {
        let rt = baton::Runtime::new()?;
        let (tx, rx) = mpsc::channel();
        let _join = rt.spawn(async move {
            Handle::current().block_on(baton::time::sleep(Duration::from_millis(10)));
            let _sent = tx.send("slept");
        });
        let out = rx
            .recv_timeout(BOUND)
            .map_err(|_| io::Error::other("the task never finished its nested sleep"))?;
        let _report = rt.shutdown_timeout(Duration::from_secs(5));
        Ok(out)
    });
    assert_eq!(out, "slept");
}

#[test]
fn block_on_sleep_inside_a_task_polled_by_a_block_on_root_finishes() {
    let out = within_bound("sleep in a task polled by a root", || {
        let rt = baton::Runtime::new()?;
        let out = rt.block_on(async {
            let join = baton::spawn(async {
                Handle::current().block_on(baton::time::sleep(Duration::from_millis(10)));
                7
            });
            join.await
        });
        out.map_err(io::Error::other)
    });
    assert_eq!(out, 7);
}

#[test]
fn block_on_socket_read_inside_a_task_finishes() {
    let out = within_bound("socket read in a task", || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let peer = thread::spawn(move || -> io::Result<()> {
            let (mut stream, _) = listener.accept()?;
            thread::sleep(Duration::from_millis(20));
            stream.write_all(b"ping")
        });
        let rt = baton::Runtime::new()?;
        let join = rt.spawn(async move {
            Handle::current().block_on(async move {
                let stream = TcpStream::connect(addr).await?;
                let (res, buf) = stream.read(Vec::with_capacity(16)).await;
                res?;
                Ok::<_, io::Error>(buf)
            })
        });
        let read = rt.block_on(join).map_err(io::Error::other)??;
        peer.join()
            .map_err(|_| io::Error::other("the peer thread panicked"))??;
        Ok(read)
    });
    assert_eq!(out, b"ping");
}

/// Nested drive rule N4: a `block_on` inside a task that waits for a sibling task's
/// `JoinHandle` panics with a message saying why (the sibling cannot run until it returns),
/// instead of hanging; the task ends as panicked, and the sibling still runs afterwards.
#[test]
fn block_on_of_a_sibling_task_s_handle_panics_instead_of_hanging() {
    let message = within_bound("block_on of a sibling's handle", || {
        let rt = baton::Runtime::new()?;
        rt.block_on(async {
            let ran = Arc::new(AtomicBool::new(false));
            let sibling = baton::spawn({
                let ran = Arc::clone(&ran);
                async move {
                    baton::time::sleep(SIBLING_SLEEP).await;
                    ran.store(true, Ordering::SeqCst);
                }
            });
            let blocked = baton::spawn(async move { Handle::current().block_on(sibling) });
            let message = panic_message(blocked.await)?;
            assert!(
                !ran.load(Ordering::SeqCst),
                "the sibling could not run meanwhile"
            );
            while !ran.load(Ordering::SeqCst) {
                baton::time::sleep(Duration::from_millis(5)).await;
            }
            Ok(message)
        })
    });
    assert!(message.contains(HELD), "{message}");
}

/// Rule N4 marks the worker the nested call holds, not whichever runtime is innermost on the
/// thread: a task of `outer` runs `inner.block_on`, and inside it `outer`'s own nested
/// `block_on` waits for a sibling task of `outer`, which still panics instead of hanging.
#[test]
fn the_held_worker_is_the_one_the_nested_call_drives() {
    let message = within_bound("a nested block_on across two runtimes", || {
        let outer = baton::Runtime::new()?;
        let inner = baton::Runtime::new()?;
        let outer_handle = outer.handle().clone();
        let blocked = outer.spawn(async move {
            let sibling = baton::spawn(async {
                baton::time::sleep(SIBLING_SLEEP).await;
            });
            inner.block_on(async move { outer_handle.block_on(sibling) })
        });
        panic_message(outer.block_on(blocked))
    });
    assert!(message.contains(HELD), "{message}");
}

/// Rule N4 through a `JoinSet`: a set whose running members are all this worker's unfinished
/// tasks, awaited in a nested `block_on`, panics too (the set checks when it waits).
#[test]
fn block_on_of_a_join_set_of_sibling_tasks_panics_instead_of_hanging() {
    let message = within_bound("block_on of a JoinSet", || {
        let rt = baton::Runtime::new()?;
        rt.block_on(async {
            let mut set = baton::task::JoinSet::new();
            set.spawn(baton::time::sleep(SIBLING_SLEEP));
            let blocked = baton::spawn(async move {
                Handle::current()
                    .block_on(set.join_next())
                    .map(|joined| joined.is_ok())
            });
            panic_message(blocked.await)
        })
    });
    assert!(message.contains(HELD), "{message}");
}

/// Filling a `JoinSet` inside a nested `block_on` is no wait: the set registers with each
/// member at once, and only awaiting it there would be. The set, awaited after the nested call
/// returned, yields every result.
#[test]
fn a_join_set_filled_in_a_nested_block_on_is_joined_after_it() {
    let joined = within_bound("a JoinSet filled in a nested block_on", || {
        let rt = baton::Runtime::new()?;
        let out = rt.block_on(rt.spawn(async {
            let mut set = Handle::current().block_on(async {
                let mut set = baton::task::JoinSet::new();
                for i in 0..3 {
                    set.spawn(async move { i });
                }
                set
            });
            let mut joined = Vec::new();
            while let Some(result) = set.join_next().await {
                joined.push(result.map_err(io::Error::other)?);
            }
            joined.sort_unstable();
            io::Result::Ok(joined)
        }));
        out.map_err(io::Error::other)?
    });
    assert_eq!(joined, [0, 1, 2]);
}

/// Rule N4 through a `JoinSet` panics only when no running member can finish: a set with one
/// member held back here and one on another runtime, awaited in a nested `block_on`, waits
/// for the other runtime's member instead of panicking.
#[test]
fn a_join_set_with_a_member_elsewhere_is_waited_for_in_a_nested_block_on() {
    let first = within_bound("a JoinSet with a member on another runtime", || {
        let rt = baton::Runtime::new()?;
        let elsewhere = baton::Runtime::new()?;
        let other = elsewhere.handle().clone();
        let out = rt.block_on(rt.spawn(async move {
            let mut set = baton::task::JoinSet::new();
            set.spawn(async {
                baton::time::sleep(SIBLING_SLEEP).await;
                1
            });
            set.spawn_on(async { 5 }, &other);
            Handle::current().block_on(set.join_next())
        }));
        drop(elsewhere);
        match out.map_err(io::Error::other)? {
            Some(joined) => joined.map_err(io::Error::other),
            None => Err(io::Error::other("the set was empty")),
        }
    });
    assert_eq!(first, 5, "the member on the other runtime finished first");
}
