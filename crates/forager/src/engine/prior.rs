//! The prior of new jobs: what earlier jobs learnt about which link words
//! lead to targets (sb's within-action ranking, [`forager_core::learn::lead`]),
//! kept in the store's shared table beside the MIME filters, one per kind
//! of targets, so that a job on a site never seen starts warm. A job's
//! prior holds token weights only — no URL, no host — and replaces the one
//! stored for its target kinds at each of its checkpoints that stage the
//! shared state. A job with `targets.prior = false` neither reads it nor
//! writes it.

use crate::store::{JobDelta, Store, StoreError};
use forager_core::config::TargetsSpec;
use forager_core::strategy::Strategy;

const PREFIX: &str = "lead-prior/";

/// The store key of the prior of jobs harvesting `targets`: their target
/// kinds, in a canonical order (not the blocked types: they change what is
/// fetched, not what a target is).
pub fn key(targets: &TargetsSpec) -> String {
    let mut mime = targets.mime.clone();
    mime.sort();
    mime.dedup();
    let mut ext = targets.ext.clone();
    ext.sort();
    ext.dedup();
    let structured = targets.structured.as_ref().map_or(String::from("-"), |s| {
        let o = &s.options;
        format!(
            "{}{}{}{}",
            u8::from(o.json_ld),
            u8::from(o.microdata),
            u8::from(o.rdfa),
            u8::from(o.microformats)
        )
    });
    format!(
        "{PREFIX}{:?};mime={};ext={};rdf={};structured={structured}",
        targets.preset,
        mime.join(","),
        ext.join(","),
        u8::from(targets.rdf),
    )
}

/// Start `strategy` (a fresh job's) from the stored prior of its target
/// kinds, if any; a prior that does not decode is skipped (the job starts
/// cold). Returns whether one was used.
pub fn load(
    store: &Store,
    targets: &TargetsSpec,
    strategy: &mut dyn Strategy,
) -> Result<bool, StoreError> {
    if !targets.prior {
        return Ok(false);
    }
    let Some(bytes) = store.shared(&key(targets))? else {
        return Ok(false);
    };
    match strategy.use_prior(&bytes) {
        Ok(()) => Ok(true),
        Err(e) => {
            tracing::warn!(error = %e, "stored prior not used; the job starts cold");
            Ok(false)
        }
    }
}

/// Stage `strategy`'s prior for its target kinds into `delta`.
pub fn stage(targets: &TargetsSpec, strategy: &dyn Strategy, delta: &mut JobDelta) {
    if !targets.prior {
        return;
    }
    if let Some(bytes) = strategy.prior() {
        delta.stage_shared(std::iter::once((key(targets), bytes)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use forager_core::strategy::StrategyKind;

    #[test]
    fn the_key_names_the_target_kinds_in_a_canonical_order() {
        let a = TargetsSpec {
            mime: vec!["text/x-python".into(), "application/zip".into()],
            ..TargetsSpec::default()
        };
        let mut b = a.clone();
        b.mime.reverse();
        b.block_ext.clear();
        assert_eq!(key(&a), key(&b));
        let mut c = a.clone();
        c.ext.push("tac".into());
        assert_ne!(key(&a), key(&c));
        assert!(key(&a).starts_with(PREFIX));
    }

    #[test]
    fn a_job_without_a_prior_or_that_wants_none_starts_cold() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let mut sb = StrategyKind::Sb.build(1);
        let targets = TargetsSpec::default();
        assert!(!load(&store, &targets, sb.as_mut()).unwrap());
        // A prior stored for these targets is used, unless the job says no.
        let mut delta = JobDelta::new("j");
        delta.stage_shared(std::iter::once((key(&targets), b"garbage".to_vec())));
        store.commit_blocking(delta).unwrap();
        assert!(
            !load(&store, &targets, sb.as_mut()).unwrap(),
            "garbage is skipped"
        );
        let cold = TargetsSpec {
            prior: false,
            ..TargetsSpec::default()
        };
        assert!(!load(&store, &cold, sb.as_mut()).unwrap());
    }
}
