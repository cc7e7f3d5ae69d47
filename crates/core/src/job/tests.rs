use super::*;
use crate::extract::{ExtractedLink, RejectCounts, ScopeKind};
use crate::link::TagPath;
use crate::strategy::StrategyKind;
use proptest::prelude::*;
use proptest::strategy::Strategy as _;
use std::collections::HashSet;
use std::time::Duration;

fn url(s: &str) -> Url {
    Url::parse(s).expect("test URL")
}

fn spec(strategy: StrategyKind) -> JobSpec {
    let mut spec = JobSpec::new("core-test", vec![url("http://site.test/")]);
    spec.strategy = strategy;
    spec.scope = ScopeKind::Site;
    spec.budget.early_stop = false;
    spec
}

fn page(urls: &[&str]) -> PageLinks {
    PageLinks {
        links: urls
            .iter()
            .map(|u| ExtractedLink {
                url: url(u),
                tag_path: TagPath::new("/html/body/a"),
                anchor: String::new(),
            })
            .collect(),
        base: url("http://site.test/"),
        structured_data: false,
        structured: None,
        cut: None,
        rejected: RejectCounts::default(),
    }
}

/// Choose the next link and begin its step (records are all in memory here).
fn pop_and_begin(core: &mut JobCore) -> Option<(LinkId, Link)> {
    let mut load = |id: LinkId| -> Result<Option<crate::record::FrontierEntry>, ()> {
        panic!("{id} is not in memory")
    };
    match core.next_step(&|_| Readiness::Now, 1, &mut load) {
        Ok(NextStep::Begin(id)) => Some((id, core.popped(id)?.entry.link.clone())),
        _ => None,
    }
}

fn no_label(_: &Url) -> Option<Label> {
    None
}

#[test]
fn seeds_are_queued_once() {
    let spec = spec(StrategyKind::Bfs);
    let mut core = JobCore::new(&spec);
    assert_eq!(core.add_seeds(&spec.seeds), 1);
    assert_eq!(
        core.add_seeds(&spec.seeds),
        0,
        "a seen seed is not queued again"
    );
    assert_eq!(core.frontier_len(), 1);
}

#[test]
fn admit_filters_scope_and_seen() {
    let spec = spec(StrategyKind::Bfs);
    let mut core = JobCore::new(&spec);
    core.add_seeds(&spec.seeds);
    let (id, seed) = pop_and_begin(&mut core).expect("seed");
    let admitted = core.admit_links(
        id,
        &seed,
        &seed.url,
        page(&[
            "http://site.test/a",
            "http://elsewhere.test/b",
            "http://site.test/a",
            "http://site.test/",
        ]),
        &no_label,
        &spec,
    );
    assert_eq!(admitted, vec![Admitted::Queued], "one new in-scope link");
    assert_eq!(core.counters.out_of_scope, 1);
    core.settle_step(id, StepTally::default());
    assert_eq!(core.frontier_len(), 1);
    assert_eq!(core.in_flight(), 0);
}

#[test]
fn in_flight_links_come_back_on_abandon() {
    let spec = spec(StrategyKind::Bfs);
    let mut core = JobCore::new(&spec);
    core.add_seeds(&spec.seeds);
    let (id, seed) = pop_and_begin(&mut core).expect("seed");
    assert_eq!(core.frontier_len(), 0);
    let hop = url("http://site.test/moved");
    assert!(core.admit_hop(id, &seed, &hop));
    core.abandon_all();
    assert_eq!(core.in_flight(), 0);
    assert_eq!(
        core.frontier_len(),
        2,
        "the popped seed and the unsettled hop"
    );
}

