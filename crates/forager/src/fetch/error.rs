//! The one error type of the fetch module, with a stable `kind()` for metric labels.

use std::error::Error as StdError;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

/// Which stage of an exchange ran out of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// TCP (and TLS) connection set-up, `connect_timeout`.
    Connect,
    /// Waiting for the response head after the connection, `connect_timeout + read_timeout`.
    Headers,
    /// The gap between two body chunks, `read_timeout`.
    Body,
    /// The whole exchange, `total_timeout`.
    Total,
}

impl fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "connect",
            TimeoutPhase::Headers => "response headers",
            TimeoutPhase::Body => "body read",
            TimeoutPhase::Total => "whole request",
        })
    }
}

/// Why a request produced no usable response.
///
/// HTTP error statuses (404, 500…) are *not* errors: they arrive as a
/// [`Response`](super::Response) with that status.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The SSRF guard refused the destination (private, loopback, reserved…).
    #[error("refused {host}: it resolves to {addr}, a private or reserved address (allow_private is off)")]
    Forbidden {
        /// The host name or literal of the URL.
        host: String,
        /// The first refused address.
        addr: IpAddr,
    },
    /// A time limit was reached.
    #[error("{phase} timed out after {after:?} for {url}")]
    Timeout {
        /// The URL requested.
        url: String,
        /// The stage that ran out of time.
        phase: TimeoutPhase,
        /// The limit that applied.
        after: Duration,
    },
    /// The connection could not be established (DNS failure, refused, reset, TLS).
    #[error("cannot connect for {url}: {detail}")]
    Connect {
        /// The URL requested.
        url: String,
        /// The whole cause chain, flattened for logs.
        detail: String,
        /// The underlying error.
        #[source]
        source: reqwest::Error,
    },
    /// The TLS handshake failed: the certificate is not trusted, expired or
    /// names another host, or the server does not speak TLS.
    #[error("TLS handshake with {host} failed: {reason}{hint} (for {url})")]
    Tls {
        /// The URL requested.
        url: String,
        /// The host whose handshake failed.
        host: String,
        /// What rustls said.
        reason: String,
        /// Advice for the common case, empty otherwise.
        hint: &'static str,
        /// The underlying error.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered something that is not valid HTTP.
    #[error("HTTP protocol error for {url}: {detail}")]
    Http {
        /// The URL requested.
        url: String,
        /// The whole cause chain, flattened for logs.
        detail: String,
        /// The underlying error.
        #[source]
        source: reqwest::Error,
    },
    /// The body broke off, was malformed, or could not be decompressed.
    #[error("reading the body of {url} failed: {detail}")]
    Body {
        /// The URL requested.
        url: String,
        /// The whole cause chain, flattened for logs.
        detail: String,
        /// The underlying error.
        #[source]
        source: reqwest::Error,
    },
    /// The URL cannot be fetched at all (not http/https, no host…).
    #[error("invalid URL {url}: {reason}")]
    InvalidUrl {
        /// The offending URL.
        url: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The response head is larger than `max_header_bytes` (or has too many fields).
    #[error("response headers of {url} exceed the limit of {limit} bytes")]
    TooManyHeaders {
        /// The URL requested.
        url: String,
        /// The configured limit.
        limit: usize,
    },
    /// The fetcher could not be built, or a request option is invalid (e.g. the user agent).
    #[error("fetch configuration: {0}")]
    Config(String),
    /// The per-host gate was closed; only happens if the fetcher is being torn down.
    #[error("the fetcher is shutting down")]
    Shutdown,
}

impl FetchError {
    /// A short, stable label for metrics and status counters.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::Forbidden { .. } => "forbidden",
            FetchError::Timeout { .. } => "timeout",
            FetchError::Connect { .. } => "connect",
            FetchError::Tls { .. } => "tls",
            FetchError::Http { .. } => "http",
            FetchError::Body { .. } => "body",
            FetchError::InvalidUrl { .. } => "invalid_url",
            FetchError::TooManyHeaders { .. } => "too_many_headers",
            FetchError::Config(_) => "config",
            FetchError::Shutdown => "shutdown",
        }
    }

    /// Whether the host is to blame (counts towards its exponential back-off).
    pub(crate) fn is_host_failure(&self) -> bool {
        matches!(
            self,
            FetchError::Timeout { .. }
                | FetchError::Connect { .. }
                | FetchError::Tls { .. }
                | FetchError::Http { .. }
                | FetchError::Body { .. }
                | FetchError::TooManyHeaders { .. }
        )
    }

    /// Whether the failure may pass by itself (refused or reset connection,
    /// time-out, DNS, a broken body, a certificate being renewed): the link
    /// is worth trying again later (a few times: `[limits] retries`).
    pub fn may_pass(&self) -> bool {
        matches!(
            self,
            FetchError::Timeout { .. }
                | FetchError::Connect { .. }
                | FetchError::Tls { .. }
                | FetchError::Http { .. }
                | FetchError::Body { .. }
        )
    }

    /// Whether a request actually went out on the network (for request counting).
    pub fn reached_network(&self) -> bool {
        self.is_host_failure()
    }
}

/// The messages of an error and all its sources, joined by `": "`, without repeats.
pub(crate) fn error_chain(err: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = cur {
        let msg = e.to_string();
        // reqwest and hyper often repeat the inner message in the outer one.
        if !parts.iter().any(|p| p.contains(&msg)) {
            parts.push(msg);
        }
        cur = e.source();
    }
    parts.join(": ")
}

/// What rustls said of a failed handshake, if `err`'s chain holds it. An
/// `io::Error` hides the error it wraps from `source()`, so each one met is
/// opened too.
pub(crate) fn tls_failure<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    let mut cur: Option<&'a (dyn StdError + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(found) = e.downcast_ref::<rustls::Error>() {
            return Some(found);
        }
        // hyper-rustls wraps tokio-rustls's io::Error in another one.
        cur = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    None
}

/// Advice for a handshake that failed with `e`.
pub(crate) fn tls_hint(e: &rustls::Error) -> &'static str {
    match e {
        rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
        | rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature) => {
            ": no trusted root signed its certificate; a private CA can be trusted with [http] ca_file"
        }
        rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
        | rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForNameContext { .. }) => {
            ": its certificate is for another name"
        }
        rustls::Error::InvalidCertificate(rustls::CertificateError::Expired)
        | rustls::Error::InvalidCertificate(rustls::CertificateError::ExpiredContext { .. }) => {
            ": its certificate has expired"
        }
        _ => "",
    }
}

/// The first error of type `T` in the source chain of `err`.
pub(crate) fn find_in_chain<'a, T: StdError + 'static>(
    err: &'a (dyn StdError + 'static),
) -> Option<&'a T> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        cur = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("inner cause")]
    struct Inner;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);

    #[test]
    fn chain_joins_sources_and_finds_types() {
        let e = Outer(Inner);
        assert_eq!(error_chain(&e), "outer: inner cause");
        assert!(find_in_chain::<Inner>(&e).is_some());
        assert!(find_in_chain::<std::io::Error>(&e).is_none());
    }

    #[test]
    fn kinds_are_distinct_labels() {
        let a = FetchError::InvalidUrl {
            url: "x".into(),
            reason: "r",
        };
        let b = FetchError::TooManyHeaders {
            url: "x".into(),
            limit: 1,
        };
        assert_eq!(a.kind(), "invalid_url");
        assert_eq!(b.kind(), "too_many_headers");
        assert!(!a.is_host_failure());
        assert!(b.is_host_failure());
    }
}
