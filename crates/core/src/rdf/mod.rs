//! Linked data: bytes of an RDF document → its statements (as N-Quads) and
//! the links they hold (ARCHITECTURE.md § Linked data).
//!
//! Owns: the `Accept` header of a linked-data job, telling an RDF syntax from
//! a response's type, its file name or its first bytes ([`syntax`]), and
//! parsing with the oxigraph project's parsers (`oxrdfio`: oxttl, oxrdfxml,
//! oxjsonld) into a bounded [`RdfDocument`] ([`document`]): statements,
//! errors, links and bytes of N-Quads per document, and RDF/XML's DTD
//! entities measured before the parser expands them ([`entities`]). Must not
//! touch: the network, the disk, the store, crawl decisions (whether a
//! document is a target is the engine's call, from the count this module
//! gives).

pub mod document;
pub mod entities;
pub mod syntax;

pub use document::{
    parse_document, parse_document_within, Follow, RdfCut, RdfDocument, RdfLimits, RdfLink,
    DEFAULT_MAX_STATEMENT_BYTES,
};
pub use syntax::{RdfSyntax, ACCEPT};
