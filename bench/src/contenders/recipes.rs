//! The workload recipes every async contender follows the same way (K4, K5), written once as
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

/// The four workloads every async contender with a `self.rt.block_on` runs the same way;
/// expands to those `Contender` methods:
///
/// * `tcp_echo` (K5): the listener `$bind` (bound to `127.0.0.1:0`) gets the job's client,
///   accepts exactly `job.connections` connections and spawns `$serve(stream)` for each with
///   `$echo_spawn`; `$conn_joined` turns one awaited connection handle `$conn` into
///   `io::Result<()>`; the client's join is the sample.
/// * `spawn_join`: spawns with `$spawn`; `$joined` turns the handle `$task` into the future's
///   `io::Result`.
/// * `blocking_jobs`: likewise with `$blocking` and `$job_handle`.
/// * `block_on_round_trip`: the same for every runtime.
macro_rules! common_workloads {
    (
        echo: $bind:expr => $echo_spawn:path, $serve:path => |$conn:ident| $conn_joined:expr,
        spawn: $spawn:path => |$task:ident| $joined:expr,
        blocking: $blocking:path => |$job_handle:ident| $job_joined:expr $(,)?
    ) => {
        fn tcp_echo(&mut self, job: &$crate::jobs::EchoJob) -> $crate::sample::Outcome {
            let client = self.rt.block_on(async {
                let listener = $bind;
                let client = job.spawn_client(listener.local_addr()?)?;
                let mut conns = Vec::with_capacity(job.connections);
                for _ in 0..job.connections {
                    let (stream, _) = listener.accept().await?;
                    conns.push($echo_spawn($serve(stream)));
                }
                for $conn in conns {
                    $conn_joined?;
                }
                Ok::<_, ::std::io::Error>(client)
            })?;
            client.join()
        }

        fn spawn_join(&mut self, job: &$crate::jobs::CountJob) -> $crate::sample::Outcome {
            let join = |i| {
                let $task = $spawn(async move { i });
                async move { $joined }
            };
            Ok(self.rt.block_on(job.join_batches("joined tasks", join))?)
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

/// Why a runtime whose operation futures are bound to its own thread cannot run the
/// foreign-poll workload (K3).
pub(crate) const THREAD_BOUND: &str =
    "operation futures are !Send, bound to the runtime thread's thread-local driver";
