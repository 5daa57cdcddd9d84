//! Checks that the facade's re-exports resolve to the lower crates' items (STYLE 9), so the
//! names applications use (SPEC §6) stay wired to the real implementations.

use std::any::TypeId;

#[test]
fn task_items_are_the_schedulers() {
    assert_eq!(
        TypeId::of::<baton::JoinHandle<u8>>(),
        TypeId::of::<baton_task::JoinHandle<u8>>()
    );
    assert_eq!(
        TypeId::of::<baton::JoinError>(),
        TypeId::of::<baton_task::JoinError>()
    );
    assert_eq!(
        TypeId::of::<baton::task::YieldNow>(),
        TypeId::of::<baton_task::YieldNow>()
    );
    let _: fn() -> baton::task::YieldNow = baton::task::yield_now;
    let _: fn(std::future::Ready<()>) -> baton::JoinHandle<()> = baton::spawn;
    let _: fn(std::future::Ready<()>) -> baton::JoinHandle<()> = baton::spawn_local;
}

#[test]
fn op_is_the_drivers() {
    assert_eq!(
        TypeId::of::<baton::Op<std::io::Result<()>>>(),
        TypeId::of::<baton_uring::Op<std::io::Result<()>>>()
    );
}

#[test]
fn time_instant_is_web_times() {
    assert_eq!(
        TypeId::of::<baton::time::Instant>(),
        TypeId::of::<web_time::Instant>()
    );
}

#[test]
fn spec_surface_names_resolve() {
    // Each line names an item of SPEC §6; this test fails to compile if one goes missing.
    let _ = baton::Runtime::new;
    let _ = baton::Builder::new;
    let _ = baton::Handle::current;
    let _ = baton::Handle::try_current;
    let _ = baton::time::sleep;
    let _ = baton::time::sleep_until;
    let _ = baton::time::timeout::<std::future::Ready<()>>;
    let _ = baton::blocking::spawn_blocking::<fn() -> u8, u8>;
    let _ = baton::blocking::spawn_quarantined::<fn() -> u8, u8>;
    let _ = baton::fs::OpenOptions::new;
    let _ = |p: String| baton::fs::read(p);
    let _ = |p: String| baton::fs::write(p, b"");
    let _ = |p: String| baton::fs::remove_file(p);
    let _ = |a: &str| baton::net::TcpListener::bind(a);
    let _ = |a: std::net::SocketAddr| baton::net::TcpStream::connect(a);
    let _ = baton::net::UnixStream::pair;
    let _ = |p: &str| baton::net::UnixListener::bind(p);
    let _ = |p: String| baton::net::UnixStream::connect(p);
    let _: Option<&baton::Error> = None;
    let _: Option<baton::time::Elapsed> = None;
    let _: Option<baton::ShutdownReport> = None;
    let _: Option<baton::RuntimeMetrics> = None;
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
