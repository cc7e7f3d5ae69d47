//! Answering a request (the [`Site`] impl) and the bodies that are not HTML:
//! target files, images, page sources and variants.

use super::layout::{title_case, TargetKind, WORDS};
use super::render::paragraph;
use super::urls::{Route, Variant};
use super::SyntheticSite;
use crate::sites::rng::{hash, unit_of, Rng};
use crate::sites::server::{Site, SiteRequest, SiteResponse};
use axum::http::{header, HeaderValue, StatusCode};
use bytes::Bytes;
use std::fmt::Write as _;

impl SyntheticSite {
    fn target_body(&self, tgid: u64) -> Option<(&'static str, Bytes)> {
        let sec = self.target_section(tgid)?;
        let kind = self.target_kind(tgid, sec);
        let (lo, hi) = self.params.target_bytes;
        let u = unit_of(hash(self.params.seed, &[0x52, tgid]));
        let size = (f64::from(lo.max(64))
            * (f64::from(hi.max(lo.max(64))) / f64::from(lo.max(64))).powf(u))
            as usize;
        let mut rng = Rng::new(self.params.seed, &[0x53, tgid]);
        let mut out: Vec<u8> = Vec::with_capacity(size + 128);
        match kind {
            TargetKind::Csv => {
                out.extend_from_slice(b"year,region,indicator,value\n");
                while out.len() < size {
                    let _ = writeln!(
                        VecWriter(&mut out),
                        "{},R{:02},{},{}.{}",
                        2000 + rng.below(25),
                        rng.below(40),
                        rng.pick(&WORDS),
                        rng.below(100_000),
                        rng.below(10)
                    );
                }
            }
            TargetKind::Json => {
                let _ = write!(VecWriter(&mut out), "{{\"dataset\":{tgid},\"rows\":[");
                let mut first = true;
                while out.len() < size {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    let _ = write!(
                        VecWriter(&mut out),
                        "{{\"year\":{},\"indicator\":\"{}\",\"value\":{}}}",
                        2000 + rng.below(25),
                        rng.pick(&WORDS),
                        rng.below(1_000_000)
                    );
                }
                out.extend_from_slice(b"]}\n");
            }
            TargetKind::Pdf => {
                out.extend_from_slice(
                    b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\nstream\n",
                );
                fill_random(&mut out, size, &mut rng);
                out.extend_from_slice(b"\nendstream\n%%EOF\n");
            }
            TargetKind::Zip | TargetKind::Xlsx => {
                out.extend_from_slice(b"PK\x03\x04\x14\x00\x00\x00\x08\x00");
                fill_random(&mut out, size, &mut rng);
                out.extend_from_slice(b"PK\x05\x06");
            }
        }
        Some((kind.mime(), Bytes::from(out)))
    }
}

impl Site for SyntheticSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let Some(route) = self.route(&req.path, req.query.as_deref()) else {
            return SiteResponse::not_found();
        };
        match route {
            Route::Robots => SiteResponse::ok("text/plain", self.robots.clone()),
            Route::Css => SiteResponse::ok("text/css", self.css.clone()),
            Route::Page { gid, sort } => match self.render_page(gid, sort) {
                Some(html) => SiteResponse::html(html),
                None => SiteResponse::not_found(),
            },
            Route::Target(tgid) => match self.target_body(tgid) {
                Some((mime, body)) => SiteResponse::ok(mime, body),
                None => SiteResponse::not_found(),
            },
            Route::Redirect { r, hop } => match self.redirect_plan(r) {
                Some((hops, dest)) => {
                    let location = if hop + 1 >= hops {
                        dest
                    } else {
                        Self::redirect_path(r, hop + 1)
                    };
                    // Mostly permanent, some temporary, as on real sites.
                    let status = if hash(self.params.seed, &[0x61, r, hop]) % 4 == 0 {
                        StatusCode::FOUND
                    } else {
                        StatusCode::MOVED_PERMANENTLY
                    };
                    SiteResponse::redirect(status, &location)
                }
                None => SiteResponse::not_found(),
            },
            Route::Image(n) => {
                let mut rng = Rng::new(self.params.seed, &[0x1B, n]);
                let mut png = PNG_1X1.to_vec();
                let size = 512 + rng.below(3584) as usize;
                fill_random(&mut png, size, &mut rng);
                SiteResponse::ok("image/png", png)
            }
            Route::Source(gid) => {
                let mut rng = Rng::new(self.params.seed, &[0xB0, gid]);
                let mut text = String::with_capacity(4096);
                for _ in 0..6 {
                    paragraph(&mut text, &mut rng);
                    text.push_str("\n\n");
                }
                SiteResponse::ok("text/plain", text)
            }
            Route::Variant { gid, kind } => {
                let mut rng = Rng::new(self.params.seed, &[0x7B, gid]);
                let mut text = String::with_capacity(4096);
                let title = title_case(&self.stem(0x71, gid, 4));
                match kind {
                    Variant::Source => {
                        let _ = write!(text, "{title}\n\n");
                        for _ in 0..6 {
                            paragraph(&mut text, &mut rng);
                            text.push_str("\n\n");
                        }
                        SiteResponse::ok("text/plain", text)
                    }
                    Variant::Raw => {
                        let _ = write!(text, "{title}\n{}\n\n", "=".repeat(title.len()));
                        for _ in 0..6 {
                            paragraph(&mut text, &mut rng);
                            text.push_str("\n\n");
                        }
                        SiteResponse::ok("text/x-rst", text)
                    }
                    Variant::Preview | Variant::Edit => {
                        let mut png = PNG_1X1.to_vec();
                        let size = 2048 + rng.below(8192) as usize;
                        fill_random(&mut png, size, &mut rng);
                        SiteResponse::ok("image/png", png)
                    }
                }
            }
            Route::Print(gid) => match self.print_page(gid) {
                Some(html) => SiteResponse::html(html),
                None => SiteResponse::not_found(),
            },
            Route::Calendar { year, month } => SiteResponse::html(self.calendar_page(year, month)),
            Route::Error(status) => SiteResponse::error(status),
        }
        .with_header(
            header::SERVER,
            HeaderValue::from_static("forager-synthetic"),
        )
    }

    fn is_trap(&self, path_and_query: &str) -> bool {
        self.params.calendar_trap && path_and_query.starts_with("/calendar/")
    }
}

fn fill_random(out: &mut Vec<u8>, size: usize, rng: &mut Rng) {
    while out.len() < size {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
}

/// A valid 1×1 PNG; images are this plus padding.
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

/// `fmt::Write` over a byte vector.
struct VecWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}
