//! Name resolution off the worker: [`ToSocketAddrs`], [`lookup_host`], and the runtime's
//! resolver ([`Builder::resolver`](crate::Builder::resolver)).
//!
//! An IP literal (`"127.0.0.1:80"`, `("::1", 80)`, a `SocketAddr`) is parsed in place, with no
//! job and no wait. A host name is resolved on the blocking pool — `getaddrinfo(3)` blocks,
//! sometimes for seconds — so a slow resolver never stalls the worker's other tasks.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::sync::Arc;

use crate::context;

/// What a resolver does: a host name and a port to the addresses to try, in order.
type ResolveFn = dyn Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync;

/// The runtime's resolver: the system's (`getaddrinfo`, through `std`) unless the builder
/// installed another. It always runs on the blocking pool.
#[derive(Clone, Default)]
pub(crate) struct Resolver {
    custom: Option<Arc<ResolveFn>>,
}

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.custom.is_some() {
            "Resolver(custom)"
        } else {
            "Resolver(system)"
        })
    }
}

impl Resolver {
    pub(crate) fn custom(resolve: Arc<ResolveFn>) -> Resolver {
        Resolver {
            custom: Some(resolve),
        }
    }

    /// Resolves on the calling thread (a pool thread).
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        match &self.custom {
            Some(resolve) => resolve(host, port),
            None => std::net::ToSocketAddrs::to_socket_addrs(&(host, port)).map(Iterator::collect),
        }
    }
}

/// What an address argument needs: nothing (its addresses are known), or a lookup.
#[derive(Debug)]
pub(crate) enum Lookup {
    Ready(io::Result<Vec<SocketAddr>>),
    Host { host: String, port: u16 },
}

/// Something that names socket addresses: an address, an `(ip, port)` pair, a slice of
/// addresses, or a `"host:port"` string / `(host, port)` pair whose host is resolved off the
/// worker (an IP literal is parsed in place). Sealed; implemented for the same types as
/// `std::net::ToSocketAddrs`.
pub trait ToSocketAddrs: sealed::Sealed {}

pub(crate) mod sealed {
    /// How the crate reads an address argument. Sealed: this module is private.
    pub trait Sealed {
        /// The addresses, or the host name to look up.
        #[allow(private_interfaces)]
        fn lookup(&self) -> super::Lookup;
    }
}

macro_rules! ready_addrs {
    ($($ty:ty => |$this:ident| $addrs:expr;)*) => {$(
        impl ToSocketAddrs for $ty {}
        #[allow(private_interfaces)]
        impl sealed::Sealed for $ty {
            fn lookup(&self) -> Lookup {
                let $this = self;
                Lookup::Ready(Ok($addrs))
            }
        }
    )*};
}

ready_addrs! {
    SocketAddr => |a| vec![*a];
    SocketAddrV4 => |a| vec![SocketAddr::V4(*a)];
    SocketAddrV6 => |a| vec![SocketAddr::V6(*a)];
    (IpAddr, u16) => |a| vec![SocketAddr::new(a.0, a.1)];
    (Ipv4Addr, u16) => |a| vec![SocketAddr::new(IpAddr::V4(a.0), a.1)];
    (Ipv6Addr, u16) => |a| vec![SocketAddr::new(IpAddr::V6(a.0), a.1)];
    [SocketAddr] => |a| a.to_vec();
    Vec<SocketAddr> => |a| a.clone();
}

impl ToSocketAddrs for (&str, u16) {}
#[allow(private_interfaces)]
impl sealed::Sealed for (&str, u16) {
    fn lookup(&self) -> Lookup {
        host_port(self.0, self.1)
    }
}

impl ToSocketAddrs for (String, u16) {}
#[allow(private_interfaces)]
impl sealed::Sealed for (String, u16) {
    fn lookup(&self) -> Lookup {
        host_port(&self.0, self.1)
    }
}

impl ToSocketAddrs for str {}
#[allow(private_interfaces)]
impl sealed::Sealed for str {
    fn lookup(&self) -> Lookup {
        if let Ok(addr) = self.parse::<SocketAddr>() {
            return Lookup::Ready(Ok(vec![addr]));
        }
        // As std: the port follows the last colon.
        let Some((host, port)) = self.rsplit_once(':') else {
            return invalid("invalid socket address: expected \"host:port\"");
        };
        let Ok(port) = port.parse::<u16>() else {
            return invalid("invalid port value");
        };
        host_port(host, port)
    }
}

