//! The workload recipes every async contender follows the same way (K4, K5, K6), written once as
//! macros because each runtime's spawn, join-handle and file types differ.
//!
//! Each macro expands inside a contender's `impl Contender` or inside its `block_on` future, so
//! the runtime's own calls stay visible at the call site: a recipe only fixes the shape around
//! them (lanes, meter, accept loop, join batches).

/// The body of a `file_io` future (K4): `job.depth` lanes spawned with `$spawn`, each sharing a
/// clone of `$file` and running `job.lane_ops(lane)` operations; `$step` does one operation with
/// `$buf` (the lane's reused buffer) at `$offset` and `$op` (the job's [`FileOp`]), and must
/// leave the buffer back in `$buf`. `$joined` turns one awaited lane handle `$lane` into
/// `io::Result<()>`. Evaluates to `io::Result<Sample>` timed over the lanes only.
///
/// [`FileOp`]: crate::jobs::FileOp
macro_rules! file_lanes {
    (
        $job:expr, $file:expr, $spawn:path,
        |$shared:ident, $op:ident, $buf:ident, $offset:ident| $step:block,
        |$lane:ident| $joined:expr $(,)?
    ) => {{
        let mut lanes = Vec::with_capacity($job.depth);
        let meter = $crate::sample::Meter::start();
        for lane in 0..$job.depth {
            let $shared = ::std::clone::Clone::clone(&$file);
            let (ops, mut offsets, mut $buf, $op) = (
                $job.lane_ops(lane),
                $job.lane_offsets(lane),
                $job.buffer(),
                $job.op,
            );
            lanes.push($spawn(async move {
                for _ in 0..ops {
                    let $offset = offsets.next_offset();
                    $step
                }
                Ok::<(), ::std::io::Error>(())
            }));
        }
        for $lane in lanes {
            $joined?;
        }
        Ok::<$crate::sample::Sample, ::std::io::Error>(meter.finish($job.ops))
    }};
}

/// The `file_io` method (K4) of a contender with a `self.rt.block_on`, its own `OpenOptions`
/// (`$options`) and owned-buffer `read_at` / `write_at` methods on its file: opens the job's file
/// read-write, shares it through `$share` (`Arc` or `Rc`) across the [`file_lanes!`] spawned
/// with `$spawn`, and checks every transfer under `$label` (K2). `submit:` names the call a
/// runtime needs after `write_at(..)` to start the write.
macro_rules! owned_file_io {
    (
        $options:ty, $share:ident, $spawn:path, $label:literal,
        |$lane:ident| $joined:expr $(, submit: $submit:ident)? $(,)?
    ) => {
        fn file_io(&mut self, job: &$crate::jobs::FileJob<'_>) -> $crate::sample::Outcome {
            let sample = self.rt.block_on(async {
                let file = <$options>::new()
                    .read(true)
                    .write(true)
                    .open(job.file.path())
                    .await?;
                let file = $share::new(file);
                file_lanes!(
                    job,
                    file,
                    $spawn,
                    |file, op, buf, offset| {
                        let (result, back) = match op {
                            $crate::jobs::FileOp::Read => file.read_at(buf, offset).await,
                            $crate::jobs::FileOp::Write => {
                                file.write_at(buf, offset)$(.$submit())?.await
                            }
                        };
                        buf = back;
                        $crate::sample::expect_len($label, result?, $crate::fixture::BLOCK)?;
                    },
                    |$lane| $joined,
                )
            })?;
            Ok(sample)
        }
    };
}

/// The echo connection of a runtime with owned-buffer `read` and `write_all` on its stream:
/// expands to `async fn echo(stream: $stream) -> io::Result<()>` (`mut stream` for a runtime
/// whose stream methods take `&mut self`), which echoes until end-of-stream with one
/// `SERVER_BUFFER`-capacity buffer, reused.
macro_rules! owned_buffer_echo {
    (mut $stream:ident: $ty:ty) => {
        owned_buffer_echo!(@fn [mut] $stream: $ty);
    };
    ($stream:ident: $ty:ty) => {
        owned_buffer_echo!(@fn [] $stream: $ty);
    };
    (@fn [$($mutable:tt)?] $stream:ident: $ty:ty) => {
        async fn echo($($mutable)? $stream: $ty) -> ::std::io::Result<()> {
            $stream.set_nodelay(true)?;
            let mut buf = Vec::with_capacity($crate::jobs::SERVER_BUFFER);
            loop {
                // A read fills the buffer from its beginning and leaves its length at the
                // count, so the same buffer goes straight back out through `write_all` (which
                // sends exactly those bytes), then into the next read.
                let (read, back) = $stream.read(buf).await;
                if read? == 0 {
                    return Ok(());
                }
                let (written, back) = $stream.write_all(back).await;
                written?;
                buf = back;
            }
        }
    };
}

