//! The store codec on arbitrary bytes: decoding any stored type never panics
//! (nor allocates without bound), and whatever decodes re-encodes stably.
#![no_main]

use forager::fetch::RobotsRecord;
use forager_core::codec::{decode, encode};
use forager::store::{FrontierEntry, JobCounters, JobRecord, ManifestRow};
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Decodes as `T`; on success, encode → decode → encode must give the same bytes.
fn check<T: Serialize + DeserializeOwned>(bytes: &[u8]) {
    if let Ok(value) = decode::<T>(bytes) {
        let first = encode(&value);
        let again: T = match decode(&first) {
            Ok(v) => v,
            Err(e) => panic!("a re-encoded value does not decode: {e}"),
        };
        assert_eq!(encode(&again), first, "encoding is not stable");
    }
}

fuzz_target!(|data: &[u8]| {
    let [which, rest @ ..] = data else {
        return;
    };
    // The first byte picks the type; the rest is the stored value (with its version byte).
    match which % 5 {
        0 => check::<FrontierEntry>(rest),
        1 => check::<JobRecord>(rest),
        2 => check::<ManifestRow>(rest),
        3 => check::<JobCounters>(rest),
        _ => check::<RobotsRecord>(rest),
    }
});
