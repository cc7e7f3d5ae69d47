//! Job files: any text either parses or gives errors that are each one line
//! naming the file; never a panic.
#![no_main]

use forager_core::config::{is_valid_job_name, parse_job, parse_job_all};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let origin = Path::new("jobs.d/fuzz.toml");
    match parse_job_all(text, origin) {
        Ok(spec) => {
            assert!(
                is_valid_job_name(&spec.name),
                "accepted job name {:?}",
                spec.name
            );
            assert!(!spec.seeds.is_empty(), "a job without seeds was accepted");
            assert!(parse_job(text, origin).is_ok());
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
                    line.starts_with("jobs.d/fuzz.toml"),
                    "error without the file: {line:?}"
                );
            }
            assert!(parse_job(text, origin).is_err());
        }
    }
});
