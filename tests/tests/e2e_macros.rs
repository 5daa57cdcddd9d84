//! End to end: `#[baton::test]` and `#[baton::main]` used for real — tests that do file and
//! socket I/O on the runtime the attribute built, take arguments, return `Result`, expect a
//! panic; a `#[baton::main]` function whose runtime cannot be built panics saying why.

use std::io;
use std::panic::catch_unwind;
use std::rc::Rc;

use baton::task::JoinSet;

#[baton::test]
async fn test_attribute_runs_socket_io() -> io::Result<()> {
    let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let client = baton::spawn(async move {
        let stream = baton::net::TcpStream::connect(addr).await?;
        stream.write_all(b"ping".to_vec()).await.0?;
        let (res, got) = stream.read(Vec::with_capacity(4)).await;
        res?;
        io::Result::Ok(got)
    });
    let (stream, _peer) = listener.accept().await?;
    let (res, got) = stream.read(Vec::with_capacity(4)).await;
    assert_eq!(res?, 4);
    stream.write_all(got).await.0?;
    let echoed = client.await.map_err(io::Error::other)??;
    assert_eq!(echoed, b"ping");
    Ok(())
}

#[baton::test(ring_entries = 8, blocking_threads = 2, workers = 1)]
async fn test_attribute_with_arguments_runs_file_io() -> io::Result<()> {
    let path = std::env::temp_dir().join(format!("baton-macros-{}", std::process::id()));
    baton::fs::write(&path, b"written through a small ring").await?;
    let read = baton::fs::read(&path).await?;
    baton::fs::remove_file(&path).await?;
    assert_eq!(read, b"written through a small ring");
    Ok(())
}

/// `workers = 2` reaches `Builder::workers`: the body runs on worker 0, and tasks placed from
/// it by the handle land on both workers (SPEC §12's placement: the fewest live tasks, ties
/// round-robin).
#[baton::test(workers = 2)]
async fn test_attribute_with_two_workers_runs_tasks_on_both() {
    assert_eq!(baton::task::worker_index(), Some(0));
    let handle = baton::Handle::current();
    let mut placed = Vec::new();
    for _ in 0..8 {
        placed.push(handle.spawn(async {
            baton::time::sleep(std::time::Duration::from_millis(20)).await;
            baton::task::worker_index()
        }));
    }
    let mut seen = [0_usize; 2];
    for task in placed {
        let index = task
            .await
            .expect("the task ran")
            .expect("a task runs on a worker");
        seen[index] += 1;
    }
    assert!(seen[0] > 0 && seen[1] > 0, "tasks ran on workers {seen:?}");
}

#[baton::test]
async fn test_body_is_the_block_on_root_and_may_hold_non_send_values() {
    let local = Rc::new(20);
    let mut set = JoinSet::new();
    for i in 0..4 {
        let local = Rc::clone(&local);
        set.spawn_local(async move { *local + i });
    }
    let mut total = 0;
    while let Some(result) = set.join_next().await {
        total += result.expect("a local task neither panics nor is aborted");
    }
    assert_eq!(total, 20 * 4 + 6);
}

#[baton::test]
#[should_panic(expected = "the body panicked on purpose")]
async fn test_attribute_keeps_should_panic() {
    baton::task::yield_now().await;
    panic!("the body panicked on purpose");
}

#[baton::test]
async fn test_body_may_return_early() -> Result<(), String> {
    if baton::Handle::try_current().is_ok() {
        return Ok(());
    }
    Err("the body runs inside the runtime the attribute built".to_owned())
}

/// Not `main`: `#[baton::main]` goes on any `async fn` without parameters. 40,000 ring entries
/// is past the driver's limit, which only the builder knows: a run-time error.
#[baton::main(ring_entries = 40_000)]
async fn start_with_an_oversized_ring() {}

#[test]
fn main_attribute_panics_with_the_builders_error_when_the_runtime_cannot_be_built() {
    let payload = catch_unwind(start_with_an_oversized_ring)
        .expect_err("a runtime with 40,000 ring entries cannot be built");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("#[baton::main] could not build its runtime"),
        "{message}"
    );
    assert!(message.contains("ring_entries 40000"), "{message}");
}

#[baton::main(blocking_threads = 1)]
async fn sum_on_the_blocking_pool() -> Result<u64, baton::BlockingError> {
    baton::blocking::spawn_blocking(|| (1..=10).sum()).await
}

#[test]
fn main_attribute_returns_the_body_output() {
    assert_eq!(sum_on_the_blocking_pool().ok(), Some(55));
}
