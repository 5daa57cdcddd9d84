//! The raw ring's TCP echo server: accept, receive and send as SQEs, one request in flight per
//! connection plus one accept until every expected connection has arrived.
//!
//! `user_data` layout (rule R2 of the parent module): bits 0–1 are the operation
//! ([`ACCEPT`], [`RECV`], [`SEND`]), the remaining bits the connection's index in `conns`.
//! A connection has at most one request in flight, so its buffer is never shared by two.

use std::io;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};

use io_uring::{IoUring, opcode, squeue, types};

use super::{completion_result, submit_and_wait};
use crate::jobs::{EchoJob, SERVER_BUFFER};
use crate::sample::Outcome;

/// Operation tag: accept on the listener.
const ACCEPT: u64 = 0;
/// Operation tag: receive into the connection's buffer.
const RECV: u64 = 1;
/// Operation tag: send the unsent rest of the connection's buffer.
const SEND: u64 = 2;

/// One accepted connection and the bytes it is echoing.
#[derive(Debug)]
struct Conn {
    /// Closed (dropped) once the client ends the stream and no request is in flight.
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    /// Bytes received and not yet fully sent back.
    filled: usize,
    /// Bytes of `filled` already sent.
    sent: usize,
}

/// Serves `job` on the ring and returns the client's sample.
pub(super) fn serve(ring: &mut IoUring, job: &EchoJob) -> Outcome {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let client = job.spawn_client(listener.local_addr()?)?;
    let mut conns: Vec<Conn> = Vec::with_capacity(job.connections);
    match run(ring, &listener, job.connections, &mut conns) {
        Ok(()) => client.join(),
        Err(e) => {
            // The client fails on its own once the server's sockets close (rule G5 of the client).
            drop(conns);
            // Joining also makes sure no client thread outlives a failed run.
            let _ = client.join();
            Err(e.into())
        }
    }
}

fn user_data(index: usize, op: u64) -> u64 {
    ((index as u64) << 2) | op
}

/// The SQE that continues connection `index`: a receive when nothing is pending, otherwise a
/// send of the unsent rest.
fn next_entry(conns: &mut [Conn], index: usize) -> Option<squeue::Entry> {
    let conn = &mut conns[index];
    let fd = types::Fd(conn.stream.as_ref()?.as_raw_fd());
    Some(if conn.sent < conn.filled {
        let rest = &conn.buf[conn.sent..conn.filled];
        opcode::Send::new(fd, rest.as_ptr(), rest.len() as u32)
            .build()
            .user_data(user_data(index, SEND))
    } else {
        opcode::Recv::new(fd, conn.buf.as_mut_ptr(), conn.buf.len() as u32)
            .build()
            .user_data(user_data(index, RECV))
    })
}

fn run(
    ring: &mut IoUring,
    listener: &TcpListener,
    expected: usize,
    conns: &mut Vec<Conn>,
) -> io::Result<()> {
    let accept = opcode::Accept::new(
        types::Fd(listener.as_raw_fd()),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    )
    .flags(libc::SOCK_CLOEXEC)
    .build()
    .user_data(user_data(0, ACCEPT));
    let (submitter, mut sq, mut cq) = ring.split();
    let mut in_flight = 0_usize;
    let mut failure: Option<io::Error> = None;
    let push = |sq: &mut squeue::SubmissionQueue<'_>,
                entry: &squeue::Entry,
                failure: &mut Option<io::Error>,
                in_flight: &mut usize| {
        // SAFETY: rule R1 of the parent module — every buffer an SQE points at belongs to a
        // `Conn` in `conns`, whose heap buffer neither moves nor drops until this function
        // returns, and it returns only once `in_flight` is zero; the accept SQE points at no
        // memory. A connection's socket is closed only after its last completion.
        match unsafe { sq.push(entry) } {
            Ok(()) => *in_flight += 1,
            Err(_) => {
                failure.get_or_insert(io::Error::other("submission queue full"));
            }
        }
    };
    if expected > 0 {
        push(&mut sq, &accept, &mut failure, &mut in_flight);
    }
    while in_flight > 0 {
        sq.sync();
        if let Err(e) = submit_and_wait(&submitter, 1) {
            // Buffers may still be in the kernel's hands: leak them (R1).
            std::mem::forget(std::mem::take(conns));
            return Err(e);
        }
        cq.sync();
        for cqe in &mut cq {
            in_flight -= 1;
            let index = (cqe.user_data() >> 2) as usize;
            let result = completion_result(cqe.result());
            match (cqe.user_data() & 3, result) {
                (ACCEPT, Ok(fd)) => {
                    // SAFETY: `fd` was just created by the kernel's accept for this process
                    // and nothing else owns it, so the stream may take ownership.
                    let stream = unsafe { TcpStream::from_raw_fd(fd as i32) };
                    if let Err(e) = stream.set_nodelay(true) {
                        failure.get_or_insert(e);
                    }
                    conns.push(Conn {
                        stream: Some(stream),
                        buf: vec![0; SERVER_BUFFER],
                        filled: 0,
                        sent: 0,
                    });
                    let last = conns.len() - 1;
                    if let Some(entry) = next_entry(conns, last) {
                        push(&mut sq, &entry, &mut failure, &mut in_flight);
                    }
                    if conns.len() < expected && failure.is_none() {
                        push(&mut sq, &accept, &mut failure, &mut in_flight);
                    }
                }
                (RECV, Ok(0)) => conns[index].stream = None,
                (RECV, Ok(n)) => {
                    conns[index].filled = n;
                    conns[index].sent = 0;
                }
                (SEND, Ok(n)) => conns[index].sent += n,
                (op, Err(e)) => {
                    failure.get_or_insert(e);
                    if op != ACCEPT {
                        conns[index].stream = None;
                    }
                }
                (op, Ok(_)) => {
                    failure.get_or_insert(io::Error::other(format!("unknown operation tag {op}")));
                }
            }
            let op = cqe.user_data() & 3;
            if (op == RECV || op == SEND)
                && failure.is_none()
                && let Some(entry) = next_entry(conns, index)
            {
                push(&mut sq, &entry, &mut failure, &mut in_flight);
            }
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
