//! Daemon configs: any text either parses or gives errors that are each one
//! line naming the file; never a panic.
#![no_main]

use forager_core::config::{parse_daemon, parse_daemon_all};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let origin = Path::new("/etc/forager/forager.toml");
    match parse_daemon_all(text, origin) {
        Ok(config) => {
            assert!(config.max_jobs > 0, "max_jobs 0 accepted");
            assert!(parse_daemon(text, origin).is_ok());
        }
        Err(errors) => {
            assert!(!errors.is_empty(), "failure without an error");
            for e in &errors {
                let line = e.to_string();
                assert!(
                    !line.contains('\n') && !line.contains('\r'),
                    "multi-line error {line:?}"
                );
                assert!(
                    line.starts_with("/etc/forager/forager.toml"),
                    "error without the file: {line:?}"
                );
            }
            assert!(parse_daemon(text, origin).is_err());
        }
    }
});
