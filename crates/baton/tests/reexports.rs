//! Checks that the facade's re-exports resolve to the lower crates' items (STYLE 9), so the
//! names applications use (SPEC §6) stay wired to the real implementations.

use std::any::TypeId;

/// Asserts that each facade type is the lower crate's very type (one `TypeId`).
macro_rules! assert_same_types {
    ($($facade:ty => $lower:ty),+ $(,)?) => {
        $(
            assert_eq!(
                TypeId::of::<$facade>(),
                TypeId::of::<$lower>(),
                "{} is not {}",
                stringify!($facade),
                stringify!($lower)
            );
        )+
    };
}

#[test]
fn task_items_are_the_schedulers() {
    assert_same_types! {
        baton::JoinHandle<u8> => baton_task::JoinHandle<u8>,
        baton::JoinError => baton_task::JoinError,
        baton::task::YieldNow => baton_task::YieldNow,
    }
    let _: fn() -> baton::task::YieldNow = baton::task::yield_now;
    let _: fn(std::future::Ready<()>) -> baton::JoinHandle<()> = baton::spawn;
    let _: fn(std::future::Ready<()>) -> baton::JoinHandle<()> = baton::spawn_local;
}

#[test]
fn op_is_the_drivers() {
    assert_same_types! {
        baton::Op<std::io::Result<()>> => baton_uring::Op<std::io::Result<()>>,
        baton::Operation<'static, std::io::Result<()>> => baton_uring::Op<std::io::Result<()>>,
    }
}

#[test]
fn time_instant_is_web_times() {
    assert_same_types! {
        baton::time::Instant => web_time::Instant,
    }
}

#[test]
fn spec_surface_names_resolve() {
    use std::future::Ready;
    use std::time::Duration;
    // One line per item of SPEC §6: this test stops compiling if a name goes missing or
    // changes shape.
    let _: fn() -> std::io::Result<baton::Runtime> = baton::Runtime::new;
    let _: fn() -> baton::Builder = baton::Builder::new;
    let _: fn(baton::Builder, u32) -> baton::Builder = baton::Builder::ring_entries;
    let _: fn(baton::Builder, usize) -> baton::Builder = baton::Builder::blocking_threads;
    let _: fn(baton::Builder) -> std::io::Result<baton::Runtime> = baton::Builder::build;
    let _: fn(&baton::Runtime, Ready<u8>) -> u8 = baton::Runtime::block_on;
    let _: fn(&baton::Runtime) -> baton::Handle = baton::Runtime::handle;
    let _: fn(&baton::Handle, Ready<u8>) -> baton::JoinHandle<u8> = baton::Handle::spawn;
    let _: fn(&baton::Handle, Ready<u8>) -> u8 = baton::Handle::block_on;
    let _: fn() -> baton::Handle = baton::Handle::current;
    let _: fn() -> Result<baton::Handle, baton::Error> = baton::Handle::try_current;
    let _: fn(Ready<u8>) -> baton::JoinHandle<u8> = baton::spawn;
    let _: fn(Ready<u8>) -> baton::JoinHandle<u8> = baton::spawn_local;
    let _: fn() -> baton::task::YieldNow = baton::task::yield_now;
    let _: fn(&baton::JoinHandle<u8>) = baton::JoinHandle::abort;
    let _: fn(&baton::JoinHandle<u8>) -> bool = baton::JoinHandle::is_finished;
    let _: Option<Result<u8, baton::JoinError>> = None;
    let _: fn(Duration) -> baton::time::Sleep = baton::time::sleep;
    let _: fn(baton::time::Instant) -> baton::time::Sleep = baton::time::sleep_until;
    let _: fn(Duration, Ready<u8>) -> baton::time::Timeout<Ready<u8>> = baton::time::timeout;
    let _: Option<baton::time::Elapsed> = None;
    let _: Option<baton::time::TimeoutError> = None;
    let _: fn(fn() -> u8) -> baton::blocking::BlockingHandle<u8> = baton::blocking::spawn_blocking;
    let _: fn(baton::blocking::QuarantineBound, fn() -> u8) -> baton::blocking::BlockingHandle<u8> =
        baton::blocking::spawn_quarantined;
    let _: fn(&baton::blocking::BlockingHandle<u8>) -> baton::blocking::BlockingCancel =
        baton::blocking::BlockingHandle::cancel;
    let _: fn(&baton::blocking::BlockingHandle<u8>) -> bool =
        baton::blocking::BlockingHandle::is_finished;
    let _: Option<baton::blocking::BlockingError> = None;
    let _: Option<baton::blocking::RejectReason> = None;
    let _: fn() -> baton::fs::OpenOptions = baton::fs::OpenOptions::new;
    let _ = |p: String| baton::fs::File::open(p);
    let _ = |p: String| baton::fs::File::create(p);
    let _ = |f: &baton::fs::File| {
        drop(f.read_at(Vec::new(), 0));
        drop(f.write_at(Vec::new(), 0));
        drop(f.write_all_at(Vec::new(), 0));
        drop(f.sync_all());
        drop(f.sync_data());
        drop(f.start_sync());
    };
    let _ = |p: String| baton::fs::read(p);
    let _ = |p: String| baton::fs::write(p, b"");
    let _ = |p: String| baton::fs::remove_file(p);
    // SPEC §11's file-system surface.
    let _ = |p: String| baton::fs::create_dir(p);
    let _ = |p: String| baton::fs::create_dir_all(p);
    let _ = |p: String| baton::fs::remove_dir(p);
    let _ = |p: String| baton::fs::remove_dir_all(p);
    let _ = |a: String, b: String| baton::fs::rename(a, b);
    let _ = |p: String| baton::fs::metadata(p);
    let _ = |p: String| baton::fs::symlink_metadata(p);
    let _ = |p: String| baton::fs::read_dir(p);
    let _ = |a: String, b: String| baton::fs::copy(a, b);
    let _ = |a: String, b: String| baton::fs::hard_link(a, b);
    let _ = |a: String, b: String| baton::fs::symlink(a, b);
    let _ = |p: String| baton::fs::canonicalize(p);
    let _ = |p: String| baton::fs::read_to_string(p);
    let _ = |p: String| baton::fs::try_exists(p);
    let _ = |d: &mut baton::fs::ReadDir| {
        drop(d.next_entry());
    };
    let _: fn(&baton::fs::DirEntry) -> std::path::PathBuf = baton::fs::DirEntry::path;
    let _: fn(&baton::fs::Metadata) -> baton::fs::FileType = baton::fs::Metadata::file_type;
    let _ = |f: &baton::fs::File| {
        drop(f.metadata());
        drop(f.set_len(0));
        drop(f.sync_range(0, 0));
    };
    let _ = |a: &str| baton::net::TcpListener::bind(a);
    let _ = |l: &baton::net::TcpListener| {
        drop(l.accept());
    };
    let _ = |a: std::net::SocketAddr| baton::net::TcpStream::connect(a);
    let _ = |s: &baton::net::TcpStream| {
        drop(s.read(Vec::new()));
        drop(s.write(Vec::new()));
        drop(s.write_all(Vec::new()));
        drop(s.shutdown());
        drop(s.shutdown_with(std::net::Shutdown::Both));
    };
    let _ = baton::net::UnixStream::pair;
    let _ = |p: &str| baton::net::UnixListener::bind(p);
    let _ = |p: String| baton::net::UnixStream::connect(p);
    let _ = |s: &baton::net::UnixStream| {
        drop(s.read(Vec::new()));
        drop(s.write_all(Vec::new()));
        drop(s.shutdown());
        drop(s.shutdown_with(std::net::Shutdown::Both));
    };
    let _: fn(baton::Runtime, Duration) -> baton::ShutdownReport = baton::Runtime::shutdown_timeout;
    let _: fn(&baton::Runtime) -> baton::RuntimeMetrics = baton::Runtime::metrics;
    let _: Option<baton::Error> = None;
    // Types the reports and metrics expose, nameable without the lower crates.
    let _: Option<baton::TaskCounts> = None;
    let _: Option<baton::ExecutorSnapshot> = None;
    let _: Option<baton::WorkerShutdownReport> = None;
    let _: Option<baton::RuntimeId> = None;
}

