//! Workspace-level end-to-end tests for Baton.
//!
//! This crate is not published. Its `tests/` folder holds cross-crate scenarios: the blocking
//! pool under a multi-threaded stress load, real files and loopback sockets through the facade,
//! nested `block_on`, and shutdown with work in flight. The library itself only holds small
//! shared helpers for those tests (for example counting open file descriptors).

pub mod blocking;
pub mod paced;
pub mod pool;

/// Counts the open file descriptors of this process by listing `/proc/self/fd`.
///
/// Tests compare the count before and after a scenario to prove that nothing leaked.
pub fn open_fd_count() -> std::io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count())
}

/// `cat` with piped stdin and stdout, both taken out of the child: the echoing child of the
/// process tests.
pub fn cat() -> std::io::Result<(
    baton::process::Child,
    baton::process::ChildStdin,
    baton::process::ChildStdout,
)> {
    use baton::process::{Command, Stdio};
    let mut child = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdin = child.stdin.take().expect("stdin was piped");
    let stdout = child.stdout.take().expect("stdout was piped");
    Ok((child, stdin, stdout))
}

/// Runs `future` on a fresh runtime, dropped once it returned: the whole frame of a test that
/// needs nothing else of the runtime.
pub fn on_runtime<T>(
    future: impl std::future::Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    baton::Runtime::new()?.block_on(future)
}

/// A fresh directory under the temp dir, removed with everything in it when dropped: the
/// scratch space of the file-system tests (`e2e_fs_*`).
#[derive(Debug)]
pub struct Scratch {
    path: std::path::PathBuf,
}

impl Scratch {
    /// Creates `baton-e2e-<tag>-<pid>-<n>` under the temp dir.
    pub fn new(tag: &str) -> std::io::Result<Scratch> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "baton-e2e-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path)?;
        Ok(Scratch { path })
    }

    /// The directory itself.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// A path inside the directory.
    pub fn join(&self, name: impl AsRef<std::path::Path>) -> std::path::PathBuf {
        self.path.join(name)
    }

    /// Writes a file named `name` in the directory holding `contents`, and returns its path.
    pub fn file(
        &self,
        name: impl AsRef<std::path::Path>,
        contents: impl AsRef<[u8]>,
    ) -> std::io::Result<std::path::PathBuf> {
        let path = self.join(name);
        std::fs::write(&path, contents)?;
        Ok(path)
    }

    /// Paths inside the directory, one per name, in order.
    pub fn joins<const N: usize>(&self, names: [&str; N]) -> [std::path::PathBuf; N] {
        names.map(|name| self.join(name))
    }
}

/// The frame of a file-system test: a runtime and a fresh [`Scratch`] directory tagged `tag`,
/// and `body` run on the runtime with the directory.
pub fn in_scratch<T>(
    tag: &str,
    body: impl AsyncFnOnce(&Scratch) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let (rt, scratch) = runtime_with_scratch(tag)?;
    rt.block_on(body(&scratch))
}

/// The prologue of a file-system test: a runtime and a fresh [`Scratch`] directory.
pub fn runtime_with_scratch(tag: &str) -> std::io::Result<(baton::Runtime, Scratch)> {
    Ok((baton::Runtime::new()?, Scratch::new(tag)?))
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Polls `future` to completion on the calling thread, which has no runtime: the waker unparks
/// this thread. The foreign-thread tests (`e2e_threads`, `e2e_blocking`) use it to prove that
/// operation futures may be polled off the worker.
pub fn poll_here<F: std::future::Future>(future: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::{self, Thread};

    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

/// Polls two futures together until both are done (a minimal join for the tests, which must not
/// depend on a combinator crate).
pub async fn join<A: std::future::Future, B: std::future::Future>(
    a: A,
    b: B,
) -> (A::Output, B::Output) {
    use std::task::Poll;

    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    let (mut out_a, mut out_b) = (None, None);
    std::future::poll_fn(|cx| {
        if out_a.is_none()
            && let Poll::Ready(v) = a.as_mut().poll(cx)
        {
            out_a = Some(v);
        }
        if out_b.is_none()
            && let Poll::Ready(v) = b.as_mut().poll(cx)
        {
            out_b = Some(v);
        }
        if out_a.is_some() && out_b.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    (
        out_a.expect("checked just above"),
        out_b.expect("checked just above"),
    )
}

/// Asserts that `result` failed with `kind`; `what` names the call in the failure message.
#[track_caller]
pub fn assert_kind<T: std::fmt::Debug>(
    result: std::io::Result<T>,
    kind: std::io::ErrorKind,
    what: &str,
) {
    match result {
        Err(err) => assert_eq!(err.kind(), kind, "{what}: {err}"),
        Ok(value) => panic!("{what}: expected {kind:?}, got Ok({value:?})"),
    }
}

/// Asserts that building `builder` fails with `InvalidInput`, the message naming `needle`.
#[track_caller]
pub fn assert_build_refused(builder: baton::Builder, needle: &str) {
    let err = builder
        .build()
        .expect_err("the builder's settings are refused");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains(needle), "{err}");
}

/// Opens `path` for reading and writing through Baton, created if missing and truncated: a
/// fresh, empty file for a test to fill.
pub async fn create_read_write(
    path: impl AsRef<std::path::Path>,
) -> std::io::Result<baton::fs::File> {
    baton::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .await
}

/// Numbered chunks written at their offsets, for the shutdown tests that prove no issued write
/// is lost: chunk `i` is `CHUNK` bytes of one value, at offset `i * CHUNK`.
pub mod chunks {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::Poll;

    /// The size of one chunk.
    pub const CHUNK: usize = 4096;

    /// Chunk `i`'s bytes (never zero, so a hole in the file cannot pass for a chunk).
    pub fn chunk(i: usize) -> Vec<u8> {
        vec![(i % 251) as u8 + 1; CHUNK]
    }

    /// Writes chunk `i` at its offset in `file`.
    pub fn write_chunk(
        file: &baton::fs::File,
        i: usize,
    ) -> impl Future<Output = baton::io::BufResult<usize, Vec<u8>>> + '_ {
        file.write_at(chunk(i), (i * CHUNK) as u64)
    }

    /// Polls the caller's pinned `future` once (registering its request) and leaves it with
    /// the caller.
    pub async fn poll_once<F: Future>(mut future: Pin<&mut F>) {
        std::future::poll_fn(|cx| {
            let _ = future.as_mut().poll(cx);
            Poll::Ready(())
        })
        .await;
    }

    /// Asserts that `data` is exactly chunks `0..count`, each at its offset; `context` is
    /// added to the failure messages.
    #[track_caller]
    pub fn assert_all_landed(data: &[u8], count: usize, context: &str) {
        assert_eq!(data.len(), count * CHUNK, "{context}");
        for i in 0..count {
            assert!(
                data[i * CHUNK..(i + 1) * CHUNK] == chunk(i)[..],
                "write {i} was lost {context}"
            );
        }
    }
}
