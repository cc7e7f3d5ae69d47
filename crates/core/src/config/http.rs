//! The `[http]` table of a job file and of the daemon config: extra request
//! headers, per-host cookies, headers and basic auth, and a proxy.
//!
//! ```toml
//! [http]
//! headers = { "Accept-Language" = "en" }
//! proxy = "http://proxy.example.org:3128"
//! [http.hosts."data.example.org"]
//! cookies = { session = "…" }
//! user = "alice"
//! password_file = "/etc/forager/alice.pw"   # or password_env, or password
//! ```
//!
//! and `ca_file = "/etc/forager/ca.pem"`: certificate authorities trusted
//! for https besides the built-in roots.

use http::header::{HeaderName, HeaderValue};
use url::Url;

use super::reader::{Node, Reader, Table};
use crate::http_options::{
    basic_authorization, CaFile, HostOptions, HostPattern, HttpOptions, MAX_CA_FILE,
};

/// Fields of `[http]`.
pub(crate) const HTTP_FIELDS: &[&str] = &["headers", "proxy", "hosts", "ca_file"];
/// Fields of `[http.hosts."NAME"]`.
const HOST_FIELDS: &[&str] = &[
    "headers",
    "cookies",
    "user",
    "password",
    "password_env",
    "password_file",
];

/// Headers forager sets itself, or that would break the exchange.
const MANAGED_HEADERS: &[&str] = &[
    "host",
    "user-agent",
    "accept-encoding",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "proxy-authorization",
];

/// Longest secret file read (a password, not a key ring).
const MAX_SECRET_FILE: u64 = 64 * 1024;

/// Reads `[http]`; `None` when it had errors (recorded in `r`).
pub(crate) fn read_http(r: &mut Reader<'_>, t: &Table<'_>) -> Option<HttpOptions> {
    let headers = match t.get("headers") {
        Some(node) => read_headers(r, &t.child("headers"), node, HeaderScope::Job),
        None => Some(Vec::new()),
    };
    let proxy = match t.get("proxy") {
        Some(node) => read_proxy(r, &t.child("proxy"), node).map(Some),
        None => Some(None),
    };
    let hosts = match t.get("hosts") {
        Some(node) => read_hosts(r, &t.child("hosts"), node),
        None => Some(Vec::new()),
    };
    let ca = match t.get("ca_file") {
        Some(node) => read_ca_file(r, &t.child("ca_file"), node).map(Some),
        None => Some(None),
    };
    Some(HttpOptions {
        headers: headers?,
        hosts: hosts?,
        proxy: proxy?,
        ca: ca?,
    })
}

/// `ca_file`: a PEM file of certificate authorities to trust besides the
/// built-in roots (a private CA, a test CA), read and checked now.
fn read_ca_file(r: &mut Reader<'_>, field: &str, node: Node<'_>) -> Option<CaFile> {
    use std::io::Read as _;
    let named = r.string(field, node)?;
    let resolved = r.path_in_file(named);
    let path = &*resolved.to_string_lossy();
    let read = std::fs::File::open(&resolved).and_then(|f| {
        let mut bytes = Vec::new();
        f.take(MAX_CA_FILE as u64 + 1).read_to_end(&mut bytes)?;
        Ok(bytes)
    });
    let bytes = match read {
        Ok(b) if b.len() > MAX_CA_FILE => {
            r.invalid(
                field,
                node,
                format!("{path} is larger than {MAX_CA_FILE} bytes: not a certificate file"),
            );
            return None;
        }
        Ok(b) => b,
        Err(e) => {
            r.invalid(field, node, format!("cannot read {path}: {e}"));
            return None;
        }
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        r.invalid(
            field,
            node,
            format!("{path} is not a PEM text file (a DER certificate? convert it with `openssl x509 -inform der -in FILE -out FILE.pem`)"),
        );
        return None;
    };
    match CaFile::parse_pem(path, text) {
        Ok(ca) => Some(ca),
        Err(why) => {
            r.invalid(field, node, format!("{path}: {why}"));
            None
        }
    }
}

fn read_proxy(r: &mut Reader<'_>, field: &str, node: Node<'_>) -> Option<Url> {
    let text = r.string(field, node)?;
    let url = match Url::parse(text) {
        Ok(u) => u,
        Err(e) => {
            r.invalid(field, node, format!("not a URL ({e})"));
            return None;
        }
    };
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        r.invalid(
            field,
            node,
            "must be an http:// or https:// URL with a host (http://[user:password@]proxy:port)",
        );
        return None;
    }
    Some(url)
}

/// Where a `headers` table sits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HeaderScope {
    /// `[http] headers`: sent to every host, so no credentials.
    Job,
    /// `[http.hosts."NAME"] headers`: `Authorization` (a bearer token…) and
    /// `Cookie` allowed, and kept secret.
    Host,
}

/// Headers that carry credentials: never in `[http] headers`, secret under a host.
const CREDENTIAL_HEADERS: &[&str] = &["authorization", "cookie"];

