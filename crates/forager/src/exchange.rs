//! What one HTTP exchange looked like on the wire: the request as sent and the
//! response head as received, plus the peer's address.
//!
//! Shared vocabulary between [`crate::fetch`] (which records it) and
//! [`crate::output::warc`] (which archives it), so neither imports the other.
//! Owns: these plain data types and their HTTP/1 serialisation. Must not
//! touch: I/O of any kind.

use std::net::IpAddr;
use std::time::SystemTime;

/// A start line and header fields, in the order they were sent or received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpHead {
    /// `GET /path?q HTTP/1.1` or `HTTP/1.1 200 OK`, without CRLF.
    pub start_line: String,
    /// Field names as the HTTP library spells them (lower case) and raw values.
    pub headers: Vec<(String, Vec<u8>)>,
}

impl HttpHead {
    /// The head as HTTP/1 bytes, ending with the empty line.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            self.start_line.len()
                + 4
                + self
                    .headers
                    .iter()
                    .map(|(n, v)| n.len() + v.len() + 4)
                    .sum::<usize>(),
        );
        out.extend_from_slice(self.start_line.as_bytes());
        out.extend_from_slice(b"\r\n");
        for (name, value) in &self.headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    /// The first value of `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

/// One request/response pair as it happened (bodies are not part of it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeHead {
    pub request: HttpHead,
    pub response: HttpHead,
    /// The address the connection went to, when the HTTP library knows it.
    pub remote_ip: Option<IpAddr>,
    /// When the request was sent (after the politeness wait).
    pub sent_at: SystemTime,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_serialises_as_http1() {
        let head = HttpHead {
            start_line: "HTTP/1.1 200 OK".into(),
            headers: vec![
                ("content-type".into(), b"text/csv".to_vec()),
                ("x".into(), b"1".to_vec()),
            ],
        };
        assert_eq!(
            head.to_bytes(),
            b"HTTP/1.1 200 OK\r\ncontent-type: text/csv\r\nx: 1\r\n\r\n"
        );
        assert_eq!(head.get("Content-Type"), Some(&b"text/csv"[..]));
        assert_eq!(head.get("y"), None);
    }
}
