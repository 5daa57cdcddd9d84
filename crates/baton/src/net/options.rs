//! Socket options, readable and settable on every socket type of this module; `socket2` does
//! the `getsockopt`/`setsockopt` calls (they are synchronous and never block). Each macro
//! generates the methods, documented once here, for the types that carry them.

/// Options of every IP socket: address reuse, buffer sizes, TTL, IPv6-only.
macro_rules! ip_options {
    ($ty:ty) => {
        impl $ty {
            /// Whether `SO_REUSEADDR` is set (listeners bound by this crate set it, as `std`
            /// and tokio do).
            ///
            /// # Errors
            ///
            /// The OS error of `getsockopt(2)`.
            pub fn reuseaddr(&self) -> std::io::Result<bool> {
                socket2::SockRef::from(self).reuse_address()
            }

            /// Sets `SO_REUSEADDR`: a later `bind` to this address succeeds while connections
            /// of an earlier socket linger in `TIME_WAIT`. Set it before `bind`.
            ///
            /// # Errors
            ///
            /// The OS error of `setsockopt(2)`.
            pub fn set_reuseaddr(&self, reuseaddr: bool) -> std::io::Result<()> {
                socket2::SockRef::from(self).set_reuse_address(reuseaddr)
            }

            /// Whether `SO_REUSEPORT` is set.
            ///
            /// # Errors
            ///
            /// The OS error of `getsockopt(2)`.
            pub fn reuseport(&self) -> std::io::Result<bool> {
                socket2::SockRef::from(self).reuse_port()
            }

            /// Sets `SO_REUSEPORT`: several sockets (of one user) may bind the same address
            /// and the kernel spreads connections or datagrams across them. Set it before
            /// `bind`, on every one of them.
            ///
            /// # Errors
            ///
            /// The OS error of `setsockopt(2)`.
            pub fn set_reuseport(&self, reuseport: bool) -> std::io::Result<()> {
                socket2::SockRef::from(self).set_reuse_port(reuseport)
            }

            /// The send buffer size (`SO_SNDBUF`), as the kernel reports it (Linux doubles the
            /// value set, for its bookkeeping).
            ///
            /// # Errors
            ///
            /// The OS error of `getsockopt(2)`.
            pub fn send_buffer_size(&self) -> std::io::Result<u32> {
                socket2::SockRef::from(self)
                    .send_buffer_size()
                    .map(|size| u32::try_from(size).unwrap_or(u32::MAX))
            }

            /// Sets the send buffer size (`SO_SNDBUF`).
            ///
            /// # Errors
            ///
            /// The OS error of `setsockopt(2)`.
            pub fn set_send_buffer_size(&self, size: u32) -> std::io::Result<()> {
                socket2::SockRef::from(self).set_send_buffer_size(size as usize)
            }

            /// The receive buffer size (`SO_RCVBUF`), as the kernel reports it.
            ///
            /// # Errors
            ///
            /// The OS error of `getsockopt(2)`.
            pub fn recv_buffer_size(&self) -> std::io::Result<u32> {
                socket2::SockRef::from(self)
                    .recv_buffer_size()
                    .map(|size| u32::try_from(size).unwrap_or(u32::MAX))
            }

            /// Sets the receive buffer size (`SO_RCVBUF`).
            ///
            /// # Errors
            ///
            /// The OS error of `setsockopt(2)`.
            pub fn set_recv_buffer_size(&self, size: u32) -> std::io::Result<()> {
                socket2::SockRef::from(self).set_recv_buffer_size(size as usize)
            }

            /// The time-to-live of outgoing IPv4 packets (`IP_TTL`), as `std`'s `ttl`.
            ///
            /// # Errors
            ///
            /// The OS error of `getsockopt(2)`.
            pub fn ttl(&self) -> std::io::Result<u32> {
                socket2::SockRef::from(self).ttl_v4()
            }

            /// Sets the time-to-live of outgoing IPv4 packets (`IP_TTL`).
            ///
            /// # Errors
            ///
            /// The OS error of `setsockopt(2)` (`InvalidInput` for a TTL above 255).
            pub fn set_ttl(&self, ttl: u32) -> std::io::Result<()> {
                socket2::SockRef::from(self).set_ttl_v4(ttl)
            }

            /// Whether an IPv6 socket is restricted to IPv6 (`IPV6_V6ONLY`).
            ///
            /// # Errors
            ///
            /// The OS error of `getsockopt(2)` (an IPv4 socket has no such option).
            pub fn only_v6(&self) -> std::io::Result<bool> {
                socket2::SockRef::from(self).only_v6()
            }

            /// Restricts an IPv6 socket to IPv6 (`IPV6_V6ONLY`); otherwise it also serves IPv4
            /// peers as mapped addresses. Set it before `bind`.
            ///
            /// # Errors
            ///
            /// The OS error of `setsockopt(2)` (an IPv4 socket has no such option).
            pub fn set_only_v6(&self, only_v6: bool) -> std::io::Result<()> {
                socket2::SockRef::from(self).set_only_v6(only_v6)
            }
        }
    };
}

/// Options of TCP sockets (listeners pass them on to the connections they accept).
macro_rules! tcp_options {
    ($ty:ty) => {
        impl $ty {
            /// Whether `TCP_NODELAY` is set (Nagle's algorithm off).
            ///
            /// # Errors
            ///
            /// The OS error of `getsockopt(2)`.
            pub fn nodelay(&self) -> std::io::Result<bool> {
                socket2::SockRef::from(self).tcp_nodelay()
            }

            /// Sets `TCP_NODELAY`: small writes go out at once instead of waiting to be
            /// coalesced (Nagle's algorithm off).
            ///
            /// # Errors
            ///
            /// The OS error of `setsockopt(2)`.
            pub fn set_nodelay(&self, nodelay: bool) -> std::io::Result<()> {
                socket2::SockRef::from(self).set_tcp_nodelay(nodelay)
            }

            /// Whether `SO_KEEPALIVE` is set.
            ///
            /// # Errors
            ///
            /// The OS error of `getsockopt(2)`.
            pub fn keepalive(&self) -> std::io::Result<bool> {
                socket2::SockRef::from(self).keepalive()
            }

            /// Sets `SO_KEEPALIVE`: the kernel probes an idle connection and fails it once the
            /// peer stops answering.
            ///
            /// # Errors
            ///
            /// The OS error of `setsockopt(2)`.
            pub fn set_keepalive(&self, keepalive: bool) -> std::io::Result<()> {
                socket2::SockRef::from(self).set_keepalive(keepalive)
            }

            /// The `SO_LINGER` timeout, `None` when off.
            ///
            /// # Errors
            ///
            /// The OS error of `getsockopt(2)`.
            pub fn linger(&self) -> std::io::Result<Option<std::time::Duration>> {
                socket2::SockRef::from(self).linger()
            }

            /// Sets `SO_LINGER`: with `Some(d)`, closing the socket waits up to `d` for unsent
            /// data (`Some(ZERO)`: close resets the connection at once); `None` closes in the
            /// background. A nonzero linger makes the `close(2)` that ends the socket block
            /// the thread dropping it (possibly the worker) for up to `d`: prefer
            /// `shutdown(Write)` and a read to the end for a graceful close.
            ///
            /// # Errors
            ///
            /// The OS error of `setsockopt(2)`.
            pub fn set_linger(&self, linger: Option<std::time::Duration>) -> std::io::Result<()> {
                socket2::SockRef::from(self).set_linger(linger)
            }
        }
    };
}

pub(crate) use {ip_options, tcp_options};
