//! Hostile [`Site`]s for the loopback [`SiteServer`]: an honest little site
//! (two CSV targets, one behind a second page) with hostile resources linked
//! from its home page, and the body generators the hostile resources use.

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use bytes::Bytes;
use forager_bench::sites::{Body, Chunk, ChunkSource, Site, SiteRequest, SiteResponse};
use std::io::Write;

/// The honest targets every hostile site also serves; a crawl must still get them.
pub const HONEST_TARGETS: [&str; 2] = ["/ok-1.csv", "/ok-2.csv"];

type Overlay = dyn Fn(&SiteRequest) -> Option<SiteResponse> + Send + Sync;

/// An honest site plus hostile resources: `/` links to every path in
/// `hostile`, then to `/ok-1.csv` and `/page.html` (which links to
/// `/ok-2.csv`). `overlay` answers first; `None` falls back to the honest site.
pub struct HostileSite {
    hostile: Vec<String>,
    overlay: Box<Overlay>,
}

impl HostileSite {
    pub fn new(
        hostile: &[&str],
        overlay: impl Fn(&SiteRequest) -> Option<SiteResponse> + Send + Sync + 'static,
    ) -> Self {
        HostileSite {
            hostile: hostile.iter().map(|s| s.to_string()).collect(),
            overlay: Box::new(overlay),
        }
    }
}

impl Site for HostileSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        if let Some(resp) = (self.overlay)(req) {
            return resp;
        }
        honest(req.path.as_str(), &self.hostile)
    }
}

/// The honest part of every hostile site.
pub fn honest(path: &str, hostile: &[String]) -> SiteResponse {
    match path {
        "/" => SiteResponse::html(home_page(hostile)),
        "/page.html" => SiteResponse::html(
            "<html><body><p>More data: <a href=\"/ok-2.csv\">second file</a></p></body></html>",
        ),
        "/ok-1.csv" => SiteResponse::ok("text/csv", "year,value\n2024,1\n"),
        "/ok-2.csv" => SiteResponse::ok("text/csv", "year,value\n2025,2\n"),
        _ => SiteResponse::not_found(),
    }
}

/// The home page: hostile links first, then the honest ones.
pub fn home_page(hostile: &[String]) -> String {
    let mut page = String::from("<!DOCTYPE html><html><body><ul>\n");
    for h in hostile {
        page.push_str(&format!("<li><a href=\"{h}\">{h}</a></li>\n"));
    }
    page.push_str(
        "<li><a href=\"/ok-1.csv\">data</a></li>\n<li><a href=\"/page.html\">more</a></li>\n</ul></body></html>\n",
    );
    page
}

/// `200` with a content type and an encoded body sent as it is.
pub fn encoded(content_type: &'static str, encoding: &'static str, body: Body) -> SiteResponse {
    SiteResponse::new(StatusCode::OK)
        .with_header(header::CONTENT_TYPE, HeaderValue::from_static(content_type))
        .with_header(header::CONTENT_ENCODING, HeaderValue::from_static(encoding))
        .with_body(body)
}

/// A gzip stream of `total` zero bytes, compressed as the client reads it
/// (a 10 GiB bomb is about 10 MiB on the wire, produced only on demand).
pub struct GzipZeros {
    encoder: Option<flate2::write::GzEncoder<Vec<u8>>>,
    left: u64,
}

impl GzipZeros {
    pub fn new(total: u64) -> Self {
        GzipZeros {
            encoder: Some(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::fast(),
            )),
            left: total,
        }
    }
}

static ZEROS: [u8; 1 << 20] = [0; 1 << 20];

impl ChunkSource for GzipZeros {
    fn next_chunk(&mut self) -> Option<Chunk> {
        let mut encoder = self.encoder.take()?;
        if self.left == 0 {
            return encoder.finish().ok().map(|b| Chunk::Data(Bytes::from(b)));
        }
        let n = self.left.min(ZEROS.len() as u64) as usize;
        self.left -= n as u64;
        encoder.write_all(&ZEROS[..n]).ok()?;
        let out = std::mem::take(encoder.get_mut());
        self.encoder = Some(encoder);
        Some(Chunk::Data(Bytes::from(out)))
    }
}

/// An endless body repeating `unit`, 64 KiB per chunk.
pub struct Endless(pub Bytes);

impl Endless {
    pub fn of(unit: &str) -> Self {
        Endless(Bytes::from(unit.repeat((64 * 1024 / unit.len()).max(1))))
    }
}

impl ChunkSource for Endless {
    fn next_chunk(&mut self) -> Option<Chunk> {
        Some(Chunk::Data(self.0.clone()))
    }
}

/// A finite body of `total` bytes repeating `unit`, generated on demand.
pub struct Repeat {
    unit: Bytes,
    left: u64,
}

impl Repeat {
    pub fn new(unit: &str, total: u64) -> Self {
        Repeat {
            unit: Bytes::from(unit.repeat((64 * 1024 / unit.len()).max(1))),
            left: total,
        }
    }
}

impl ChunkSource for Repeat {
    fn next_chunk(&mut self) -> Option<Chunk> {
        if self.left == 0 {
            return None;
        }
        let n = self.left.min(self.unit.len() as u64) as usize;
        self.left -= n as u64;
        Some(Chunk::Data(self.unit.slice(..n)))
    }
}

/// `count` junk headers of `size` bytes each.
pub fn with_junk_headers(mut resp: SiteResponse, count: usize, size: usize) -> SiteResponse {
    let value = HeaderValue::from_str(&"j".repeat(size)).expect("ASCII header value");
    for i in 0..count {
        let name = HeaderName::from_bytes(format!("x-junk-{i}").as_bytes()).expect("header name");
        resp.headers.insert(name, value.clone());
    }
    resp
}

/// A brotli stream that inflates to 8 GiB of zeros (6 KiB on the wire).
pub fn brotli_bomb() -> Bytes {
    Bytes::from_static(include_bytes!("zeros-8gib.br"))
}