#[test]
fn unsettled_seen_hashes_wait_for_their_step() {
    let spec = spec(StrategyKind::Bfs);
    let mut core = JobCore::new(&spec);
    core.add_seeds(&spec.seeds);
    let (id, seed) = pop_and_begin(&mut core).expect("seed");
    let hop = url("http://site.test/moved");
    assert!(core.admit_hop(id, &seed, &hop));
    let cp = core.take_checkpoint(None, 0);
    assert!(
        !cp.delta.seen_added.contains(&crate::link::url_hash(&hop)),
        "a crash now must not leave the hop seen but nowhere"
    );
    assert!(
        cp.delta.frontier_removed.is_empty(),
        "the seed is still in flight"
    );
    core.committed(&cp.committed_links);
    core.settle_link(&hop);
    core.settle_step(id, StepTally::default());
    let cp = core.take_checkpoint(None, 0);
    assert!(cp.delta.seen_added.contains(&crate::link::url_hash(&hop)));
    assert_eq!(cp.delta.frontier_removed, vec![id]);
}

#[test]
fn failed_commit_is_carried_into_the_next() {
    let spec = spec(StrategyKind::Bfs);
    let mut core = JobCore::new(&spec);
    core.add_seeds(&spec.seeds);
    let cp = core.take_checkpoint(None, 0);
    assert_eq!(cp.delta.frontier_added.len(), 1);
    core.commit_failed(cp.delta, cp.rows);
    let cp = core.take_checkpoint(None, 0);
    assert_eq!(cp.delta.frontier_added.len(), 1, "kept for the retry");
    assert_eq!(cp.delta.seen_added.len(), 1);
}

#[test]
fn reward_goes_to_the_step_that_found_the_targets() {
    let spec = spec(StrategyKind::Sb);
    let mut core = JobCore::new(&spec);
    core.add_seeds(&spec.seeds);
    let (id, _) = pop_and_begin(&mut core).expect("seed");
    core.settle_step(
        id,
        StepTally {
            targets: 3,
            requests: 4,
        },
    );
    core.check_invariants();
}

#[test]
fn a_retried_link_waits_its_turn_unless_nothing_else_is_left() {
    // Depth-first: without the wait the retried link would be popped next.
    let spec = spec(StrategyKind::Dfs);
    let mut core = JobCore::new(&spec);
    core.add_seeds(&spec.seeds);
    let (id, seed) = pop_and_begin(&mut core).expect("seed");
    let others: Vec<String> = (0..40).map(|i| format!("http://site.test/p{i}")).collect();
    let refs: Vec<&str> = others.iter().map(String::as_str).collect();
    core.admit_links(id, &seed, &seed.url, page(&refs), &no_label, &spec);
    let failing = url("http://site.test/broken");
    assert!(core.admit_hop(id, &seed, &failing));
    let verdict = core.retry_or_give_up(
        Link::seed(failing.clone()),
        PassingFault::Outage,
        &spec,
        std::time::Instant::now(),
    );
    assert_eq!(verdict, RetryVerdict::Again { tries: 1 });
    core.settle_step(id, StepTally::default());
    assert_eq!(
        core.frontier_len(),
        41,
        "the retried link is in the frontier"
    );
    // It comes back after RETRY_SPACING_STEPS other steps, not before.
    let mut order = Vec::new();
    while let Some((id, link)) = pop_and_begin(&mut core) {
        order.push(link.url.to_string());
        core.settle_step(id, StepTally::default());
    }
    let at = order
        .iter()
        .position(|u| u == failing.as_str())
        .expect("the retried link comes back");
    assert_eq!(at as u64, RETRY_SPACING_STEPS, "{order:?}");
    assert_eq!(order.len(), 41);

    // With nothing else in the frontier it goes at once, and a second
    // failure waits twice as long.
    let mut core = JobCore::new(&spec);
    core.add_seeds(&spec.seeds);
    let (id, seed) = pop_and_begin(&mut core).expect("seed");
    core.retry_or_give_up(
        seed.clone(),
        PassingFault::Outage,
        &spec,
        std::time::Instant::now(),
    );
    core.settle_step(id, StepTally::default());
    let (id, again) = pop_and_begin(&mut core).expect("nothing else: no wait");
    assert_eq!(again.url, seed.url);
    core.retry_or_give_up(
        again,
        PassingFault::Outage,
        &spec,
        std::time::Instant::now(),
    );
    assert_eq!(
        core.waiting_retries.keys().next().map(|k| k.0),
        Some(2 + 2 * RETRY_SPACING_STEPS)
    );
    core.settle_step(id, StepTally::default());
    core.check_invariants();
}