/// Inside an async block that returns `io::Result`: accepts exactly `$count` connections on
/// `$listener` (K5, K6) and collects `$spawned`, evaluated with each accepted `$stream`.
macro_rules! accept_each {
    ($listener:expr, $count:expr, |$stream:ident| $spawned:expr) => {{
        let mut handles = Vec::with_capacity($count);
        for _ in 0..$count {
            let ($stream, _) = $listener.accept().await?;
            handles.push($spawned);
        }
        handles
    }};
}

/// The `tcp_echo` method (K5) of a contender with a `self.rt.block_on`: the listener `$bind`
/// (bound to `127.0.0.1:0`) gets the job's client, accepts exactly `job.connections`
/// connections and spawns `$serve(stream)` for each with `$spawn`; `$conn_joined` turns one
/// awaited connection handle `$conn` into `io::Result<()>`; the client's join is the sample.
macro_rules! tcp_echo {
    ($bind:expr => $spawn:path, $serve:path => |$conn:ident| $conn_joined:expr $(,)?) => {
        fn tcp_echo(&mut self, job: &$crate::jobs::EchoJob) -> $crate::sample::Outcome {
            let client = self.rt.block_on(async {
                let listener = $bind;
                let client = job.spawn_client(listener.local_addr()?)?;
                let conns = accept_each!(listener, job.connections, |stream| {
                    $spawn($serve(stream))
                });
                for $conn in conns {
                    $conn_joined?;
                }
                Ok::<_, ::std::io::Error>(client)
            })?;
            client.join()
        }
    };
}

/// The `http` method (K6) of a contender with a `self.rt.block_on`: the listener `$bind`
/// (bound to `127.0.0.1:0`) gets the job's load generator, accepts exactly `job.connections`
/// connections, sets `TCP_NODELAY` on each accepted `$stream` and serves it with hyper's http1
/// builder at its defaults (keep-alive on; no timer, so no header-read timeout is armed) over
/// `$io`, the runtime's hyper glue around `$stream`, in a task spawned with `$spawn`.
/// `$conn_joined` turns an awaited connection handle `$conn` into `Result<(), impl Display>`;
/// every error is counted (rule Z4 of [`crate::http_client`]) and fails the run.
macro_rules! hyper_http {
    ($bind:expr => $spawn:path, |$stream:ident| $io:expr, |$conn:ident| $conn_joined:expr $(,)?) => {
        fn http(&mut self, job: &$crate::jobs::HttpJob) -> $crate::sample::Outcome {
            let (client, errors) = self.rt.block_on(async {
                let listener = $bind;
                let client = job.spawn_client(listener.local_addr()?)?;
                let conns = accept_each!(listener, job.connections, |$stream| {
                    $stream.set_nodelay(true)?;
                    let service = $crate::contenders::hyper_service::Responder::new(job);
                    let connection =
                        ::hyper::server::conn::http1::Builder::new().serve_connection($io, service);
                    $spawn(connection)
                });
                let mut errors = $crate::http_client::ConnectionErrors::default();
                for $conn in conns {
                    errors.check("serving a connection", $conn_joined);
                }
                Ok::<_, ::std::io::Error>((client, errors))
            })?;
            client.join(errors)
        }
    };
}

