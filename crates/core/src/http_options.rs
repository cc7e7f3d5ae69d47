//! What a job adds to its requests: extra headers, per-host cookies, headers
//! and HTTP basic auth, a proxy, and extra trusted certificate authorities.
//!
//! Credentials go only to the hosts they name: the engine follows redirects
//! hop by hop, and every hop picks its own host's settings, so a redirect to
//! another host never carries them along. Secret values are
//! [`HeaderValue::set_sensitive`] (redacted in WARC request records) and
//! never printed by `Debug`.

use http::header::{HeaderName, HeaderValue};
use url::Url;

/// A job's request options; the default adds nothing and uses no proxy.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HttpOptions {
    /// Sent with every request of the job.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Per-host settings; the first whose pattern matches a request's host applies.
    pub hosts: Vec<HostOptions>,
    /// Every request of the job goes through this HTTP(S) proxy.
    pub proxy: Option<Url>,
    /// Roots trusted for https besides the built-in ones (`ca_file`).
    pub ca: Option<CaFile>,
}

/// The PEM certificates of `[http] ca_file`, read and checked when the
/// config is read (a job that cannot trust its hosts fails at `check`,
/// not at its first https request).
#[derive(Clone, PartialEq, Eq)]
pub struct CaFile {
    /// The file as the config names it (for messages).
    pub path: String,
    /// The DER of each `CERTIFICATE` block, in file order; never empty.
    pub certificates: Vec<Vec<u8>>,
}

impl std::fmt::Debug for CaFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaFile")
            .field("path", &self.path)
            .field("certificates", &self.certificates.len())
            .finish()
    }
}

/// Longest `ca_file` read: a bundle of every public root is ~250 KiB.
pub const MAX_CA_FILE: usize = 4 << 20;

impl CaFile {
    /// The certificates of a PEM text: every `CERTIFICATE` block, decoded.
    /// Other blocks (a private key put there by mistake) are an error, as
    /// are a file with no certificate and a block that is not base64 or not
    /// DER; the reason names the block.
    pub fn parse_pem(path: &str, text: &str) -> Result<CaFile, String> {
        use base64::Engine as _;
        let mut certificates = Vec::new();
        let mut lines = text.lines().map(str::trim).enumerate();
        while let Some((n, line)) = lines.next() {
            let Some(label) = line
                .strip_prefix("-----BEGIN ")
                .and_then(|l| l.strip_suffix("-----"))
            else {
                continue;
            };
            let at = n + 1;
            if label != "CERTIFICATE" {
                return Err(format!(
                    "line {at}: a {label} block; ca_file holds CERTIFICATE blocks only (the CA's certificate, never a key)"
                ));
            }
            let end = format!("-----END {label}-----");
            let mut body = String::new();
            let mut closed = false;
            for (_, l) in lines.by_ref() {
                if l == end {
                    closed = true;
                    break;
                }
                body.push_str(l);
            }
            if !closed {
                return Err(format!("line {at}: the certificate has no {end} line"));
            }
            let der = base64::engine::general_purpose::STANDARD
                .decode(body.as_bytes())
                .map_err(|e| format!("line {at}: the certificate is not valid base64 ({e})"))?;
            // A certificate is a DER SEQUENCE; anything else is not one.
            if der.len() < 16 || der[0] != 0x30 {
                return Err(format!(
                    "line {at}: the block does not hold a DER certificate"
                ));
            }
            certificates.push(der);
        }
        if certificates.is_empty() {
            return Err(
                "no certificate in it: expected PEM blocks between -----BEGIN CERTIFICATE----- and -----END CERTIFICATE-----"
                    .to_string(),
            );
        }
        Ok(CaFile {
            path: path.to_string(),
            certificates,
        })
    }
}

/// What requests to some hosts carry besides the job's headers.
#[derive(Clone, PartialEq, Eq)]
pub struct HostOptions {
    pub pattern: HostPattern,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The whole `Cookie` header (sensitive).
    pub cookie: Option<HeaderValue>,
    /// `Authorization: Basic …` (sensitive).
    pub authorization: Option<HeaderValue>,
}

/// Which hosts a [`HostOptions`] applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostPattern {
    /// This host name only (lower-case, no trailing dot).
    Exact(String),
    /// `*.example.org`: the domain and every name under it.
    Domain(String),
}