#[test]
fn a_broken_page_is_tried_twice_more_an_outage_as_often_as_the_job_says() {
    let spec = spec(StrategyKind::Bfs);
    let now = std::time::Instant::now();
    let mut core = JobCore::new(&spec);
    let broken = Link::seed(url("http://site.test/broken"));
    let verdicts: Vec<RetryVerdict> = (0..3)
        .map(|_| core.retry_or_give_up(broken.clone(), PassingFault::PageError, &spec, now))
        .collect();
    assert_eq!(
        verdicts,
        [
            RetryVerdict::Again { tries: 1 },
            RetryVerdict::Again { tries: 2 },
            RetryVerdict::GivenUp { tries: 3 }
        ]
    );
    let down = Link::seed(url("http://site.test/down"));
    for tries in 1..=spec.limits.retries {
        let v = core.retry_or_give_up(down.clone(), PassingFault::Outage, &spec, now);
        assert_eq!(v, RetryVerdict::Again { tries });
    }
    let v = core.retry_or_give_up(down, PassingFault::Outage, &spec, now);
    assert_eq!(
        v,
        RetryVerdict::GivenUp {
            tries: spec.limits.retries + 1
        }
    );
    assert_eq!(core.given_up, 2);
}

/// One operation of the property test.
#[derive(Clone, Debug)]
enum Op {
    Pop,
    /// A page of the step in flight at this index links to these paths.
    Page(usize, Vec<u8>),
    Hop(usize, u8),
    /// A hop the step leaves unsettled (refused, failed): done when the step settles.
    HopLeft(usize, u8),
    Settle(usize),
    /// The fetch of a fresh link of the step at this index failed; retry it.
    Retry(usize, u8),
    Checkpoint,
    AbandonAll,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Pop),
        3 => (0..4usize, prop::collection::vec(0..40u8, 0..6)).prop_map(|(i, v)| Op::Page(i, v)),
        1 => (0..4usize, 0..40u8).prop_map(|(i, p)| Op::Hop(i, p)),
        1 => (0..4usize, 0..40u8).prop_map(|(i, p)| Op::HopLeft(i, p)),
        2 => (0..4usize).prop_map(Op::Settle),
        1 => (0..4usize, 0..40u8).prop_map(|(i, p)| Op::Retry(i, p)),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::AbandonAll),
    ]
}