/// A table whose every value is a string, each entry checked by `check`
/// (key, value) → an item or the reason it is refused; `None` when any was.
fn read_string_table<T>(
    r: &mut Reader<'_>,
    field: &str,
    node: Node<'_>,
    mut check: impl FnMut(&str, &str) -> Result<T, String>,
) -> Option<Vec<T>> {
    let t = r.open_table(field, node)?;
    let mut out = Vec::new();
    let mut ok = true;
    for (key, _, value) in t.entries() {
        let path = t.child(key);
        let checked = r
            .string(&path, value)
            .map(|text| check(key, text).map_err(|why| r.invalid(&path, value, why)));
        match checked {
            Some(Ok(item)) => out.push(item),
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

/// A table of header name → value.
fn read_headers(
    r: &mut Reader<'_>,
    field: &str,
    node: Node<'_>,
    scope: HeaderScope,
) -> Option<Vec<(HeaderName, HeaderValue)>> {
    read_string_table(r, field, node, |key, text| {
        let name = HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| "not a valid header name".to_string())?;
        if MANAGED_HEADERS.contains(&name.as_str()) {
            let how = match name.as_str() {
                "user-agent" => "set politeness.user_agent instead",
                "proxy-authorization" => "put the user and password in the proxy URL instead",
                _ => "forager sets it itself",
            };
            return Err(format!("{name} cannot be set here: {how}"));
        }
        let credential = CREDENTIAL_HEADERS.contains(&name.as_str());
        if credential && scope == HeaderScope::Job {
            // Credentials belong to one host: `[http.hosts."NAME"]` keeps them there.
            return Err(format!(
                "{name} goes under [http.hosts.\"HOST\"] (headers, cookies, or user and password), so it is only sent to that host"
            ));
        }
        let mut value = HeaderValue::from_str(text)
            .map_err(|_| "not a valid header value (control characters?)".to_string())?;
        value.set_sensitive(credential);
        Ok((name, value))
    })
}

fn read_hosts(r: &mut Reader<'_>, field: &str, node: Node<'_>) -> Option<Vec<HostOptions>> {
    let t = r.open_table(field, node)?;
    let mut hosts = Vec::new();
    let mut ok = true;
    for (key, _, value) in t.entries() {
        let path = t.child(key);
        let pattern = match HostPattern::parse(key) {
            Ok(p) => Some(p),
            Err(why) => {
                r.invalid(&path, value, why);
                None
            }
        };
        let options = r
            .table(&path, value, HOST_FIELDS)
            .and_then(|h| read_host(r, &h, pattern));
        match options {
            Some(options) => hosts.push(options),
            None => ok = false,
        }
    }
    ok.then_some(hosts)
}

/// One host's table; `pattern` is `None` when its name was refused (its
/// fields are still checked, so every error is reported at once).
fn read_host(
    r: &mut Reader<'_>,
    t: &Table<'_>,
    pattern: Option<HostPattern>,
) -> Option<HostOptions> {
    let headers = match t.get("headers") {
        Some(node) => read_headers(r, &t.child("headers"), node, HeaderScope::Host),
        None => Some(Vec::new()),
    };
    let cookie = match t.get("cookies") {
        Some(node) => read_cookies(r, &t.child("cookies"), node).map(Some),
        None => Some(None),
    };
    let authorization = read_basic_auth(r, t);
    Some(HostOptions {
        pattern: pattern?,
        headers: headers?,
        cookie: cookie?,
        authorization: authorization?,
    })
}

/// `cookies = { name = "value" }` as one sensitive `Cookie` header.
fn read_cookies(r: &mut Reader<'_>, field: &str, node: Node<'_>) -> Option<HeaderValue> {
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b))
    };
    let cookie_value = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_graphic() && !b"\",;\\".contains(&b))
    };
    let pairs = read_string_table(r, field, node, |key, text| {
        if !token(key) {
            Err("not a valid cookie name".to_string())
        } else if !cookie_value(text) {
            Err(
                "not a valid cookie value (no spaces, quotes, commas, semicolons or backslashes)"
                    .to_string(),
            )
        } else {
            Ok(format!("{key}={text}"))
        }
    })?;
    let mut v = HeaderValue::from_str(&pairs.join("; ")).ok()?;
    v.set_sensitive(true);
    Some(v)
}

/// `user` with one of `password`, `password_env`, `password_file`.
fn read_basic_auth(r: &mut Reader<'_>, t: &Table<'_>) -> Option<Option<HeaderValue>> {
    let user = match t.get("user") {
        Some(node) => Some(r.string(&t.child("user"), node)?),
        None => None,
    };
    let sources: Vec<(&str, Node<'_>)> = ["password", "password_env", "password_file"]
        .into_iter()
        .filter_map(|k| t.get(k).map(|n| (k, n)))
        .collect();
    let (user, (source, node)) = match (user, sources.as_slice()) {
        (None, []) => return Some(None),
        (Some(user), [one]) => (user, *one),
        (None, [(k, n), ..]) => {
            r.invalid(&t.child(k), *n, "a password needs a user");
            return None;
        }
        (Some(_), []) => {
            let node = t.get("user")?;
            r.invalid(
                &t.child("user"),
                node,
                "a user needs one of password, password_env, password_file",
            );
            return None;
        }
        (Some(_), [_, (k, n), ..]) => {
            r.invalid(
                &t.child(k),
                *n,
                "give only one of password, password_env, password_file",
            );
            return None;
        }
    };
    let field = t.child(source);
    let text = r.string(&field, node)?;
    let password = match source {
        "password" => text.to_string(),
        "password_env" => match std::env::var(text) {
            Ok(p) => p,
            Err(_) => {
                r.invalid(
                    &field,
                    node,
                    format!("environment variable {text} is not set (or not UTF-8)"),
                );
                return None;
            }
        },
        _ => match read_secret_file(&r.path_in_file(text)) {
            Ok(p) => p,
            Err(why) => {
                r.invalid(&field, node, why);
                return None;
            }
        },
    };
    match basic_authorization(user, &password) {
        Ok(v) => Some(Some(v)),
        Err(why) => {
            r.invalid(&t.child("user"), node, why);
            None
        }
    }
}

/// A password file's first line (a trailing newline is not part of it).
pub(crate) fn read_secret_file(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read as _;
    let path_text = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {path_text}: {e}"))?;
    let mut text = String::new();
    file.take(MAX_SECRET_FILE)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {path_text}: {e}"))?;
    Ok(text.lines().next().unwrap_or_default().to_string())
}
