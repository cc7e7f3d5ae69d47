//! The lol_html [`TransformController`] that drives the token stream: the
//! open elements as lol_html's selector VM tracks them, start and end tags
//! passed on to [`State`] and the collector, and the page's charset.

use super::start_tag::StartTag;
use super::state::State;
use crate::extract::structured::FrameId;
use encoding_rs::Encoding;
use lol_html::errors::RewritingError;
use lol_html::html_content::DocumentEnd;
use lol_html::StartTag as LolStartTag;
use lol_html::{
    AsciiCompatibleEncoding, LocalName, Namespace, OutputSink, SharedMemoryLimiter,
    StartTagHandlingResult, Tag, Token, TokenCaptureFlags, TransformController,
};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

// Only linked to by the docs below.
#[cfg(doc)]
use super::PageCut;

/// Charged to the parser's memory limiter per open element, in place of
/// what lol_html's selector VM charged for its own stack item (a name, two
/// vectors, counters and a handler descriptor: about this size by our count
/// of its fields, not measured), so a page nesting some 250 000 unclosed
/// elements is still cut as [`PageCut::ParserLimit`].
const OPEN_ELEMENT_BYTES: usize = 128;

/// One element open as lol_html's selector VM would track it, and who wants
/// to hear that it ended.
pub(super) struct OpenElement {
    name: LocalName<'static>,
    /// [`State`]'s frame, when it pushed one.
    frame: Option<u64>,
    /// The structured-data collector's frame, when it pushed one.
    collector: Option<FrameId>,
}

/// The start tag reported to [`Controller::handle_start_tag`], waiting for
/// its token.
pub(super) struct PendingStart {
    name: LocalName<'static>,
    ns: Namespace,
}

/// Drives lol_html's token stream directly (its `TransformController`).
///
/// Every start tag is captured; end tags are seen by name only, and the open
/// elements are kept here exactly as lol_html's selector VM keeps them
/// (`selectors_vm/stack.rs`): HTML void elements and self-closing foreign
/// ones are never pushed; an end tag pops the nearest open element of its
/// name and everything above it, innermost first, and does nothing when none
/// is open. The rewriter did that for us with a `*` handler and a boxed
/// end-tag handler per element: extraction on lilypond's documentation went
/// from 21.8 to 14.1 ms of CPU per MiB without them (docs/efficiency.md, "CPU and memory of a crawl").
pub(super) struct Controller<'s> {
    pub(super) state: Rc<RefCell<State>>,
    pub(super) source: Option<&'s [u8]>,
    /// Structured data is read: every text chunk is wanted.
    pub(super) collecting: bool,
    pub(super) open: Vec<OpenElement>,
    pub(super) pending: Option<PendingStart>,
    pub(super) memory_limiter: SharedMemoryLimiter,
    /// Where a `<meta charset>` sets the page's encoding; `None` when the
    /// header named one.
    pub(super) meta_charset: Option<Arc<OnceLock<AsciiCompatibleEncoding>>>,
}

impl Controller<'_> {
    /// Start tags always; text while it may be anchor text (or structured
    /// data is read). `a_start`: the tag being reported is an `a`.
    fn flags(&self, a_start: bool) -> TokenCaptureFlags {
        let anchor_open = self.state.try_borrow().is_ok_and(|s| s.anchor.is_some());
        if self.collecting || a_start || anchor_open {
            TokenCaptureFlags::NEXT_START_TAG | TokenCaptureFlags::TEXT
        } else {
            TokenCaptureFlags::NEXT_START_TAG
        }
    }

    fn on_start_tag(&mut self, token: &LolStartTag<'_>) -> Result<(), RewritingError> {
        let Some(PendingStart { name: local, ns }) = self.pending.take() else {
            // lol_html reports every start tag before its token.
            debug_assert!(false, "start tag token without handle_start_tag");
            return Ok(());
        };
        let has_end = if ns == Namespace::Html {
            !is_void_element(&local)
        } else {
            !token.self_closing()
        };
        if has_end {
            // Charged before anyone sees the element, as the VM's push was.
            self.memory_limiter
                .increase_usage(OPEN_ELEMENT_BYTES)
                .map_err(RewritingError::MemoryLimitExceeded)?;
        }
        let tag = StartTag {
            el: token,
            source: self.source,
        };
        let name = tag.name();
        let Ok(mut state) = self.state.try_borrow_mut() else {
            // Only `LinkExtractor` borrows it, never while the stream runs.
            debug_assert!(false, "state borrowed during a write");
            return Ok(());
        };
        let frame = state.on_element(&tag, &name, has_end);
        let collector = match state.collector.as_mut() {
            Some(c) if tag.may_carry_collected_data(&name) => c.on_element(token, &name, has_end),
            _ => None,
        };
        drop(state);
        if let Some(encoding) = &self.meta_charset {
            if &*name == "meta" && encoding.get().is_none() {
                if let Some(charset) = meta_charset(token) {
                    let _ = encoding.set(charset);
                }
            }
        }
        if has_end {
            self.open.push(OpenElement {
                name: local,
                frame,
                collector,
            });
        }
        Ok(())
    }

    /// Pops the nearest open element named `name` and those above it,
    /// telling the state and the collector innermost first (as lol_html ran
    /// end-tag handlers).
    fn on_end_tag(&mut self, name: &LocalName<'_>) {
        let Some(index) = self.open.iter().rposition(|e| e.name == *name) else {
            return;
        };
        let popped = self.open.len() - index;
        self.memory_limiter
            .decrease_usage(popped * OPEN_ELEMENT_BYTES);
        let Ok(mut state) = self.state.try_borrow_mut() else {
            debug_assert!(false, "state borrowed during a write");
            self.open.truncate(index);
            return;
        };
        for element in self.open.drain(index..).rev() {
            if let Some(id) = element.frame {
                state.on_end(id);
            }
            if let (Some(id), Some(c)) = (element.collector, state.collector.as_mut()) {
                c.on_end(id);
            }
        }
    }
}

