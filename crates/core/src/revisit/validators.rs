//! Per-URL validators: ETag, Last-Modified and the SHA-256 of the body.

use crate::codec::{self, CodecError};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest ETag kept: a longer one is surely not a validator worth echoing.
pub const MAX_ETAG_LEN: usize = 256;

/// What is kept of one fetched URL to ask "has it changed?" next time.
/// Encoded it is a few dozen bytes plus the ETag (≤ [`MAX_ETAG_LEN`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validators {
    /// The entity tag as the server sent it (`"abc"` or `W/"abc"`).
    pub etag: Option<String>,
    /// Last-Modified exactly as sent (RFC 9110 §13.1.3: echo it, do not reformat it).
    pub last_modified: Option<String>,
    /// SHA-256 of the body read, when one was read.
    pub sha256: Option<[u8; 32]>,
    /// When this was fetched, seconds since the Unix epoch.
    pub fetched_at: u64,
}

impl Validators {
    /// The validators of a response: `headers` as received, the body's digest
    /// when it was read, `now` the time of the fetch. An ETag that is not a
    /// well-formed entity tag, or a Last-Modified that is unparsable or later
    /// than the response (RFC 9110 §8.8.2.1 forbids it), is not kept: sending
    /// it back could make a server answer 304 wrongly or never.
    pub fn from_response(
        headers: &[(String, Vec<u8>)],
        sha256: Option<[u8; 32]>,
        now: SystemTime,
    ) -> Validators {
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .and_then(|(_, v)| std::str::from_utf8(v).ok())
                .map(str::trim)
        };
        let etag = get("etag").filter(|e| valid_etag(e)).map(str::to_string);
        // The server's own clock bounds Last-Modified, and ours too (some lie about both).
        let origin = get("date")
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .map_or(now, |d| d.min(now));
        let last_modified = get("last-modified")
            .filter(|lm| {
                httpdate::parse_http_date(lm).is_ok_and(|t| t <= origin + Duration::from_secs(1))
            })
            .map(str::to_string);
        Validators {
            etag,
            last_modified,
            sha256,
            fetched_at: now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        }
    }

    /// The stored form (versioned, through the one codec).
    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Validators, CodecError> {
        codec::decode(bytes)
    }

    /// Whether a conditional request can be made at all.
    pub fn is_conditional(&self) -> bool {
        self.etag.is_some() || self.last_modified.is_some()
    }
}

/// RFC 9110 §8.8.3: `[W/]"etagc*"`, etagc = `!` / `#`-`~` / obs-text (here: non-ASCII UTF-8).
fn valid_etag(e: &str) -> bool {
    let opaque = e.strip_prefix("W/").unwrap_or(e);
    e.len() <= MAX_ETAG_LEN
        && opaque.len() >= 2
        && opaque.starts_with('"')
        && opaque.ends_with('"')
        && opaque[1..opaque.len() - 1]
            .chars()
            .all(|c| c == '!' || ('#'..='~').contains(&c) || !c.is_ascii())
}

/// The request fields of a conditional GET: `If-None-Match` from the ETag,
/// `If-Modified-Since` from Last-Modified. Both are sent when both are known
/// (a server that implements ETags ignores the date, RFC 9110 §13.1.3; one
/// that does not still honours the date).
pub fn conditional_headers(v: &Validators) -> Vec<(&'static str, String)> {
    let mut out = Vec::with_capacity(2);
    if let Some(etag) = &v.etag {
        out.push(("if-none-match", etag.clone()));
    }
    if let Some(lm) = &v.last_modified {
        out.push(("if-modified-since", lm.clone()));
    }
    out
}

/// What a revisit found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Never fetched before.
    New,
    /// A body that differs from the last one.
    Changed,
    /// The server said 304 Not Modified: no body was sent.
    NotModified,
    /// A body identical to the last one (digests equal): nothing to save.
    SameDigest,
    /// Neither a 2xx with a body nor a 304: nothing learned about change.
    Unknown,
}

impl Change {
    /// Whether the revisit brought something new (what the schedule rewards).
    pub fn paid(self) -> bool {
        matches!(self, Change::New | Change::Changed)
    }
}

