//! Parsing a document under guard (issue #36): its share of the process-wide
//! parse budget ([`crate::engine::ParseBudget`]) while it is read and
//! parsed, a journal line while the parse is under way, and the job's poison
//! list, which the journal feeds after a crash.
//!
//! The journal (`STATE_DIR/parsing/<job>.journal`) gets `B <n> <url>` before
//! a parse starts and `E <n>` after it ends, one `write(2)` each, never
//! fsynced: it must outlive the process (an abort, an OOM kill), not the
//! machine, and the page cache does that for two small writes per document,
//! where a store commit per document would cost an fsync. When the job
//! starts, a `B` without its `E` is a document the process died parsing: it
//! gets a strike in the store's poison list ([`crate::store::poison`]), and
//! at [`CRASH_STRIKES`] it is no longer parsed — one death is not enough,
//! since an outside `kill -9` or an OOM kill aimed at another allocation may
//! land during any parse. A document whose statements blew its byte budget
//! (or whose DTD entities would have) is listed at once: it will do so again.
//! A listed URL is answered without reading its body, logged and counted
//! under `blocked`.

use super::*;
use crate::crashpoint::{self, CrashPoint};
use crate::engine::ParseLease;
use crate::store::{PoisonEntry, PoisonReason};
use std::io::Write as _;

/// Deaths during a document's parse after which it is skipped.
pub const CRASH_STRIKES: u32 = 2;
/// What a document holds of the parse budget per byte of its body: the body
/// itself and the parser's own copy of it (its tokens, the terms of a
/// statement); the statements written out are charged as they come.
pub const HOLD_FACTOR: u64 = 2;
/// Room for the statements a document writes out, per byte of its body,
/// reserved with its share (N-Quads of a big document are about its size;
/// more is asked for as it comes, and a refusal cuts the document).
pub const OUTPUT_ROOM: u64 = 1;
/// The first share of a body whose length is not announced (chunked, or
/// decompressed on the fly); it grows as the body arrives.
const FIRST_SHARE: u64 = 1 << 20;
/// How long a body being read waits for more of the budget before it is cut.
const GROW_PATIENCE: Duration = Duration::from_secs(10);
/// The journal is emptied when no parse is under way and it is longer than this.
const JOURNAL_COMPACT_BYTES: u64 = 1 << 20;

/// A job's journal of parses under way and its poison list.
pub(super) struct Parsing {
    journal: Mutex<Journal>,
    /// URLs not parsed any more.
    poisoned: Mutex<HashSet<String>>,
}

struct Journal {
    /// `None` when it could not be opened: parses go unguarded (logged once).
    file: Option<std::fs::File>,
    next: u64,
    open: usize,
    len: u64,
}

/// A parse under way, ended by [`Parsing::end`].
pub(super) struct ParseMark(Option<u64>);

fn journal_path(state_dir: &std::path::Path, job: &str) -> std::path::PathBuf {
    state_dir.join("parsing").join(format!("{job}.journal"))
}