impl TransformController for Controller<'_> {
    fn initial_capture_flags(&self) -> TokenCaptureFlags {
        self.flags(false)
    }

    fn handle_start_tag(
        &mut self,
        name: LocalName<'_>,
        ns: Namespace,
    ) -> StartTagHandlingResult<Self> {
        let a_start = name == Tag::A;
        self.pending = Some(PendingStart {
            name: name.into_owned(),
            ns,
        });
        Ok(self.flags(a_start))
    }

    fn handle_end_tag(&mut self, name: LocalName<'_>) -> TokenCaptureFlags {
        self.on_end_tag(&name);
        self.flags(false)
    }

    fn handle_token(&mut self, token: &mut Token<'_>) -> Result<(), RewritingError> {
        match token {
            Token::StartTag(tag) => self.on_start_tag(tag),
            Token::TextChunk(chunk) => {
                if let Ok(mut state) = self.state.try_borrow_mut() {
                    state.on_text(chunk);
                    if let Some(c) = state.collector.as_mut().filter(|c| c.wants_text()) {
                        c.on_text(chunk.as_str());
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn handle_end(&mut self, _end: &mut DocumentEnd<'_>) -> Result<(), RewritingError> {
        Ok(())
    }

    fn should_emit_content(&self) -> bool {
        // We only read: no output at all.
        false
    }
}

/// HTML's void elements, as lol_html's selector VM lists them: never open.
fn is_void_element(name: &LocalName<'_>) -> bool {
    [
        Tag::Area,
        Tag::Base,
        Tag::Basefont,
        Tag::Bgsound,
        Tag::Br,
        Tag::Col,
        Tag::Embed,
        Tag::Hr,
        Tag::Img,
        Tag::Input,
        Tag::Keygen,
        Tag::Link,
        Tag::Meta,
        Tag::Param,
        Tag::Source,
        Tag::Track,
        Tag::Wbr,
    ]
    .into_iter()
    .any(|tag| *name == tag)
}

/// The encoding a `<meta charset>` or `<meta http-equiv=Content-Type
/// content=...>` names, read as lol_html's rewriter did
/// (`with_adjust_charset_on_meta_tag`).
fn meta_charset(token: &LolStartTag<'_>) -> Option<AsciiCompatibleEncoding> {
    if let Some(charset) = token
        .get_attribute("charset")
        .and_then(|cs| encoding_for_label(&cs))
    {
        return Some(charset);
    }
    token
        .get_attribute("http-equiv")
        .filter(|v| v.eq_ignore_ascii_case("Content-Type"))?;
    let mime: mime::Mime = token.get_attribute("content")?.parse().ok()?;
    encoding_for_label(mime.get_param("charset")?.as_str())
}

/// The encoding a charset label names, if lol_html can decode it (an
/// ASCII-compatible one).
fn encoding_for_label(label: &str) -> Option<AsciiCompatibleEncoding> {
    AsciiCompatibleEncoding::new(Encoding::for_label_no_replacement(label.as_bytes())?)
}

/// We only read; lol_html's output is not needed.
pub(super) struct NullSink;

impl OutputSink for NullSink {
    fn handle_chunk(&mut self, _chunk: &[u8]) {}
}

/// The charset parameter of a Content-Type, if lol_html can decode it.
pub(super) fn charset_from_content_type(content_type: &str) -> Option<AsciiCompatibleEncoding> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        encoding_for_label(value.trim().trim_matches(|c| c == '"' || c == '\''))
    })
}
