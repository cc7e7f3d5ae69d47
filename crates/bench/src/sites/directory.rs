//! A folder served like nginx or `python -m http.server` would: MIME type
//! from the extension, `index.html` for directories, 404 for anything else.
//!
//! Used for the real documentation sites of `shared/corpora/get-corpora.sh`.
//! Nothing outside the root is ever read: `..` segments, encoded slashes and
//! symlinks leading out of the root all answer 404.

use super::server::{Site, SiteRequest, SiteResponse};
use anyhow::{Context, Result};
use axum::http::{header, HeaderValue, Method, StatusCode};
use std::path::{Path, PathBuf};

/// The target MIME types of the corpora sites (shared/corpora/README.md):
/// downloadable example code and data, as [`mime_for_path`] reports them.
pub const CORPUS_TARGET_MIME: &[&str] = &[
    "text/x-python",
    "application/x-ipynb+json",
    "application/zip",
    "application/xml",
];

/// Serves the files under one folder.
#[derive(Clone, Debug)]
pub struct DirectorySite {
    root: PathBuf,
}

impl DirectorySite {
    /// Serve `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref();
        let root = root
            .canonicalize()
            .with_context(|| format!("site root {}", root.display()))?;
        if !root.is_dir() {
            anyhow::bail!("site root {} is not a directory", root.display());
        }
        Ok(DirectorySite { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file a request path maps to, if it is inside the root.
    fn resolve(&self, raw_path: &str) -> Resolved {
        let mut path = self.root.clone();
        for seg in raw_path.split('/').filter(|s| !s.is_empty()) {
            let Some(seg) = percent_decode(seg) else {
                return Resolved::Missing;
            };
            // A decoded '/' or NUL would smuggle extra components in.
            if seg == ".." || seg.contains(['/', '\0']) {
                return Resolved::Missing;
            }
            if seg == "." {
                continue;
            }
            path.push(seg);
        }
        // canonicalize resolves symlinks: the result must still be under root.
        let Ok(real) = path.canonicalize() else {
            return Resolved::Missing;
        };
        if !real.starts_with(&self.root) {
            return Resolved::Missing;
        }
        if real.is_dir() {
            if !raw_path.ends_with('/') {
                return Resolved::AddSlash;
            }
            let index = real.join("index.html");
            return match index.canonicalize() {
                Ok(i) if i.starts_with(&self.root) && i.is_file() => Resolved::File(i),
                _ => Resolved::Missing,
            };
        }
        if real.is_file() {
            Resolved::File(real)
        } else {
            Resolved::Missing
        }
    }
}

enum Resolved {
    File(PathBuf),
    /// A directory asked without its trailing slash: redirect, as nginx does,
    /// so relative links in its index resolve against the directory.
    AddSlash,
    Missing,
}

impl Site for DirectorySite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        if req.method != Method::GET && req.method != Method::HEAD {
            return SiteResponse::error(StatusCode::METHOD_NOT_ALLOWED)
                .with_header(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        }
        match self.resolve(&req.path) {
            Resolved::Missing => SiteResponse::not_found(),
            Resolved::AddSlash => {
                let location = match &req.query {
                    Some(q) => format!("{}/?{}", req.path, q),
                    None => format!("{}/", req.path),
                };
                SiteResponse::redirect(StatusCode::MOVED_PERMANENTLY, &location)
            }
            Resolved::File(file) => {
                let mime = mime_for_path(&file);
                if req.is_head() {
                    // Same headers as GET, without reading the file.
                    return match std::fs::metadata(&file) {
                        Ok(m) => SiteResponse::ok(mime, Vec::new())
                            .with_header(header::CONTENT_LENGTH, HeaderValue::from(m.len())),
                        Err(_) => SiteResponse::not_found(),
                    };
                }
                match std::fs::read(&file) {
                    Ok(bytes) => SiteResponse::ok(mime, bytes),
                    // Unreadable (permissions, raced deletion): like nginx, 403/404.
                    Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                        SiteResponse::error(StatusCode::FORBIDDEN)
                    }
                    Err(_) => SiteResponse::not_found(),
                }
            }
        }
    }
}

/// MIME type from the file extension, as Debian's `/etc/mime.types` (used by
/// nginx and Python's `http.server`) reports it, plus the code-sample types of
/// the corpora (`.ipynb`, `.tac`, `.rpy`, which are Python sources).
pub fn mime_for_path(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "html" | "htm" | "shtml" => "text/html",
        "xhtml" => "application/xhtml+xml",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "txt" | "text" => "text/plain",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "py" | "tac" | "rpy" => "text/x-python",
        "ipynb" => "application/x-ipynb+json",
        "json" | "map" => "application/json",
        "xml" | "xsd" | "xsl" => "application/xml",
        "rss" => "application/rss+xml",
        "rdf" => "application/rdf+xml",
        "yaml" | "yml" => "application/yaml",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "bz2" => "application/x-bzip2",
        "xz" => "application/x-xz",
        "7z" => "application/x-7z-compressed",
        "rar" => "application/vnd.rar",
        "pdf" => "application/pdf",
        "xls" => "application/vnd.ms-excel",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ods" => "application/vnd.oasis.opendocument.spreadsheet",
        "doc" => "application/msword",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "odt" => "application/vnd.oasis.opendocument.text",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" | "svgz" => "image/svg+xml",
        "ico" => "image/vnd.microsoft.icon",
        "webp" => "image/webp",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "eot" => "application/vnd.ms-fontobject",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mp3" => "audio/mpeg",
        "ogg" => "audio/ogg",
        _ => "application/octet-stream",
    }
}