/// URLs begun and never ended in a journal's text.
fn unfinished(text: &str) -> Vec<String> {
    let mut open: Vec<(u64, String)> = Vec::new();
    // A torn last line (the process died inside a write) says nothing.
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    for line in complete.lines() {
        let mut parts = line.splitn(3, ' ');
        match (parts.next(), parts.next().map(str::parse::<u64>)) {
            (Some("B"), Some(Ok(n))) => {
                if let Some(url) = parts.next() {
                    open.push((n, url.to_string()));
                }
            }
            (Some("E"), Some(Ok(n))) => open.retain(|(m, _)| *m != n),
            _ => {}
        }
    }
    let mut urls: Vec<String> = open.into_iter().map(|(_, u)| u).collect();
    urls.dedup();
    urls
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Parsing {
    /// Reads the job's poison list and what its last run left in the
    /// journal (strikes recorded before anything is fetched), then opens a
    /// fresh journal.
    pub(super) fn open(engine: &Engine, job: &str) -> Parsing {
        let path = journal_path(&engine.state_dir, job);
        let mut listed: HashMap<String, PoisonEntry> = match engine.store.poison_list(job) {
            Ok(list) => list.into_iter().map(|e| (e.url.clone(), e)).collect(),
            Err(e) => {
                warn!(job = %job, error = %e, "cannot read the poison list; documents on it may be parsed again");
                HashMap::new()
            }
        };
        let left = match std::fs::read(&path) {
            Ok(bytes) => unfinished(&String::from_utf8_lossy(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                warn!(job = %job, path = %path.display(), error = %e, "cannot read the parse journal");
                Vec::new()
            }
        };
        let mut struck = Vec::new();
        for url in left {
            let strikes = match listed.get(&url) {
                Some(e) if e.reason == PoisonReason::Crashed => e.strikes + 1,
                Some(_) => continue,
                None => 1,
            };
            let entry = PoisonEntry {
                url: url.clone(),
                reason: PoisonReason::Crashed,
                strikes,
                detail: "the process died while parsing it".to_string(),
                at: unix_seconds(),
            };
            warn!(job = %job, url = %url, strikes, skipped_at = CRASH_STRIKES,
                "the process died while parsing this document; it is skipped once it has done so {CRASH_STRIKES} times");
            listed.insert(url, entry.clone());
            struck.push(entry);
        }
        // Durable before the journal forgets them: the next parse may be the
        // one that kills the process again.
        let recorded = match engine.store.record_poison(job, &struck) {
            Ok(()) => true,
            Err(e) => {
                warn!(job = %job, error = %e, "cannot record parse crashes in the poison list; the journal keeps them");
                false
            }
        };
        let poisoned: HashSet<String> = listed
            .into_values()
            .filter(|e| e.reason == PoisonReason::OverBudget || e.strikes >= CRASH_STRIKES)
            .map(|e| e.url)
            .collect();
        if !poisoned.is_empty() {
            info!(job = %job, poisoned = poisoned.len(), "documents on the poison list are not parsed again");
        }
        let file = std::fs::create_dir_all(path.parent().unwrap_or(&engine.state_dir))
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
            })
            .and_then(|f| {
                if recorded {
                    f.set_len(0)?;
                }
                Ok(f)
            });
        let (file, len) = match file {
            Ok(f) => {
                let len = f.metadata().map_or(0, |m| m.len());
                (Some(f), len)
            }
            Err(e) => {
                warn!(job = %job, path = %path.display(), error = %e,
                    "cannot open the parse journal: a document that kills the process will be tried again");
                (None, 0)
            }
        };
        Parsing {
            journal: Mutex::new(Journal {
                file,
                next: 0,
                open: 0,
                len,
            }),
            poisoned: Mutex::new(poisoned),
        }
    }

    /// Documents on the poison list.
    pub(super) fn poisoned(&self) -> u64 {
        lock(&self.poisoned).len() as u64
    }

    pub(super) fn is_poisoned(&self, url: &Url) -> bool {
        lock(&self.poisoned).contains(url.as_str())
    }

    /// A parse of `url` starts.
    pub(super) fn begin(&self, url: &Url) -> ParseMark {
        let mut j = lock(&self.journal);
        let n = j.next;
        j.next += 1;
        let line = format!("B {n} {url}\n");
        let Some(file) = j.file.as_mut() else {
            return ParseMark(None);
        };
        if file.write_all(line.as_bytes()).is_err() {
            return ParseMark(None);
        }
        j.open += 1;
        j.len += line.len() as u64;
        ParseMark(Some(n))
    }

    /// The parse `mark` ended (done, cut or panicked: the process lives).
    pub(super) fn end(&self, mark: ParseMark) {
        let Some(n) = mark.0 else { return };
        let mut j = lock(&self.journal);
        j.open = j.open.saturating_sub(1);
        let line = format!("E {n}\n");
        let compact = j.open == 0 && j.len > JOURNAL_COMPACT_BYTES;
        let Some(file) = j.file.as_mut() else { return };
        let written = if compact {
            // Nothing under way: nothing in it matters any more.
            file.set_len(0).map(|()| 0)
        } else {
            file.write_all(line.as_bytes()).map(|()| line.len() as u64)
        };
        match written {
            Ok(0) => j.len = 0,
            Ok(n) => j.len += n,
            Err(_) => {}
        }
    }
}