impl ToSocketAddrs for String {}
#[allow(private_interfaces)]
impl sealed::Sealed for String {
    fn lookup(&self) -> Lookup {
        self.as_str().lookup()
    }
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
#[allow(private_interfaces)]
impl<T: ToSocketAddrs + ?Sized> sealed::Sealed for &T {
    fn lookup(&self) -> Lookup {
        (**self).lookup()
    }
}

fn invalid(message: &'static str) -> Lookup {
    Lookup::Ready(Err(io::Error::new(io::ErrorKind::InvalidInput, message)))
}

/// An IP literal host is parsed in place (as std, an IPv6 literal without brackets); any other
/// host is looked up.
fn host_port(host: &str, port: u16) -> Lookup {
    match host.parse::<IpAddr>() {
        Ok(ip) => Lookup::Ready(Ok(vec![SocketAddr::new(ip, port)])),
        Err(_) => Lookup::Host {
            host: host.to_owned(),
            port,
        },
    }
}

/// The addresses `addr` names, resolving a host name on the current runtime's blocking pool.
pub(crate) fn resolve<A: ToSocketAddrs + ?Sized>(
    addr: &A,
    function: &'static str,
) -> impl Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'static {
    let lookup = addr.lookup();
    async move {
        let (host, port) = match lookup {
            Lookup::Ready(addrs) => return addrs,
            Lookup::Host { host, port } => (host, port),
        };
        let handle = context::require(function)?;
        let resolver = handle.resolver();
        match handle
            .spawn_blocking(move || resolver.resolve(&host, port))
            .await
        {
            Ok(addrs) => addrs,
            Err(err) => Err(err.into_io_for(function)),
        }
    }
}

/// Resolves `host` (a `"host:port"` string, an `(host, port)` pair, an address) to the socket
/// addresses it names, in the resolver's order. A host name is looked up on the blocking pool
/// (with the runtime's [resolver](crate::Builder::resolver)), never on the worker; an IP
/// literal is parsed in place.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// let addrs: Vec<_> = rt.block_on(async { baton::net::lookup_host("127.0.0.1:80").await })?.collect();
/// assert_eq!(addrs, ["127.0.0.1:80".parse().unwrap()]);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// `InvalidInput` for a string that is not `"host:port"` or a bad port (as std); the
/// resolver's error for a name it cannot resolve; [`Error::NotInRuntime`](crate::Error) outside
/// a runtime when a lookup is needed.
///
/// # Cancel safety
///
/// Dropping the future before a pool thread started the lookup cancels it; a lookup already
/// running finishes on the pool and its answer is dropped.
pub async fn lookup_host(host: impl ToSocketAddrs) -> io::Result<impl Iterator<Item = SocketAddr>> {
    Ok(resolve(&host, "net::lookup_host").await?.into_iter())
}

/// Tries `attempt` on each address in order: the first success, else the last error
/// (`InvalidInput` when there was no address), as std's `connect` does.
pub(crate) async fn each_address<T, F, Fut>(addrs: Vec<SocketAddr>, mut attempt: F) -> io::Result<T>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: Future<Output = io::Result<T>>,
{
    let mut last = None;
    for addr in addrs {
        match attempt(addr).await {
            Ok(done) => return Ok(done),
            Err(err) => last = Some(err),
        }
    }
    Err(last.unwrap_or_else(no_address))
}

/// The error for an address argument that named no address, as std's.
pub(crate) fn no_address() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "could not resolve to any addresses",
    )
}

/// The addresses `addr` names, resolving a host name with the system resolver on the calling
/// thread (for the synchronous `bind`s, which say so).
pub(crate) fn resolve_here<A: ToSocketAddrs + ?Sized>(addr: &A) -> io::Result<Vec<SocketAddr>> {
    match addr.lookup() {
        Lookup::Ready(addrs) => addrs,
        Lookup::Host { host, port } => Resolver::default().resolve(&host, port),
    }
}
