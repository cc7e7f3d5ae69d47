//! The one place where stored values are encoded.
//!
//! Every value starts with a format-version byte, then bincode 2.0.1 (pinned:
//! the crate is unmaintained and 3.0 does not compile) in its standard
//! configuration with a size limit, so hostile or corrupt bytes fail cleanly
//! instead of allocating without bound.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Bumped whenever the layout of any stored value changes incompatibly.
pub const FORMAT_VERSION: u8 = 1;

/// Largest value the decoder accepts (a checkpoint of a huge action index fits).
const DECODE_LIMIT: usize = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("empty value")]
    Empty,
    #[error("stored with format version {found}, this forager reads version {FORMAT_VERSION}")]
    Version { found: u8 },
    #[error("cannot decode stored value: {0}")]
    Decode(String),
    #[error("cannot encode value: {0}")]
    Encode(String),
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<DECODE_LIMIT>()
}

/// Encode a value behind the version byte.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = vec![FORMAT_VERSION];
    // Encoding into a Vec fails only for types serde cannot describe to bincode
    // (e.g. maps of unknown length), which is a programming error caught by tests.
    if let Err(e) = bincode::serde::encode_into_std_write(value, &mut out, config()) {
        panic!("codec: value type is not encodable: {e}");
    }
    out
}

/// Decode the first field(s) of a value written by [`encode`] as `T`,
/// ignoring the rest (a struct's leading fields decode as a prefix).
pub fn decode_prefix<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    decode_counted(bytes).map(|(value, _)| value)
}

/// The value at the start of `bytes` and how many body bytes it used.
fn decode_counted<T: DeserializeOwned>(bytes: &[u8]) -> Result<(T, usize), CodecError> {
    let (&version, body) = bytes.split_first().ok_or(CodecError::Empty)?;
    if version != FORMAT_VERSION {
        return Err(CodecError::Version { found: version });
    }
    bincode::serde::decode_from_slice(body, config()).map_err(|e| CodecError::Decode(e.to_string()))
}

/// Decode a value written by [`encode`]; never panics on arbitrary bytes.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let (value, used) = decode_counted(bytes)?;
    let body = bytes.len() - 1;
    if used != body {
        return Err(CodecError::Decode(format!(
            "{} trailing bytes",
            body - used
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{Link, TagPath};
    use proptest::prelude::*;

    #[test]
    fn round_trips_a_link() {
        let mut link = Link::seed(url::Url::parse("https://example.org/a?b=c").unwrap());
        link.tag_path = TagPath::new("/html/body/a.x");
        link.referrer = Some(std::sync::Arc::new(
            url::Url::parse("https://example.org/").unwrap(),
        ));
        let back: Link = decode(&encode(&link)).unwrap();
        assert_eq!(back, link);
    }

    #[test]
    fn a_frontier_entry_decodes_its_key_as_a_prefix() {
        use crate::link::QueueKey;
        use crate::record::FrontierEntry;
        let entry = FrontierEntry {
            key: QueueKey {
                slot: 70_000,
                score: -0.25,
            },
            link: Link::seed(url::Url::parse("https://example.org/long/path?q=1").unwrap()),
        };
        let bytes = encode(&entry);
        assert_eq!(decode_prefix::<QueueKey>(&bytes).unwrap(), entry.key);
        assert!(
            decode::<QueueKey>(&bytes).is_err(),
            "trailing bytes refused"
        );
        assert!(matches!(
            decode_prefix::<QueueKey>(&[7, 0]),
            Err(CodecError::Version { found: 7 })
        ));
    }

    #[test]
    fn rejects_other_versions_and_garbage() {
        assert!(matches!(decode::<u32>(&[]), Err(CodecError::Empty)));
        assert!(matches!(
            decode::<u32>(&[99, 1]),
            Err(CodecError::Version { found: 99 })
        ));
        assert!(decode::<Vec<u64>>(&[FORMAT_VERSION, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode::<Link>(&bytes);
            let _ = decode_prefix::<crate::link::QueueKey>(&bytes);
            let _ = decode::<Vec<(u64, String)>>(&bytes);
        }

        #[test]
        fn round_trip(v in proptest::collection::vec((any::<u64>(), ".*", any::<f32>()), 0..20)) {
            let back: Vec<(u64, String, f32)> = decode(&encode(&v)).unwrap();
            prop_assert_eq!(back.len(), v.len());
            for (a, b) in back.iter().zip(&v) {
                prop_assert_eq!(a.0, b.0);
                prop_assert_eq!(&a.1, &b.1);
                prop_assert_eq!(a.2.to_bits(), b.2.to_bits());
            }
        }
    }
}