/// Percent-decode one path segment; `None` for malformed escapes or non-UTF-8.
fn percent_decode(seg: &str) -> Option<String> {
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree() -> (tempfile::TempDir, DirectorySite) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("site");
        fs::create_dir_all(root.join("docs/sub")).unwrap();
        fs::write(root.join("index.html"), "<a href='docs/'>docs</a>").unwrap();
        fs::write(root.join("docs/index.html"), "docs index").unwrap();
        fs::write(root.join("docs/a b.py"), "print(1)\n").unwrap();
        fs::write(root.join("docs/nb.ipynb"), "{}").unwrap();
        fs::write(root.join("docs/data.csv"), "a,b\n").unwrap();
        fs::write(root.join("docs/server.tac"), "# tac").unwrap();
        fs::write(dir.path().join("secret.txt"), "outside").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("docs/leak.txt"))
                .unwrap();
            std::os::unix::fs::symlink(root.join("docs/data.csv"), root.join("alias.csv")).unwrap();
        }
        let site = DirectorySite::new(&root).unwrap();
        (dir, site)
    }

    fn get(site: &DirectorySite, path: &str) -> SiteResponse {
        site.respond(&SiteRequest::get("d.test", path))
    }

    fn body(resp: SiteResponse) -> Vec<u8> {
        resp.body.read_capped(1 << 20).bytes
    }

    #[test]
    fn serves_files_with_their_types() {
        let (_d, site) = tree();
        let r = get(&site, "/docs/a%20b.py");
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.content_type(), Some("text/x-python"));
        assert_eq!(body(r), b"print(1)\n");
        assert_eq!(
            get(&site, "/docs/nb.ipynb").content_type(),
            Some("application/x-ipynb+json")
        );
        assert_eq!(
            get(&site, "/docs/data.csv").content_type(),
            Some("text/csv")
        );
        assert_eq!(
            get(&site, "/docs/server.tac").content_type(),
            Some("text/x-python")
        );
        assert_eq!(get(&site, "/docs/./data.csv?x=1").status, StatusCode::OK);
    }

    #[test]
    fn directories_use_index_html_and_get_their_slash() {
        let (_d, site) = tree();
        assert_eq!(body(get(&site, "/")), b"<a href='docs/'>docs</a>");
        assert_eq!(body(get(&site, "/docs/")), b"docs index");
        let r = get(&site, "/docs");
        assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY);
        assert_eq!(r.location(), Some("/docs/"));
        assert_eq!(get(&site, "/docs/sub/").status, StatusCode::NOT_FOUND);
        assert_eq!(get(&site, "/nothing.html").status, StatusCode::NOT_FOUND);
    }

    #[test]
    fn head_reports_length_without_body() {
        let (_d, site) = tree();
        let r =
            site.respond(&SiteRequest::get("d.test", "/docs/data.csv").with_method(Method::HEAD));
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.headers[header::CONTENT_LENGTH], "4");
        assert!(r.body.is_empty());
        let post = site.respond(&SiteRequest::get("d.test", "/").with_method(Method::POST));
        assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
    }

    #[test]
    fn refuses_traversal() {
        let (_d, site) = tree();
        for p in [
            "/../secret.txt",
            "/docs/../../secret.txt",
            "/%2e%2e/secret.txt",
            "/docs/%2E%2E/%2e%2e/secret.txt",
            "/docs%2f..%2f..%2fsecret.txt",
            "/..%2fsecret.txt",
            "/docs/%00",
            "/docs/%zz",
        ] {
            assert_eq!(get(&site, p).status, StatusCode::NOT_FOUND, "{p}");
        }
        #[cfg(unix)]
        {
            assert_eq!(get(&site, "/docs/leak.txt").status, StatusCode::NOT_FOUND);
            // A symlink that stays inside the root is fine.
            assert_eq!(body(get(&site, "/alias.csv")), b"a,b\n");
        }
    }

    #[test]
    fn unknown_extensions_are_octet_streams() {
        assert_eq!(
            mime_for_path(Path::new("a.weird")),
            "application/octet-stream"
        );
        assert_eq!(
            mime_for_path(Path::new("noext")),
            "application/octet-stream"
        );
        assert_eq!(mime_for_path(Path::new("A.HTML")), "text/html");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b").as_deref(), Some("a b"));
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        assert_eq!(percent_decode("%"), None);
        assert_eq!(percent_decode("%ff"), None);
    }

    proptest::proptest! {
        /// Whatever the path, nothing outside the root is ever served.
        #[test]
        fn never_serves_outside_root(path in "(/(\\.\\.|%2[eE]%2[eE]|%2[fF]|docs|secret\\.txt|[a-z.%0-9]{0,6})){1,6}") {
            let (_d, site) = tree();
            let r = get(&site, &path);
            if r.status == StatusCode::OK {
                proptest::prop_assert_ne!(body(r), b"outside".to_vec());
            }
        }
    }
}