proptest! {
    /// Whatever order steps run, settle or are abandoned in, every URL ever
    /// seen is in the frontier, in flight, unsettled or done — and after
    /// abandoning everything, every URL not done is back in the frontier.
    #[test]
    fn nothing_is_lost(ops in prop::collection::vec(op(), 1..80)) {
        let spec = spec(StrategyKind::Bfs);
        let mut core = JobCore::new(&spec);
        core.add_seeds(&spec.seeds);
        let mut steps: Vec<(LinkId, Link)> = Vec::new();
        let mut left: Vec<(LinkId, String)> = Vec::new();
        let mut done: HashSet<String> = HashSet::new();
        for op in ops {
            match op {
                Op::Pop => {
                    if let Some(s) = pop_and_begin(&mut core) {
                        steps.push(s);
                    }
                }
                Op::Page(i, paths) if !steps.is_empty() => {
                    let (id, link) = steps[i % steps.len()].clone();
                    let urls: Vec<String> = paths.iter().map(|p| format!("http://site.test/p{p}")).collect();
                    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
                    for a in core.admit_links(id, &link, &link.url, page(&refs), &no_label, &spec) {
                        prop_assert_eq!(a, Admitted::Queued, "bfs queues every link");
                    }
                }
                Op::Hop(i, p) if !steps.is_empty() => {
                    let (id, link) = steps[i % steps.len()].clone();
                    let hop = url(&format!("http://site.test/hop{p}"));
                    if core.admit_hop(id, &link, &hop) {
                        // The hop is fetched at once in this model.
                        core.settle_link(&hop);
                        done.insert(hop.to_string());
                    }
                }
                Op::HopLeft(i, p) if !steps.is_empty() => {
                    let (id, link) = steps[i % steps.len()].clone();
                    let hop = url(&format!("http://site.test/left{p}"));
                    if core.admit_hop(id, &link, &hop) {
                        left.push((id, hop.to_string()));
                    }
                }
                Op::Settle(i) if !steps.is_empty() => {
                    let (id, link) = steps.remove(i % steps.len());
                    core.settle_step(id, StepTally { targets: 0, requests: 1 });
                    done.insert(link.url.to_string());
                    for (_, hop) in left.iter().filter(|(s, _)| *s == id) {
                        done.insert(hop.clone());
                    }
                    left.retain(|(s, _)| *s != id);
                }
                Op::Retry(i, p) if !steps.is_empty() => {
                    let (id, link) = steps[i % steps.len()].clone();
                    let failed = url(&format!("http://site.test/retry{p}"));
                    if core.admit_hop(id, &link, &failed) {
                        core.retry_or_give_up(Link::seed(failed), PassingFault::Outage, &spec, std::time::Instant::now());
                    }
                }
                Op::Checkpoint => {
                    let cp = core.take_checkpoint(None, 0);
                    core.committed(&[]);
                    // Keep records in memory: this model has no store.
                    core.commit_failed(cp.delta, cp.rows);
                }
                Op::AbandonAll => {
                    core.abandon_all();
                    steps.clear();
                    left.clear();
                }
                _ => {}
            }
            core.check_invariants();
        }
        core.abandon_all();
        // Drain the frontier: every seen URL is either done or comes back.
        let mut back = HashSet::new();
        while let Some((_, link)) = pop_and_begin(&mut core) {
            back.insert(link.url.to_string());
        }
        prop_assert_eq!(back.len() + done.len(), core.seen_len(),
            "seen {} = frontier {} + done {}", core.seen_len(), back.len(), done.len());
        prop_assert!(back.is_disjoint(&done));
    }
}

/// sb's warm-up asks HEADs until its classifier has 10 labels (the seed's
/// GET is the first). Admitted one at a time with each answer learned before
/// the next link is triaged (one step in flight), a page of 30 links costs 9
/// HEADs; triaged all at once (many in flight: HEADs are units of their
/// own), every link is asked. The sequential crawl before the job core did
/// the former: doing the latter with one step in flight moved sb's req@90.
#[test]
fn one_at_a_time_the_warm_up_ends_within_a_page() {
    let urls: Vec<String> = (0..30).map(|i| format!("http://site.test/p{i}")).collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    let spec = spec(StrategyKind::Sb);
    let start = || {
        let mut core = JobCore::new(&spec);
        core.add_seeds(&spec.seeds);
        let (id, seed) = pop_and_begin(&mut core).expect("seed");
        core.observe(&seed, Label::Html, LabelSource::Get);
        (core, id, seed)
    };

    let (mut core, id, seed) = start();
    let mut admission = core.start_admission(id, &seed, &seed.url, page(&refs));
    let mut asked = 0;
    while let Some(mut next) = core.admit_next(&mut admission, &no_label, &spec) {
        while let Admitted::AskHead(link) = next {
            asked += 1;
            core.observe(&link, Label::Html, LabelSource::Head);
            next = core.after_head(id, link, HeadAnswer::Label(Label::Html), &spec);
        }
        assert_eq!(next, Admitted::Queued);
    }
    assert_eq!(asked, 9, "the warm-up ends after 9 HEADs");
    core.settle_step(id, StepTally::default());
    assert_eq!(core.frontier_len(), 30);

    let (mut core, id, seed) = start();
    let admitted = core.admit_links(id, &seed, &seed.url, page(&refs), &no_label, &spec);
    let asks = admitted
        .iter()
        .filter(|a| matches!(a, Admitted::AskHead(_)))
        .count();
    assert_eq!(asks, 30, "all triaged before any answer: every link asked");
}

/// A made-up web of 12 hosts under one registrable domain (one politeness
/// key per pay-level domain): each host's home links every other home and
/// its own 20 items; the items of even hosts are relevant.
struct OneDomainWeb;

impl OneDomainWeb {
    const HOSTS: usize = 12;
    const ITEMS: usize = 20;
}