impl HostPattern {
    /// Parses `example.org` or `*.example.org`.
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let lower = text.trim_end_matches('.').to_ascii_lowercase();
        let (domain, wildcard) = match lower.strip_prefix("*.") {
            Some(rest) => (rest.to_string(), true),
            None => (lower, false),
        };
        let valid = !domain.is_empty()
            && domain.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !valid {
            return Err(format!(
                "{text:?} is not a host name (example.org, or *.example.org for the domain and its subdomains)"
            ));
        }
        Ok(if wildcard {
            HostPattern::Domain(domain)
        } else {
            HostPattern::Exact(domain)
        })
    }

    pub fn matches(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        match self {
            HostPattern::Exact(name) => host.eq_ignore_ascii_case(name),
            HostPattern::Domain(domain) => {
                host.eq_ignore_ascii_case(domain)
                    || host.len() > domain.len()
                        && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
                        && host[host.len() - domain.len()..].eq_ignore_ascii_case(domain)
            }
        }
    }
}

impl HttpOptions {
    /// Whether the options add nothing.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
            && self.hosts.is_empty()
            && self.proxy.is_none()
            && self.ca.is_none()
    }

    /// The headers a request to `url` carries: the job's, then its host's
    /// (which win on the same name), then cookie and authorization.
    pub fn headers_for<'a>(
        &'a self,
        url: &Url,
    ) -> impl Iterator<Item = (&'a HeaderName, &'a HeaderValue)> + 'a {
        let host = url.host_str().unwrap_or_default();
        let own = self.hosts.iter().find(|h| h.pattern.matches(host));
        let overridden =
            move |name: &HeaderName| own.is_some_and(|h| h.headers.iter().any(|(n, _)| n == name));
        let job = self
            .headers
            .iter()
            .filter(move |(n, _)| !overridden(n))
            .map(|(n, v)| (n, v));
        let host_headers = own.into_iter().flat_map(|h| {
            let cookie = h.cookie.iter().map(|v| (&http::header::COOKIE, v));
            let auth = h
                .authorization
                .iter()
                .map(|v| (&http::header::AUTHORIZATION, v));
            h.headers
                .iter()
                .map(|(n, v)| (n, v))
                .chain(cookie)
                .chain(auth)
        });
        job.chain(host_headers)
    }

    /// `self` over `defaults` (the daemon config's `[http]`): the job's
    /// headers win by name, its host settings come first, its proxy wins.
    pub fn over(&self, defaults: &HttpOptions) -> HttpOptions {
        let mut headers = self.headers.clone();
        for (name, value) in &defaults.headers {
            if !headers.iter().any(|(n, _)| n == name) {
                headers.push((name.clone(), value.clone()));
            }
        }
        let mut hosts = self.hosts.clone();
        hosts.extend(defaults.hosts.iter().cloned());
        HttpOptions {
            headers,
            hosts,
            proxy: self.proxy.clone().or_else(|| defaults.proxy.clone()),
            ca: self.ca.clone().or_else(|| defaults.ca.clone()),
        }
    }
}

/// `Authorization: Basic base64(user:password)`, marked sensitive.
pub fn basic_authorization(user: &str, password: &str) -> Result<HeaderValue, String> {
    use base64::Engine as _;
    if user.contains(':') {
        return Err("a basic-auth user name cannot contain ':'".into());
    }
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let mut value = HeaderValue::from_str(&format!("Basic {token}"))
        .map_err(|_| "the user name or password makes an invalid header".to_string())?;
    value.set_sensitive(true);
    Ok(value)
}

/// A proxy URL with its password hidden, for messages and `Debug`.
pub fn redacted_proxy(proxy: &Url) -> String {
    let mut shown = proxy.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("***"));
    }
    shown.to_string()
}

/// Names and values, sensitive values hidden.
struct ShownHeaders<'a>(&'a [(HeaderName, HeaderValue)]);

