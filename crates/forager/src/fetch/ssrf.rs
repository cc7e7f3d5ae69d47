//! SSRF guard: which addresses a crawler must never connect to, and a DNS
//! resolver that filters them out of every lookup.
//!
//! The check runs on the addresses handed to the connector, so a name that
//! resolves to a public address once and to 127.0.0.1 the next time (DNS
//! rebinding) is still refused. IP-literal URLs never reach a resolver and are
//! checked by [`Fetcher::send`](super::Fetcher::send).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Whether a crawler must refuse to connect to `ip` (unless `allow_private`).
///
/// Refused: unspecified, loopback, private (10/8, 172.16/12, 192.168/16),
/// link-local, multicast, broadcast, "this network" 0/8, CGNAT 100.64/10,
/// IETF 192.0.0/24, documentation, benchmarking 198.18/15, reserved 240/4;
/// IPv6 unspecified, loopback, multicast, ULA fc00::/7, link-local fe80::/10,
/// site-local fec0::/10, documentation 2001:db8::/32, discard 100::/64,
/// Teredo 2001::/32, IPv4-compatible ::/96, and IPv4-mapped, NAT64
/// (64:ff9b::/96) or 6to4 (2002::/16) addresses whose embedded IPv4 is refused.
pub fn is_forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_forbidden_v4(v4),
        IpAddr::V6(v6) => is_forbidden_v6(v6),
    }
}

fn is_forbidden_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || o[0] == 0 // "this network"
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // CGNAT 100.64/10
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking 198.18/15
        || o[0] >= 240 // reserved 240/4
}

fn is_forbidden_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_forbidden_v4(v4);
    }
    // NAT64 and 6to4 gateways would forward to the embedded IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return is_forbidden_v4(embedded_v4(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return is_forbidden_v4(embedded_v4(s[1], s[2]));
    }
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || s[0..6] == [0, 0, 0, 0, 0, 0] // IPv4-compatible ::/96 (deprecated)
        || (s[0] & 0xfe00) == 0xfc00 // ULA fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x2001 && s[1] == 0) // Teredo: the IPv4 inside is obfuscated
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    let [a, b] = hi.to_be_bytes();
    let [c, d] = lo.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// The error a lookup returns when every address of a name is refused.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves only to refused addresses (first: {addr})")]
pub(crate) struct ForbiddenAddress {
    pub(crate) host: String,
    pub(crate) addr: IpAddr,
}

/// The error a lookup returns when a name has no address at all.
#[derive(Debug, thiserror::Error)]
#[error("{0} has no address")]
struct NoAddress(String);

/// A resolver that applies the trusted overrides of the configuration, then
/// resolves with tokio and drops refused addresses.
pub(crate) struct GuardedResolver {
    /// Lower-cased host name → addresses; trusted even when private.
    overrides: HashMap<String, Vec<SocketAddr>>,
    /// Lower-cased host names resolved normally but not guarded (proxies).
    trusted: std::collections::HashSet<String>,
    allow_private: bool,
}

impl GuardedResolver {
    pub(crate) fn new(overrides: &[(String, SocketAddr)], allow_private: bool) -> Self {
        let mut map: HashMap<String, Vec<SocketAddr>> = HashMap::new();
        for (host, addr) in overrides {
            map.entry(normalise_host(host)).or_default().push(*addr);
        }
        GuardedResolver {
            overrides: map,
            trusted: std::collections::HashSet::new(),
            allow_private,
        }
    }

    /// Resolve `host` without the guard: a proxy the configuration names.
    pub(crate) fn trust(&mut self, host: &str) {
        self.trusted.insert(normalise_host(host));
    }

    /// Whether the configuration maps this host by hand (and so trusts it).
    #[cfg(test)]
    pub(crate) fn is_override(&self, host: &str) -> bool {
        self.overrides.contains_key(&normalise_host(host))
    }
}