impl Runner<'_> {
    /// `url` is on the poison list: its body is not read. Logged and
    /// counted (under `blocked`: a document never downloaded by rule).
    pub(super) fn skip_poisoned(&self, url: &Url, latency: Option<Duration>) -> Fetched {
        self.core().count(Count::Blocked);
        warn!(job = %self.spec.name, url = %url, "document on the poison list (it crashed the process or blew its budget before): not parsed");
        self.emit(RequestKind::Get, url, Some(200), 0, None, false, latency);
        Fetched::Nothing
    }

    /// Puts `url` on the job's poison list (durably, off the async workers).
    pub(super) async fn poison(&self, url: &Url, detail: String) {
        let documents = {
            let mut poisoned = lock(&self.parsing.poisoned);
            if !poisoned.insert(url.to_string()) {
                return;
            }
            poisoned.len() as u64
        };
        lock(&self.observer).poison_list(documents);
        let job = self.spec.name.clone();
        warn!(job = %job, url = %url, reason = PoisonReason::OverBudget.as_str(), detail = %detail,
            "document blew its budget: put on the poison list, not parsed again");
        let entry = PoisonEntry {
            url: url.to_string(),
            reason: PoisonReason::OverBudget,
            strikes: 0,
            detail,
            at: unix_seconds(),
        };
        let store = self.engine.store.clone();
        let recorded =
            tokio::task::spawn_blocking(move || store.record_poison(&job, &[entry])).await;
        match recorded {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                warn!(job = %self.spec.name, url = %url, error = %e, "cannot record the poison list entry; it holds for this run only")
            }
            Err(e) => {
                warn!(job = %self.spec.name, url = %url, error = %e, "cannot record the poison list entry; it holds for this run only")
            }
        }
    }

    /// A share of the parse budget for a body of `announced` bytes (or an
    /// unknown length), read up to `cap`: waits its turn.
    pub(super) async fn parse_lease(&self, announced: Option<u64>, cap: u64) -> ParseLease {
        let first = announced.unwrap_or(FIRST_SHARE).min(cap);
        self.engine
            .parse_budget
            .reserve_with_room(
                first.saturating_mul(HOLD_FACTOR),
                first.saturating_mul(OUTPUT_ROOM),
            )
            .await
    }

    /// Reads a 2xx body up to `cap` like [`Runner::read_body`], growing
    /// `lease` as the body arrives; a growth refused (the process-wide budget
    /// spent for [`GROW_PATIENCE`]) cuts the body there, as `truncated`.
    pub(super) async fn read_body_leased(
        &self,
        url: &Url,
        mut resp: Response,
        cap: u64,
        lease: &mut ParseLease,
    ) -> Result<crate::fetch::Body, FetchError> {
        let cap = usize::try_from(cap).unwrap_or(usize::MAX);
        let mut bytes: Vec<u8> = Vec::new();
        let mut truncated = false;
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => {
                    self.core().count(Count::FetchError);
                    self.fetch_failed(Method::Get, url, &e);
                    return Err(e);
                }
            };
            let take = chunk.len().min(cap - bytes.len());
            let need = ((bytes.len() + take) as u64).saturating_mul(HOLD_FACTOR);
            if need > lease.used() {
                // Doubling: a 256 MiB body asks a dozen times, not per chunk.
                let more = (need - lease.used()).max(lease.used());
                if !lease.try_grow(more) && !lease.grow(need - lease.used(), GROW_PATIENCE).await {
                    warn!(job = %self.spec.name, url = %url, read = bytes.len(),
                        budget = self.engine.parse_budget.bytes(),
                        "the process-wide parse budget is spent: document cut");
                    truncated = true;
                    break;
                }
            }
            bytes.extend_from_slice(&chunk[..take]);
            if take < chunk.len() {
                truncated = true;
                break;
            }
        }
        Ok(crate::fetch::Body { bytes, truncated })
    }
}

/// Marks the parse in the journal and passes the crash point the crash
/// tests kill the process at (inside a parse).
pub(super) fn crash_point() {
    crashpoint::reached(CrashPoint::Parse);
}

#[cfg(test)]
mod tests {
    use super::unfinished;

    #[test]
    fn a_begin_without_its_end_is_a_crash() {
        let text = "B 0 http://a.test/1\nE 0\nB 1 http://a.test/2\nB 2 http://a.test/3\nE 2\nB 3 http://a.test/4";
        assert_eq!(unfinished(text), ["http://a.test/2"]);
        assert!(unfinished("").is_empty());
        assert!(unfinished("garbage\nB x y\n").is_empty());
    }
}
