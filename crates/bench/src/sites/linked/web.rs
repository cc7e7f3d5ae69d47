//! A linked-data web's parameters and how its hosts are named: what every
//! shape ([`super`]'s own and [`super::shapes`]') shares. The pages a host
//! serves are not here.

/// The parameters of a linked-data web; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkedWeb {
    pub hosts: usize,
    /// Things (or pages) per host.
    pub per_host: usize,
    pub seed: u64,
    pub shape: Shape,
    /// Every host under one registrable domain (`lod001.web.test`), so that
    /// politeness per pay-level domain makes the web one key; else each host
    /// is a registrable domain of its own (`lod001.test`).
    pub one_domain: bool,
}

/// How a web is laid out: the module's own (the web every figure of
/// `ldcoc` was tuned on), or one of [`super::shapes`]'s, never used
/// for tuning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// This module's web: RDF common, 303s, dumps and web hosts.
    Classic,
    /// RDF rare and buried under HTML, files and dead links.
    Sparse,
    /// Conneg-only hosts: no RDF file name anywhere.
    Conneg,
}

impl Shape {
    /// The web's name on the command line (`forager bench --site NAME:…`).
    pub fn name(self) -> &'static str {
        match self {
            Shape::Classic => "linked",
            Shape::Sparse => "linked-sparse",
            Shape::Conneg => "linked-conneg",
        }
    }

    /// The first label of its host names.
    fn prefix(self) -> &'static str {
        match self {
            Shape::Classic => "lod",
            Shape::Sparse => "sp",
            Shape::Conneg => "kb",
        }
    }
}

impl LinkedWeb {
    /// The same web with every host under one registrable domain.
    pub fn under_one_domain(self) -> LinkedWeb {
        LinkedWeb {
            one_domain: true,
            ..self
        }
    }

    pub fn host_name(&self, i: usize) -> String {
        let prefix = self.shape.prefix();
        if self.one_domain {
            format!("{prefix}{i:03}.web.test")
        } else {
            format!("{prefix}{i:03}.test")
        }
    }

    /// The index of a host of this web, from its name.
    pub(super) fn host_index(&self, host: &str) -> Option<usize> {
        let tld = if self.one_domain {
            ".web.test"
        } else {
            ".test"
        };
        let digits = host.strip_prefix(self.shape.prefix())?.strip_suffix(tld)?;
        // Only the names host_name gives (three digits or more, no sign).
        if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().filter(|&i| i < self.hosts)
    }

    /// The host index and path of a URI of this web.
    pub(super) fn split<'u>(&self, uri: &'u str) -> Option<(usize, &'u str)> {
        let rest = uri.strip_prefix("http://")?;
        let (host, path) = rest.split_at(rest.find('/')?);
        Some((self.host_index(host)?, path))
    }
}