fn normalise_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Keeps the allowed addresses; fails with the first refused one when none is left.
pub(crate) fn filter_addrs(
    host: &str,
    addrs: Vec<SocketAddr>,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
    if allow_private {
        return if addrs.is_empty() {
            Err(Box::new(NoAddress(host.to_string())))
        } else {
            Ok(addrs)
        };
    }
    let first_refused = addrs.iter().find(|a| is_forbidden_ip(a.ip())).copied();
    let allowed: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|a| !is_forbidden_ip(a.ip()))
        .collect();
    match (allowed.is_empty(), first_refused) {
        (false, _) => Ok(allowed),
        (true, Some(addr)) => Err(Box::new(ForbiddenAddress {
            host: host.to_string(),
            addr: addr.ip(),
        })),
        (true, None) => Err(Box::new(NoAddress(host.to_string()))),
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = normalise_host(name.as_str());
        if let Some(addrs) = self.overrides.get(&host) {
            let addrs = addrs.clone();
            return Box::pin(async move { Ok(Box::new(addrs.into_iter()) as Addrs) });
        }
        let allow_private = self.allow_private || self.trusted.contains(&host);
        Box::pin(async move {
            // Port 0: the connector substitutes the URL's port.
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept = filter_addrs(&host, found, allow_private)?;
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v4(s: &str) -> bool {
        is_forbidden_ip(s.parse::<Ipv4Addr>().unwrap().into())
    }
    fn v6(s: &str) -> bool {
        is_forbidden_ip(s.parse::<Ipv6Addr>().unwrap().into())
    }

    #[test]
    fn ipv4_refused_ranges() {
        for ip in [
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254", // cloud metadata
            "224.0.0.1",
            "239.255.255.250",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "198.19.255.255",
            "240.0.0.1",
        ] {
            assert!(v4(ip), "{ip} must be refused");
        }
    }

    #[test]
    fn ipv4_public_allowed() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.15.255.255", // just below 172.16/12
            "172.32.0.1",     // just above
            "100.63.255.255", // just below CGNAT
            "100.128.0.1",    // just above
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.1",
            "11.0.0.1",
            "223.255.255.255",
        ] {
            assert!(!v4(ip), "{ip} must be allowed");
        }
    }

    #[test]
    fn ipv6_refused_ranges() {
        for ip in [
            "::",
            "::1",
            "ff02::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::127.0.0.1",                          // IPv4-compatible
            "64:ff9b::a00:1",                       // NAT64 of 10.0.0.1
            "2002:c0a8:0101::1",                    // 6to4 of 192.168.1.1
            "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo
            "100::1",
        ] {
            assert!(v6(ip), "{ip} must be refused");
        }
    }

    #[test]
    fn ipv6_public_allowed() {
        for ip in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:82b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",  // NAT64 of 8.8.8.8
            "2002:0808:0808::1", // 6to4 of 8.8.8.8
            "fbff::1",           // just below fc00::/7
            "fe00::1",           // between ULA and link-local
        ] {
            assert!(!v6(ip), "{ip} must be allowed");
        }
    }

    #[test]
    fn filter_keeps_public_and_refuses_all_private() {
        let public: SocketAddr = "8.8.8.8:0".parse().unwrap();
        let private: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let kept = filter_addrs("h", vec![private, public], false).unwrap();
        assert_eq!(kept, vec![public]);
        let err = filter_addrs("h", vec![private], false).unwrap_err();
        let forbidden = err.downcast_ref::<ForbiddenAddress>().unwrap();
        assert_eq!(forbidden.addr, private.ip());
        assert_eq!(
            filter_addrs("h", vec![private], true).unwrap(),
            vec![private]
        );
        assert!(filter_addrs("h", vec![], true).is_err());
    }

    #[test]
    fn overrides_are_case_and_dot_insensitive() {
        let r = GuardedResolver::new(
            &[("Site-A.test".to_string(), "127.0.0.1:8080".parse().unwrap())],
            false,
        );
        assert!(r.is_override("site-a.test"));
        assert!(r.is_override("SITE-A.TEST."));
        assert!(!r.is_override("site-b.test"));
    }

    proptest! {
        /// An IPv4-mapped IPv6 address is refused exactly when its IPv4 is.
        #[test]
        fn mapped_matches_v4(bits in any::<u32>()) {
            let ip = Ipv4Addr::from(bits);
            prop_assert_eq!(
                is_forbidden_ip(IpAddr::V6(ip.to_ipv6_mapped())),
                is_forbidden_ip(IpAddr::V4(ip))
            );
        }

        /// Every private, loopback or link-local IPv4 address is refused.
        #[test]
        fn std_special_v4_refused(bits in any::<u32>()) {
            let ip = Ipv4Addr::from(bits);
            if ip.is_private() || ip.is_loopback() || ip.is_link_local() || ip.is_multicast() {
                prop_assert!(is_forbidden_ip(IpAddr::V4(ip)));
            }
        }
    }
}