impl std::fmt::Debug for ShownHeaders<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(n, v)| (n.as_str(), v)))
            .finish()
    }
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("headers", &ShownHeaders(&self.headers))
            .field("hosts", &self.hosts)
            .field("proxy", &self.proxy.as_ref().map(redacted_proxy))
            .field("ca", &self.ca)
            .finish()
    }
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // HeaderValue's Debug prints `Sensitive` for the secrets.
        f.debug_struct("HostOptions")
            .field("pattern", &self.pattern)
            .field("headers", &ShownHeaders(&self.headers))
            .field("cookie", &self.cookie)
            .field("authorization", &self.authorization)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(n: &str, v: &str) -> (HeaderName, HeaderValue) {
        (
            HeaderName::from_bytes(n.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        )
    }

    fn options() -> HttpOptions {
        let mut cookie = HeaderValue::from_static("session=s3cret");
        cookie.set_sensitive(true);
        HttpOptions {
            headers: vec![header("x-team", "data"), header("accept-language", "en")],
            hosts: vec![HostOptions {
                pattern: HostPattern::parse("*.Example.org").unwrap(),
                headers: vec![header("accept-language", "fr")],
                cookie: Some(cookie),
                authorization: Some(basic_authorization("alice", "pa55").unwrap()),
            }],
            proxy: Some(Url::parse("http://bob:proxypw@proxy.lan:3128/").unwrap()),
            ca: None,
        }
    }

    fn sent(o: &HttpOptions, url: &str) -> Vec<(String, String)> {
        o.headers_for(&Url::parse(url).unwrap())
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect()
    }

    #[test]
    fn credentials_go_to_their_hosts_only() {
        let o = options();
        let other = sent(&o, "http://example.com/x");
        assert_eq!(
            other,
            vec![
                ("x-team".into(), "data".into()),
                ("accept-language".into(), "en".into())
            ]
        );
        for url in ["http://example.org/", "https://data.EXAMPLE.org./a"] {
            let own = sent(&o, url);
            assert!(
                own.contains(&("cookie".into(), "session=s3cret".into())),
                "{own:?}"
            );
            assert!(own.contains(&("authorization".into(), "Basic YWxpY2U6cGE1NQ==".into())));
            // The host's header replaces the job's of the same name.
            assert!(own.contains(&("accept-language".into(), "fr".into())));
            assert!(!own.contains(&("accept-language".into(), "en".into())));
        }
        // Not a subdomain, only a similar name.
        assert_eq!(sent(&o, "http://badexample.org/").len(), 2);
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let text = format!("{:?}", options());
        for secret in ["s3cret", "pa55", "YWxpY2U6cGE1NQ", "proxypw"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("proxy.lan"), "{text}");
        assert!(text.contains("x-team"), "{text}");
    }

    #[test]
    fn job_settings_win_over_the_daemons() {
        let job = HttpOptions {
            headers: vec![header("accept-language", "de")],
            ..Default::default()
        };
        let merged = job.over(&options());
        assert_eq!(merged.headers[0], header("accept-language", "de"));
        assert_eq!(merged.headers.len(), 2, "x-team from the daemon");
        assert_eq!(merged.hosts.len(), 1);
        assert_eq!(merged.proxy, options().proxy);
    }

    #[test]
    fn a_ca_file_holds_certificates_and_says_what_is_wrong_otherwise() {
        let der = "MIIBszCCAVmgAwIBAgIUQ0ZBQ0VDQUZFQ0FGRUNBRkVDQUZFMAoGCCqGSM49BAMC";
        let pem =
            format!("a comment\n-----BEGIN CERTIFICATE-----\n{der}\n-----END CERTIFICATE-----\n");
        let ca = CaFile::parse_pem("ca.pem", &pem).unwrap();
        assert_eq!(ca.certificates.len(), 1);
        assert_eq!(ca.certificates[0][0], 0x30);
        let two = format!("{pem}{pem}");
        assert_eq!(
            CaFile::parse_pem("ca.pem", &two)
                .unwrap()
                .certificates
                .len(),
            2
        );
        let err = |text: &str| CaFile::parse_pem("ca.pem", text).unwrap_err();
        assert!(err("").contains("no certificate"), "{}", err(""));
        assert!(err("hello").contains("no certificate"));
        let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert!(
            err(key).contains("line 1: a PRIVATE KEY block"),
            "{}",
            err(key)
        );
        let open = "-----BEGIN CERTIFICATE-----\nMIIB\n";
        assert!(err(open).contains("no -----END CERTIFICATE----- line"));
        let bad = "\n-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        assert!(
            err(bad).contains("line 2: the certificate is not valid base64"),
            "{}",
            err(bad)
        );
        let not_der = "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQsIGhlbGxvIHdvcmxk\n-----END CERTIFICATE-----\n";
        assert!(err(not_der).contains("does not hold a DER certificate"));
        // Debug shows the file and a count, never the bytes.
        assert_eq!(
            format!("{ca:?}"),
            "CaFile { path: \"ca.pem\", certificates: 1 }"
        );
    }

    #[test]
    fn host_patterns() {
        assert!(HostPattern::parse("").is_err());
        assert!(HostPattern::parse("a b.org").is_err());
        assert!(HostPattern::parse("*.").is_err());
        assert!(HostPattern::parse("http://x.org").is_err());
        let exact = HostPattern::parse("X.org").unwrap();
        assert!(exact.matches("x.org") && !exact.matches("a.x.org"));
        assert!(basic_authorization("a:b", "c").is_err());
    }
}
