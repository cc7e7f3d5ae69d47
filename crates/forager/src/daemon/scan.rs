//! Reading the jobs folder: every job file, parsed, with a cache so an
//! unchanged file is not read again on every event or poll.
//!
//! Blocking file I/O: call [`Scanner::scan`] from `spawn_blocking`.

use super::jobs::{Parsed, ScannedFile};
use forager_core::config::{self, ConfigError};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What tells a file changed without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Fingerprint {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Fingerprint {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        }
    }
}

#[derive(Clone, Debug)]
struct Cached {
    fingerprint: Fingerprint,
    /// Hash of the text: an atomic save of the same text is not a change.
    content: u64,
    parsed: Parsed,
}

/// The jobs folder and what was last read from it.
#[derive(Debug)]
pub struct Scanner {
    dir: PathBuf,
    cache: HashMap<PathBuf, Cached>,
}

impl Scanner {
    pub fn new(dir: &Path) -> Self {
        Scanner {
            dir: dir.to_path_buf(),
            cache: HashMap::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every job file of the folder, parsed. `full` reads every file even when
    /// its size, time and inode did not change (a coarse clock or a network
    /// filesystem can hide an edit from them).
    pub fn scan(&mut self, full: bool) -> std::io::Result<Vec<ScannedFile>> {
        let mut out = Vec::new();
        let mut cache = HashMap::with_capacity(self.cache.len());
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let path = entry.path();
            if !config::is_job_file(&path) {
                continue;
            }
            // Follows symlinks: a job file may link to one kept elsewhere.
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                // Gone between the listing and now (an editor's rename): the next event rescans.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    let parsed = Parsed::Invalid {
                        error: ConfigError::new(&path, None, "", format!("cannot read: {e}")),
                        name: None,
                    };
                    out.push(ScannedFile { path, parsed });
                    continue;
                }
            };
            if !meta.is_file() {
                continue;
            }
            let fingerprint = Fingerprint::of(&meta);
            let previous = self.cache.remove(&path);
            let cached = match previous {
                Some(c) if !full && c.fingerprint == fingerprint => c,
                previous => match read_and_parse(&path, fingerprint, previous) {
                    Some(c) => c,
                    None => continue,
                },
            };
            out.push(ScannedFile {
                path: path.clone(),
                parsed: cached.parsed.clone(),
            });
            cache.insert(path, cached);
        }
        self.cache = cache;
        Ok(out)
    }
}

/// Read one job file; reuse the previous parse when the text is the same.
/// `None` when the file vanished meanwhile.
fn read_and_parse(
    path: &Path,
    fingerprint: Fingerprint,
    previous: Option<Cached>,
) -> Option<Cached> {
    let text = match config::read_config_file(path) {
        Ok(t) => t,
        Err(_) if !path.exists() => return None,
        Err(error) => {
            return Some(Cached {
                fingerprint,
                content: 0,
                parsed: Parsed::Invalid { error, name: None },
            })
        }
    };
    let content = {
        let mut h = DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    };
    if let Some(p) = previous.filter(|p| p.content == content) {
        return Some(Cached { fingerprint, ..p });
    }
    let parsed = match config::parse_job(&text, path) {
        Ok(spec) => Parsed::Valid(Box::new(spec)),
        Err(error) => Parsed::Invalid {
            error,
            name: declared_name(&text),
        },
    };
    Some(Cached {
        fingerprint,
        content,
        parsed,
    })
}

/// The job name an invalid file declares, when its TOML is readable that far.
fn declared_name(text: &str) -> Option<String> {
    let table: toml::Table = text.parse().ok()?;
    let name = table.get("name")?.as_str()?;
    config::is_valid_job_name(name).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "name = \"a\"\nseeds = [\"http://a.test/\"]\n";

    fn names(files: &[ScannedFile]) -> Vec<(String, bool)> {
        let mut v: Vec<(String, bool)> = files
            .iter()
            .map(|f| {
                (
                    f.path.file_name().unwrap().to_string_lossy().into_owned(),
                    matches!(f.parsed, Parsed::Valid(_)),
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn reads_job_files_and_skips_editor_files_and_folders() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.toml"), JOB).unwrap();
        std::fs::write(d.join(".a.toml.swp"), "junk").unwrap();
        std::fs::write(d.join("a.toml~"), "junk").unwrap();
        std::fs::write(d.join("4913"), "").unwrap();
        std::fs::write(d.join("bad.toml"), "name = \"bad\"\nseeds = 3\n").unwrap();
        std::fs::write(d.join("worse.toml"), "name = [").unwrap();
        std::fs::create_dir(d.join("dir.toml")).unwrap();
        let mut s = Scanner::new(d);
        let files = s.scan(false).unwrap();
        assert_eq!(
            names(&files),
            vec![
                ("a.toml".into(), true),
                ("bad.toml".into(), false),
                ("worse.toml".into(), false)
            ]
        );
        let bad = files.iter().find(|f| f.path.ends_with("bad.toml")).unwrap();
        match &bad.parsed {
            Parsed::Invalid { error, name } => {
                assert_eq!(name.as_deref(), Some("bad"));
                assert_eq!(error.line, Some(2), "{error}");
                assert!(error.to_string().contains("bad.toml:2"), "{error}");
            }
            Parsed::Valid(_) => panic!("bad.toml parsed"),
        }
        let worse = files
            .iter()
            .find(|f| f.path.ends_with("worse.toml"))
            .unwrap();
        assert!(matches!(&worse.parsed, Parsed::Invalid { name: None, .. }));
    }

    #[test]
    fn sees_edits_and_removals() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut s = Scanner::new(d);
        assert!(s.scan(false).unwrap().is_empty());
        std::fs::write(d.join("a.toml"), JOB).unwrap();
        assert_eq!(s.scan(false).unwrap().len(), 1);
        // An atomic-rename save of new content (a new inode).
        let tmp = d.join(".a.toml.tmp");
        std::fs::write(&tmp, format!("{JOB}seed = 7\n")).unwrap();
        std::fs::rename(&tmp, d.join("a.toml")).unwrap();
        let files = s.scan(false).unwrap();
        match &files[0].parsed {
            Parsed::Valid(spec) => assert_eq!(spec.seed, 7),
            Parsed::Invalid { error, .. } => panic!("{error}"),
        }
        std::fs::remove_file(d.join("a.toml")).unwrap();
        assert!(s.scan(false).unwrap().is_empty());
    }

    #[test]
    fn a_full_scan_sees_an_edit_the_fingerprint_missed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.toml");
        std::fs::write(&path, format!("{JOB}seed = 1\n")).unwrap();
        let mut s = Scanner::new(dir.path());
        s.scan(false).unwrap();
        // Same length, same inode; put the old mtime back to hide the edit.
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, format!("{JOB}seed = 2\n")).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let seed = |files: Vec<ScannedFile>| match &files[0].parsed {
            Parsed::Valid(spec) => spec.seed,
            Parsed::Invalid { error, .. } => panic!("{error}"),
        };
        assert_eq!(
            seed(s.scan(false).unwrap()),
            1,
            "the quick scan trusts the fingerprint"
        );
        assert_eq!(seed(s.scan(true).unwrap()), 2);
    }

    #[test]
    fn a_missing_folder_is_an_error_not_an_empty_folder() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Scanner::new(&dir.path().join("nope"));
        assert!(s.scan(false).is_err());
    }
}