impl replay::Answers for OneDomainWeb {
    fn label(&mut self, _url: &Url) -> Option<Label> {
        Some(Label::Html)
    }
    fn links(&mut self, page: &Link) -> PageLinks {
        let host = page.url.host_str().unwrap_or_default().to_string();
        let mut links = Vec::new();
        if page.url.path() == "/" {
            for h in 0..Self::HOSTS {
                links.push(format!("http://h{h}.one.test/"));
            }
            for i in 0..Self::ITEMS {
                links.push(format!("http://{host}/item/{i}"));
            }
        }
        let mut found = replay::page_links(&page.url, Vec::new());
        found.links = links
            .iter()
            .map(|u| ExtractedLink {
                url: url(u),
                tag_path: TagPath::new("/html/body/ul/li/a"),
                anchor: String::new(),
            })
            .collect();
        found
    }
    fn target(&mut self, _link: &Link, _requests: u64) -> bool {
        false
    }
    fn relevant(&mut self, page: &Link) -> Option<bool> {
        let host = page.url.host_str().unwrap_or_default();
        let even = host
            .trim_start_matches('h')
            .split('.')
            .next()
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| n % 2 == 0);
        Some(even && page.url.path().starts_with("/item/"))
    }
}

fn one_domain_replay(strategy: StrategyKind) -> replay::Replay {
    let mut spec = JobSpec::new("one-domain", vec![url("http://h0.one.test/")]);
    spec.scope = ScopeKind::Any;
    spec.budget.early_stop = false;
    spec.targets.preset = crate::mime::Preset::Structured;
    replay::Replay::new(spec, strategy.build(3))
}

/// A past defect: with one politeness key and many steps in flight, links chosen
/// long before their request made anthelion as poor as bfs. A strategy
/// that chooses among ready hosts now takes every decision exactly as with
/// one step in flight.
#[test]
fn one_key_with_many_in_flight_decides_as_one_in_flight() {
    use crate::extract::PolitenessPer;
    for kind in [StrategyKind::Anthelion, StrategyKind::Ldcoc] {
        let order = |in_flight: usize, look_ahead: usize| -> Vec<LinkId> {
            let mut r = one_domain_replay(kind);
            r.crawl_concurrent(
                &mut OneDomainWeb,
                in_flight,
                PolitenessPer::Pld,
                look_ahead,
                150,
            )
            .into_iter()
            .map(|s| s.id)
            .collect()
        };
        let sequential = order(1, 1);
        assert!(sequential.len() > 100, "{kind:?}: {}", sequential.len());
        assert_eq!(order(64, 16), sequential, "{kind:?}");
        assert_eq!(order(64, usize::MAX), sequential, "{kind:?}");
    }
}

