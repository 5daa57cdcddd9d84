//! The one HTTP service every contender serves (K6): the runtimes differ only in how hyper's
//! connection reaches their sockets, never in what the service does per request.

use std::convert::Infallible;
use std::future::{Ready, ready};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use crate::jobs::HttpJob;

/// Answers `GET` of the job's path with its payload (hyper sets `Content-Length` from the
/// full body) and anything else with 404, which the load generator counts as an error.
#[derive(Debug, Clone)]
pub(crate) struct Responder {
    path: &'static str,
    content_type: HeaderValue,
    payload: Bytes,
}

impl Responder {
    /// The service for one connection of `job`; the payload is shared, not copied.
    pub(crate) fn new(job: &HttpJob) -> Self {
        Self {
            path: job.body.path(),
            content_type: HeaderValue::from_static(job.body.content_type()),
            payload: job.payload.clone(),
        }
    }
}

impl hyper::service::Service<Request<Incoming>> for Responder {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let response = if request.method() == Method::GET && request.uri().path() == self.path {
            let mut response = Response::new(Full::new(self.payload.clone()));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, self.content_type.clone());
            response
        } else {
            let mut response = Response::new(Full::new(Bytes::from_static(b"not found\n")));
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
        };
        ready(Ok(response))
    }
}
