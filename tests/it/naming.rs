//! How harvested files are named when the server's type says nothing: a
//! site served as nginx serves unknown extensions (`application/octet-stream`
//! for `.csv`, `.ipynb`, `.py`), crawled by the real binary.

use forager_bench::sites::server::{Site, SiteRequest, SiteResponse};
use hyper::header::{self, HeaderValue};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;

const HOST: &str = "nginx.test";
const OCTET: &str = "application/octet-stream";

/// Path → (body, Content-Disposition): every file as `application/octet-stream`.
fn files() -> Vec<(&'static str, &'static [u8], Option<&'static str>)> {
    vec![
        ("/data/pop.csv", b"year,pop\n2024,10\n", None),
        (
            "/nb/analysis.ipynb",
            b"{\n \"cells\": [],\n \"nbformat\": 4\n}\n",
            None,
        ),
        ("/src/run.py", b"print('hello')\n", None),
        // Named by the server only.
        (
            "/download",
            b"id,value\n3,x\n",
            Some("attachment; filename=\"report 2024.CSV\""),
        ),
        // Named by nothing: its bytes say PDF.
        ("/get", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", None),
        // Named by nothing, and its bytes say nothing either.
        ("/blob", b"\x00\x01\x02\x03 opaque", None),
    ]
}

struct Nginx;

impl Site for Nginx {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        if req.path == "/" {
            let links: String = files()
                .iter()
                .map(|(p, _, _)| {
                    let q = if p.starts_with("/download") || p.starts_with("/get") {
                        "?id=3"
                    } else {
                        ""
                    };
                    format!("<a href=\"{p}{q}\">{p}</a> ")
                })
                .collect();
            return SiteResponse::html(format!("<html><body>{links}</body></html>"));
        }
        for (path, body, disposition) in files() {
            if req.path == path {
                let mut resp = SiteResponse::ok(OCTET, body);
                if let Some(d) = disposition {
                    resp =
                        resp.with_header(header::CONTENT_DISPOSITION, HeaderValue::from_static(d));
                }
                return resp;
            }
        }
        SiteResponse::not_found()
    }
}

/// Each file gets the extension its name or its bytes give, its content
/// byte for byte, and its manifest row keeps the type the server sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_served_as_octet_stream_get_a_useful_extension() {
    let server = crate::harness::sites::serve_host(HOST, Arc::new(Nginx)).await;
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    // `mime` makes every octet-stream file a target, named or not; `ext`
    // adds Python sources to the preset's extensions.
    let job = crate::harness::JobFile::new("nginx")
        .seed(format!("http://{HOST}:{}/", server.port()))
        .strategy("bfs")
        .delay("0s")
        .set("targets", "mime", "[\"application/octet-stream\"]")
        .set("targets", "ext", "[\"py\"]")
        .write(tmp.path());
    crate::harness::Crawl::loopback(&job, &state)
        .resolve(HOST, server.port())
        .succeed()
        .await;
    let targets = state.join("targets").join("nginx");
    let text = std::fs::read_to_string(targets.join("manifest.jsonl")).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let url = url::Url::parse(v["final_url"].as_str().unwrap()).unwrap();
        rows.insert(url.path().to_string(), v);
    }
    let want = [
        ("/data/pop.csv", ".csv"),
        ("/nb/analysis.ipynb", ".ipynb"),
        ("/src/run.py", ".py"),
        ("/download", ".csv"),
        ("/get", ".pdf"),
        ("/blob", ""),
    ];
    for ((path, body, _), (wpath, ext)) in files().into_iter().zip(want) {
        assert_eq!(path, wpath);
        let row = rows
            .get(path)
            .unwrap_or_else(|| panic!("{path} not harvested:\n{text}"));
        let sha = hex::encode(Sha256::digest(body));
        assert_eq!(row["mime"], OCTET, "the served type is kept: {row}");
        assert_eq!(row["sha256"], sha.as_str(), "{row}");
        assert_eq!(row["file"], format!("{sha}{ext}").as_str(), "{path}: {row}");
        let saved = std::fs::read(targets.join(row["file"].as_str().unwrap())).unwrap();
        assert_eq!(saved, body, "{path}: byte for byte");
    }
    assert_eq!(rows.len(), want.len(), "{text}");
    let _ = server.shutdown().await;
}