#[test]
fn report_types_are_the_lower_crates() {
    assert_same_types! {
        baton::blocking::QuarantineBound => baton_cancel::QuarantineBound,
        baton::blocking::RejectReason => baton_completion::RejectReason,
        baton::TaskCounts => baton_task::TaskCounts,
        baton::ExecutorSnapshot => baton_completion::ExecutorSnapshot,
        baton::WorkerShutdownReport => baton_uring::WorkerShutdownReport,
        baton::RuntimeId => baton_completion::RuntimeId,
        baton::blocking::BlockingError => baton::BlockingError,
    }
}

#[test]
fn runtime_only_functions_fail_clearly_outside_a_runtime() {
    let err = baton::Handle::try_current().err();
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("Runtime::block_on"), "{message}");
}

#[test]
fn handle_is_clone_send_sync() {
    fn check<T: Clone + Send + Sync + 'static>() {}
    check::<baton::Handle>();
}

#[test]
fn join_set_api_resolves() {
    use baton::task::JoinSet;
    use std::future::Ready;
    // One line per method (SPEC §10, tokio's shape): stops compiling if one goes missing or
    // changes shape.
    let _: fn() -> JoinSet<u8> = JoinSet::new;
    let _: fn(&mut JoinSet<u8>, Ready<u8>) = JoinSet::spawn;
    let _: fn(&mut JoinSet<u8>, Ready<u8>, &baton::Handle) = JoinSet::spawn_on;
    let _: fn(&mut JoinSet<u8>, Ready<u8>) = JoinSet::spawn_local;
    async fn join_next(set: &mut JoinSet<u8>) -> Option<Result<u8, baton::JoinError>> {
        set.join_next().await
    }
    let _ = join_next;
    let _: fn(&mut JoinSet<u8>) -> Option<Result<u8, baton::JoinError>> = JoinSet::try_join_next;
    let _: fn(&mut JoinSet<u8>) = JoinSet::abort_all;
    let _: fn(&mut JoinSet<u8>) = JoinSet::detach_all;
    let _ = |set: &mut JoinSet<u8>| drop(set.shutdown());
    let _: fn(&JoinSet<u8>) -> usize = JoinSet::len;
    let _: fn(&JoinSet<u8>) -> bool = JoinSet::is_empty;
    fn check<T: Send + Sync + Default + std::fmt::Debug>() {}
    check::<JoinSet<u8>>();
}

/// `baton::test` and `baton::main` resolve to baton-macros' attributes and expand to code
/// that reaches the facade as `::baton` (this test crate depends on it under that name).
#[cfg(feature = "macros")]
#[baton::test(ring_entries = 16, blocking_threads = 1, workers = 1)]
async fn macros_resolve_and_expand() {
    assert!(baton::Handle::try_current().is_ok());
}

#[test]
fn io_cursor_is_stds_and_is_a_stream() {
    assert_same_types! {
        baton::io::Cursor<Vec<u8>> => std::io::Cursor<Vec<u8>>,
    }
    fn stream<T: baton::io::AsyncRead + baton::io::AsyncWrite>() {}
    stream::<baton::io::Cursor<Vec<u8>>>();
}