/// A strategy that knows no hosts pops ahead of a busy key by at most the
/// look-ahead: with one key, the link chosen for the next step is at most
/// that many choices old, and held links keep the strategy's order.
#[test]
fn a_busy_key_holds_at_most_the_look_ahead() {
    let mut r = one_domain_replay(StrategyKind::Bfs);
    let mut site = OneDomainWeb;
    // The seed's step: its links reach the frontier.
    let first = r.step(&mut site).expect("the seed");
    assert_eq!(first.id, LinkId(0));
    let frontier = r.core.frontier_len();
    let busy = |_: &Url| Readiness::Busy;
    let mut load = |id: LinkId| -> Result<Option<crate::record::FrontierEntry>, ()> {
        panic!("{id} is not in memory")
    };
    let mut held = Vec::new();
    for look_ahead in [1, 4] {
        loop {
            match r.core.next_step(&busy, look_ahead, &mut load) {
                Ok(NextStep::Hold(h)) => held.push(h),
                Ok(NextStep::Wait(None)) => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(r.core.held(), look_ahead);
        assert_eq!(held.len(), look_ahead);
        assert_eq!(
            r.core.frontier_len(),
            frontier,
            "held links are in the frontier"
        );
        r.core.check_invariants();
    }
    let ids: Vec<LinkId> = held.iter().map(Held::id).collect();
    assert_eq!(
        ids,
        (1..=4).map(LinkId).collect::<Vec<_>>(),
        "the strategy's order"
    );
    // Its key ready, a held link begins; the others go back unfetched.
    let mut held = held.into_iter();
    let begun = r.core.begin_held(held.next().expect("held"));
    assert_eq!(begun, Some(LinkId(1)));
    for h in held {
        r.core.release_held(h);
    }
    assert_eq!(r.core.held(), 0);
    r.core.abandon_all();
    assert_eq!(r.core.frontier_len(), frontier);
}

/// Links of a blocked origin (an https port whose robots.txt is down) are
/// held aside: however many, the look-ahead stays free for the host's
/// other origin, whose link begins at once.
#[test]
fn links_of_a_blocked_origin_never_take_the_look_ahead() {
    let spec = spec(StrategyKind::Bfs);
    let mut core = JobCore::new(&spec);
    core.add_seeds(&[
        url("https://site.test/a"),
        url("https://site.test/b"),
        url("https://site.test/c"),
        url("http://site.test/d"),
    ]);
    let frontier = core.frontier_len();
    let wait = Duration::from_secs(256);
    let readiness = |u: &Url| match u.scheme() {
        "https" => Readiness::Blocked(wait),
        _ => Readiness::Now,
    };
    let mut load = |id: LinkId| -> Result<Option<crate::record::FrontierEntry>, ()> {
        panic!("{id} is not in memory")
    };
    let mut aside = Vec::new();
    let begun = loop {
        match core.next_step(&readiness, 1, &mut load) {
            Ok(NextStep::Hold(h)) => aside.push(h),
            Ok(NextStep::Begin(id)) => break id,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(aside.len(), 3, "every https link held aside");
    assert_eq!(
        core.popped(begun).map(|p| p.entry.link.url.as_str()),
        Some("http://site.test/d")
    );
    assert_eq!(core.held(), 3);
    assert_eq!(
        core.frontier_len(),
        frontier - 1,
        "held links are in the frontier"
    );
    // Nothing left to pop: the slot waits (the driver's lanes know for how long).
    assert!(matches!(
        core.next_step(&readiness, 1, &mut load),
        Ok(NextStep::Wait(_))
    ));
    // Its origin ready again, a link held aside begins; the others go back.
    let mut aside = aside.into_iter();
    let first = aside.next().expect("held");
    assert!(core.begin_held(first).is_some());
    for h in aside {
        core.release_held(h);
    }
    assert_eq!(core.held(), 0);
    core.abandon_all();
}

/// A taken politeness key makes a URL wait for it, but never hides that
/// the URL's own origin is held back: politeness is per key, back-off per
/// origin.
#[test]
fn a_taken_key_keeps_an_origins_hold_back() {
    let d = Duration::from_millis(300);
    assert_eq!(Readiness::Blocked(d).on_taken_key(), Readiness::Blocked(d));
    for own in [Readiness::Now, Readiness::After(d), Readiness::Busy] {
        assert_eq!(own.on_taken_key(), Readiness::Busy, "{own:?}");
    }
}

/// The http links of a host never wait for its dead https
/// origin. The runner's view of a one-request crawl: the first https link
/// is held aside in the host's lane, so the lane is taken for every link
/// popped after it. The https links popped then must still be held aside,
/// not as links waiting for a busy key (which would take the only
/// look-ahead place until the https origin's robots.txt back-off ends), and
/// the http link behind them must be popped.
#[test]
fn links_of_a_blocked_origin_on_a_taken_key_never_take_the_look_ahead() {
    let spec = spec(StrategyKind::Bfs);
    let mut core = JobCore::new(&spec);
    core.add_seeds(&[
        url("https://site.test/a"),
        url("https://site.test/b"),
        url("https://site.test/c"),
        url("http://site.test/d"),
    ]);
    let wait = Duration::from_secs(256);
    let own = |u: &Url| match u.scheme() {
        "https" => Readiness::Blocked(wait),
        _ => Readiness::Now,
    };
    // The host's lane holds the first https link from the second pop on.
    let taken = |u: &Url| own(u).on_taken_key();
    let mut load = |id: LinkId| -> Result<Option<crate::record::FrontierEntry>, ()> {
        panic!("{id} is not in memory")
    };
    let first = match core.next_step(&own, 1, &mut load) {
        Ok(NextStep::Hold(h)) => h,
        other => panic!("{other:?}"),
    };
    assert_eq!(first.url().as_str(), "https://site.test/a");
    let mut held = vec![first];
    loop {
        match core.next_step(&taken, 1, &mut load) {
            Ok(NextStep::Hold(h)) => held.push(h),
            Ok(NextStep::Wait(_)) => break,
            other => panic!("{other:?}"),
        }
    }
    let urls: Vec<&str> = held.iter().map(|h| h.url().as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://site.test/a",
            "https://site.test/b",
            "https://site.test/c",
            "http://site.test/d"
        ],
        "the http link is popped past the https ones, held for its key only"
    );
    // The key frees: the http link begins, the https ones still wait.
    let d = held.pop().expect("the http link");
    assert!(core.begin_held(d).is_some());
    for h in held {
        core.release_held(h);
    }
    assert_eq!(core.held(), 0);
    core.abandon_all();

    // What the runner did before: a taken key hid the origin's hold-back.
    // The second https link took the look-ahead place as waiting for its
    // key, and the http link was not popped until the https origin's
    // back-off ended (3 s with two retries before the fix).
    let mut core = JobCore::new(&spec);
    core.add_seeds(&[
        url("https://site.test/a"),
        url("https://site.test/b"),
        url("http://site.test/d"),
    ]);
    let hidden = |_: &Url| Readiness::Busy;
    let mut held = Vec::new();
    for readiness in [&own as &dyn Fn(&Url) -> Readiness, &hidden, &hidden] {
        match core.next_step(readiness, 1, &mut load) {
            Ok(NextStep::Hold(h)) => held.push(h),
            Ok(NextStep::Wait(_)) => break,
            other => panic!("{other:?}"),
        }
    }
    let urls: Vec<&str> = held.iter().map(|h| h.url().as_str()).collect();
    assert_eq!(urls, ["https://site.test/a", "https://site.test/b"]);
    for h in held {
        core.release_held(h);
    }
    core.abandon_all();
}

/// A job of a host-aware strategy killed at a checkpoint, with many steps
/// in flight before it, resumes its decisions exactly: the learner, its
/// RNG, the frontier (with the keys of links it deferred) and the seen set
/// restored from the checkpoint take the same steps, in the same order, as
/// the job that was not killed. (ldcoc's arms are pay-level domains: it is
/// measured under the politeness key it chooses by; a link held for a busy
/// key at the kill is chosen again after it, in the strategy's order.)
#[test]
fn a_resumed_host_aware_job_decides_exactly_as_the_one_that_ran_on() {
    use crate::extract::PolitenessPer;
    let settings = [
        (StrategyKind::Anthelion, PolitenessPer::Host),
        (StrategyKind::Anthelion, PolitenessPer::Pld),
        (StrategyKind::Ldcoc, PolitenessPer::Pld),
    ];
    for (kind, per) in settings {
        let steps = |r: &mut replay::Replay, n: usize| -> Vec<LinkId> {
            r.crawl_concurrent(&mut OneDomainWeb, 64, per, 16, n)
                .into_iter()
                .map(|s| s.id)
                .collect()
        };
        let mut ran_on = one_domain_replay(kind);
        assert_eq!(steps(&mut ran_on, 40).len(), 40, "{kind:?} {per:?}");
        assert_eq!(ran_on.release_held(), 0, "{kind:?} {per:?}: nothing held");
        let mut resumed = ran_on
            .resume(kind.build(3))
            .expect("the saved state decodes");
        let expected = steps(&mut ran_on, 150);
        assert!(expected.len() > 100, "{kind:?} {per:?}: {}", expected.len());
        assert_eq!(steps(&mut resumed, 150), expected, "{kind:?} {per:?}");
        assert_eq!(
            resumed.strategy().save(),
            ran_on.strategy().save(),
            "{kind:?} {per:?}: the same learned state after the same steps"
        );
    }
}