/// The four workloads every async contender with a `self.rt.block_on` runs the same way;
/// expands to those `Contender` methods:
///
/// * `tcp_echo`: [`tcp_echo!`] with `$bind`, `$echo_spawn`, `$serve` and `$conn_joined`.
/// * `spawn_join`: spawns with `$spawn`; `$joined` turns the handle `$task` into the future's
///   `io::Result`.
/// * `spawn_local_join`: likewise with the runtime's thread-local spawn `$local` (`!Send` tasks,
///   never moved off this thread), the batches run inside `$within` when it needs one (tokio's
///   `LocalSet`).
/// * `blocking_jobs`: likewise with `$blocking` and `$job_handle`.
/// * `block_on_round_trip`: the same for every runtime.
macro_rules! common_workloads {
    (
        echo: $bind:expr => $echo_spawn:path, $serve:path => |$conn:ident| $conn_joined:expr,
        spawn: $spawn:path => |$task:ident| $joined:expr,
        local: $local:path $(, within |$batches:ident| $within:expr)?
            => |$local_task:ident| $local_joined:expr,
        blocking: $blocking:path => |$job_handle:ident| $job_joined:expr $(,)?
    ) => {
        tcp_echo!($bind => $echo_spawn, $serve => |$conn| $conn_joined);

        fn spawn_join(&mut self, job: &$crate::jobs::CountJob) -> $crate::sample::Outcome {
            let join = |i| {
                let $task = $spawn(async move { i });
                async move { $joined }
            };
            Ok(self.rt.block_on(job.join_batches("joined tasks", join))?)
        }

        fn spawn_local_join(&mut self, job: &$crate::jobs::CountJob) -> $crate::sample::Outcome {
            let join = |i| {
                let $local_task = $local(async move { i });
                async move { $local_joined }
            };
            let batches = job.join_batches("joined local tasks", join);
            $(let $batches = batches; let batches = $within;)?
            Ok(self.rt.block_on(batches)?)
        }

        fn block_on_round_trip(&mut self, job: &$crate::jobs::CountJob) -> $crate::sample::Outcome {
            Ok(job.block_on_loop(|i| self.rt.block_on(async move { std::hint::black_box(i) }))?)
        }

        fn blocking_jobs(&mut self, job: &$crate::jobs::CountJob) -> $crate::sample::Outcome {
            let join = |i| {
                let $job_handle = $blocking(move || i);
                async move { $job_joined }
            };
            Ok(self
                .rt
                .block_on(job.join_batches("joined blocking jobs", join))?)
        }
    };
}

/// The echo connection of a stream with tokio's poll-based `AsyncRead`/`AsyncWrite` (tokio's
/// own sockets, Baton's through `Compat`): echoes until end-of-stream with one
/// `SERVER_BUFFER`-byte buffer, reused.
pub(crate) async fn tokio_io_echo(
    mut stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0_u8; crate::jobs::SERVER_BUFFER];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        stream.write_all(&buf[..n]).await?;
    }
}

/// A joined connection task's outcome (the join's error or the connection's) as one result.
pub(crate) fn joined<E: std::fmt::Display, F: std::fmt::Display>(
    join: Result<Result<(), E>, F>,
) -> Result<(), String> {
    match join {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(error) => Err(format!("the connection task failed: {error}")),
    }
}

/// Why a runtime whose operation futures are bound to its own thread cannot run the
/// foreign-poll workload (K3).
pub(crate) const THREAD_BOUND: &str =
    "operation futures are !Send, bound to the runtime thread's thread-local driver";

/// `Contender` methods that answer `NoSample::Unsupported($reason)` (rule K3), one per name
/// listed (any of the trait's workload methods), for a column that measures only some rows.
macro_rules! unsupported {
    ($reason:expr => $($method:ident),+ $(,)?) => {
        $(unsupported!(@one $method, $reason);)+
    };
    (@one file_io, $reason:expr) => {
        unsupported!(@fn file_io, $crate::jobs::FileJob<'_>, $reason);
    };
    (@one tcp_echo, $reason:expr) => {
        unsupported!(@fn tcp_echo, $crate::jobs::EchoJob, $reason);
    };
    (@one foreign_poll, $reason:expr) => {
        unsupported!(@fn foreign_poll, $crate::jobs::ForeignJob<'_>, $reason);
    };
    (@one http, $reason:expr) => {
        unsupported!(@fn http, $crate::jobs::HttpJob, $reason);
    };
    (@one $count_method:ident, $reason:expr) => {
        unsupported!(@fn $count_method, $crate::jobs::CountJob, $reason);
    };
    (@fn $method:ident, $job:ty, $reason:expr) => {
        fn $method(&mut self, _job: &$job) -> $crate::sample::Outcome {
            Err($crate::sample::NoSample::Unsupported($reason))
        }
    };
}
