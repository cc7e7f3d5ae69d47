//! Which files of the jobs folder are job files, and reading a config file safely.

use std::io::Read;
use std::path::Path;

use super::error::{line_of, ConfigError};

/// Largest config or job file read: real ones are a few hundred bytes; anything huge is a mistake.
pub const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;

/// Whether `path` names a job file: `*.toml`, not hidden, not an editor's temp, swap or backup file.
///
/// Looks at the file name only (the daemon still checks it is a regular file).
/// Refused: `.x.toml` (hidden, also Emacs locks `.#x.toml`), `x.toml~`,
/// `#x.toml#`, `.x.toml.swp`, Vim's `4913` probe, `x.toml.tmp`, and names that
/// are not valid UTF-8.
pub fn is_job_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let Some(stem) = name.strip_suffix(".toml") else {
        return false;
    };
    !stem.is_empty() && !name.starts_with(['.', '#', '~']) && !name.contains(char::is_control)
}

/// The file stem of a job file (`jobs.d/bea.toml` → `bea`), `None` for any other file.
///
/// A job's identity is its `name` field, not its file name: this is only a
/// label for reporting a job file whose `name` cannot be read.
pub fn job_name_from_path(path: &Path) -> Option<String> {
    if !is_job_file(path) {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    name.strip_suffix(".toml").map(str::to_owned)
}

/// The text of a config file, refusing unreadable, oversized and non-UTF-8 files with a located error.
pub fn read_config_file(path: &Path) -> Result<String, ConfigError> {
    let io_err = |e: std::io::Error| ConfigError::new(path, None, "", format!("cannot read: {e}"));
    let file = std::fs::File::open(path).map_err(io_err)?;
    let mut bytes = Vec::new();
    // Read one byte past the cap to tell "exactly the cap" from "over it".
    file.take(MAX_CONFIG_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > MAX_CONFIG_FILE_BYTES {
        return Err(ConfigError::new(
            path,
            None,
            "",
            format!("file is larger than {} KiB", MAX_CONFIG_FILE_BYTES >> 10),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let prefix = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
        ConfigError::new(
            path,
            Some(line_of(&prefix, valid)),
            "",
            format!("not valid UTF-8 (byte {valid})"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_files_are_plain_toml_files() {
        for yes in [
            "bea.toml",
            "jobs.d/bea.toml",
            "/etc/forager/jobs.d/a-b_c.toml",
            "x.y.toml",
        ] {
            assert!(is_job_file(Path::new(yes)), "{yes}");
        }
        for no in [
            ".bea.toml",
            ".#bea.toml",
            "#bea.toml#",
            "bea.toml~",
            ".bea.toml.swp",
            ".bea.toml.swx",
            "bea.toml.swp",
            "4913",
            "bea.toml.tmp",
            "bea.TOML",
            "bea.json",
            ".toml",
            "jobs.d/",
            "",
            "~bea.toml",
            "a\nb.toml",
        ] {
            assert!(!is_job_file(Path::new(no)), "{no:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_file_names_are_not_job_files() {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"b\xffa.toml");
        assert!(!is_job_file(Path::new(name)));
    }

    #[test]
    fn stems_only_for_job_files() {
        assert_eq!(
            job_name_from_path(Path::new("jobs.d/bea.toml")),
            Some("bea".into())
        );
        assert_eq!(job_name_from_path(Path::new("jobs.d/bea.toml~")), None);
        assert_eq!(job_name_from_path(Path::new("4913")), None);
    }

    #[test]
    fn read_refuses_missing_huge_and_binary_files() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.toml");
        let e = read_config_file(&missing).unwrap_err();
        assert_eq!(e.line, None);
        assert!(e.reason.starts_with("cannot read: "), "{e}");

        let huge = dir.path().join("huge.toml");
        std::fs::write(&huge, vec![b'#'; (MAX_CONFIG_FILE_BYTES + 1) as usize]).unwrap();
        let e = read_config_file(&huge).unwrap_err();
        assert_eq!(e.reason, "file is larger than 1024 KiB");

        let exact = dir.path().join("exact.toml");
        std::fs::write(&exact, vec![b'#'; MAX_CONFIG_FILE_BYTES as usize]).unwrap();
        assert!(read_config_file(&exact).is_ok());

        let binary = dir.path().join("bin.toml");
        std::fs::write(&binary, b"name = \"a\"\n\n\xff\xfe").unwrap();
        let e = read_config_file(&binary).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert_eq!(
            e.to_string(),
            format!("{}:3: not valid UTF-8 (byte 12)", binary.display())
        );
    }
}