/// Classifies the answer to a (conditional) fetch against what was known.
pub fn classify(previous: Option<&Validators>, status: u16, sha256: Option<&[u8; 32]>) -> Change {
    match (previous, status) {
        (Some(_), 304) => Change::NotModified,
        (_, 200..=299) => match (previous.and_then(|p| p.sha256.as_ref()), sha256) {
            (_, None) => Change::Unknown,
            (None, Some(_)) if previous.is_none() => Change::New,
            (None, Some(_)) => Change::Changed,
            (Some(old), Some(new)) if old == new => Change::SameDigest,
            (Some(_), Some(_)) => Change::Changed,
        },
        _ => Change::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn validators_come_from_the_response_and_go_back_verbatim() {
        let now = at(1_700_000_000);
        let v = Validators::from_response(
            &h(&[
                ("ETag", "W/\"abc-123\""),
                ("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT"),
            ]),
            Some([7; 32]),
            now,
        );
        assert_eq!(v.etag.as_deref(), Some("W/\"abc-123\""));
        assert_eq!(
            v.last_modified.as_deref(),
            Some("Tue, 14 Nov 2023 22:13:20 GMT")
        );
        assert_eq!(v.fetched_at, 1_700_000_000);
        assert_eq!(
            conditional_headers(&v),
            vec![
                ("if-none-match", "W/\"abc-123\"".to_string()),
                (
                    "if-modified-since",
                    "Tue, 14 Nov 2023 22:13:20 GMT".to_string()
                ),
            ]
        );
        assert!(conditional_headers(&Validators::default()).is_empty());
        assert!(!Validators::default().is_conditional());
    }

    #[test]
    fn malformed_or_impossible_validators_are_dropped() {
        let now = at(1_700_000_000);
        for etag in ["abc", "\"a\"b\"", "\"a\r\nx\"", "\"", "W/abc"] {
            let v = Validators::from_response(&h(&[("etag", etag)]), None, now);
            assert_eq!(v.etag, None, "{etag:?}");
        }
        let long = format!("\"{}\"", "a".repeat(MAX_ETAG_LEN));
        assert_eq!(
            Validators::from_response(&h(&[("etag", &long)]), None, now).etag,
            None
        );
        // In the future of the response, or not a date.
        for lm in ["Wed, 01 Jan 2200 00:00:00 GMT", "yesterday"] {
            let v = Validators::from_response(&h(&[("last-modified", lm)]), None, now);
            assert_eq!(v.last_modified, None, "{lm:?}");
        }
        // Later than the server's own Date header.
        let v = Validators::from_response(
            &h(&[
                ("date", "Tue, 14 Nov 2023 00:00:00 GMT"),
                ("last-modified", "Tue, 14 Nov 2023 22:13:20 GMT"),
            ]),
            None,
            now,
        );
        assert_eq!(v.last_modified, None);
    }

    #[test]
    fn answers_are_classified_against_the_last_fetch() {
        let old = Validators {
            sha256: Some([1; 32]),
            etag: Some("\"x\"".into()),
            ..Validators::default()
        };
        assert_eq!(classify(None, 200, Some(&[1; 32])), Change::New);
        assert_eq!(classify(Some(&old), 304, None), Change::NotModified);
        assert_eq!(
            classify(Some(&old), 200, Some(&[1; 32])),
            Change::SameDigest
        );
        assert_eq!(classify(Some(&old), 200, Some(&[2; 32])), Change::Changed);
        assert_eq!(classify(Some(&old), 500, None), Change::Unknown);
        assert_eq!(classify(None, 304, None), Change::Unknown);
        assert!(Change::Changed.paid() && Change::New.paid());
        assert!(!Change::NotModified.paid() && !Change::SameDigest.paid());
    }

    #[test]
    fn stored_validators_are_small() {
        let v = Validators {
            etag: Some(format!("\"{}\"", "e".repeat(MAX_ETAG_LEN - 2))),
            last_modified: Some("Tue, 14 Nov 2023 22:13:20 GMT".into()),
            sha256: Some([9; 32]),
            fetched_at: u64::MAX,
        };
        // The bound is 1 KiB of new state per page, schedule included.
        assert!(v.encode().len() < 400, "{}", v.encode().len());
    }

    proptest! {
        #[test]
        fn the_codec_round_trips(
            etag in proptest::option::of("\"[!#-~]{0,40}\""),
            lm in proptest::option::of("[ -~]{0,40}"),
            sha in proptest::option::of(proptest::array::uniform32(any::<u8>())),
            fetched_at in any::<u64>(),
        ) {
            let v = Validators { etag, last_modified: lm, sha256: sha, fetched_at };
            prop_assert_eq!(Validators::decode(&v.encode()).unwrap(), v);
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Validators::decode(&bytes);
        }

        #[test]
        fn conditional_headers_are_valid_header_values(etag in "[ -~]{0,60}", lm in "[ -~]{0,40}") {
            let v = Validators::from_response(
                &[("etag".to_string(), etag.into_bytes()), ("last-modified".to_string(), lm.into_bytes())],
                None,
                at(2_000_000_000),
            );
            for (name, value) in conditional_headers(&v) {
                prop_assert!(http::header::HeaderValue::from_str(&value).is_ok(), "{name}: {value:?}");
            }
        }
    }
}
