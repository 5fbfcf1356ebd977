//! Test-only helpers shared by the slicer tests: item fixtures, budgets, naive reference
//! algorithms.

use std::sync::Mutex;

use crate::error::Result;
use crate::model::{ContextBudget, ContextItem, ContextKind, ScoredItem};
use crate::slicer::{SliceOutcome, Slicer};

/// Owns the items of a test so that `ScoredItem`s can borrow them.
pub(crate) struct Fixture {
    items: Vec<ContextItem>,
    scores: Vec<f64>,
}

impl Fixture {
    /// Items from `(content, tokens, kind, score)` tuples.
    pub(crate) fn new(specs: &[(&str, i64, &str, f64)]) -> Self {
        let owned: Vec<(String, i64, String, f64)> = specs
            .iter()
            .map(|&(c, t, k, s)| (c.to_string(), t, k.to_string(), s))
            .collect();
        Self::from_owned(&owned)
    }

    /// Items from `(content, tokens, kind, score)` tuples with owned strings.
    pub(crate) fn from_owned(specs: &[(String, i64, String, f64)]) -> Self {
        let items = specs
            .iter()
            .map(|(c, t, k, _)| {
                ContextItem::builder(c.clone(), *t)
                    .kind(ContextKind::new(k.clone()).unwrap())
                    .build()
                    .unwrap()
            })
            .collect();
        let scores = specs.iter().map(|s| s.3).collect();
        Self { items, scores }
    }

    /// Items of kind `x` named `i0`, `i1`, … from `(tokens, score)` pairs.
    pub(crate) fn from_tokens_scores(specs: &[(i64, f64)]) -> Self {
        let owned: Vec<(String, i64, String, f64)> = specs
            .iter()
            .enumerate()
            .map(|(i, &(t, s))| (format!("i{i}"), t, "x".to_string(), s))
            .collect();
        Self::from_owned(&owned)
    }

    /// The scored view the slicers take.
    pub(crate) fn scored(&self) -> Vec<ScoredItem<'_>> {
        self.items
            .iter()
            .zip(&self.scores)
            .map(|(item, &score)| ScoredItem { item, score })
            .collect()
    }
}

/// Inner slicer that records every call's (contents, max, target) and selects everything.
#[derive(Debug, Default)]
pub(crate) struct Recorder(Mutex<Vec<(Vec<String>, i64, i64)>>);

impl Recorder {
    /// The calls so far.
    pub(crate) fn calls(&self) -> Vec<(Vec<String>, i64, i64)> {
        self.0.lock().unwrap().clone()
    }
}

impl Slicer for Recorder {
    fn slice(&self, items: &[ScoredItem<'_>], b: &ContextBudget) -> Result<SliceOutcome> {
        let names = items.iter().map(|s| s.item.content().to_string()).collect();
        self.0
            .lock()
            .unwrap()
            .push((names, b.max_tokens(), b.target_tokens()));
        Ok(SliceOutcome {
            selected: (0..items.len()).collect(),
            ..Default::default()
        })
    }
}

/// `Budget(max = target, target)`.
pub(crate) fn budget(target: i64) -> ContextBudget {
    ContextBudget::new(target, target).unwrap()
}

/// Runs `slicer` with `Budget(target, target)` and unwraps.
pub(crate) fn run(slicer: &dyn Slicer, items: &[ScoredItem<'_>], target: i64) -> SliceOutcome {
    slicer.slice(items, &budget(target)).unwrap()
}

/// Contents of the selected positions, in output order.
pub(crate) fn contents(items: &[ScoredItem<'_>], positions: &[usize]) -> Vec<String> {
    positions
        .iter()
        .map(|&p| items[p].item.content().to_string())
        .collect()
}

/// The crate-style knapsack of spec 04 §3.1 with a full `Vec<Vec<bool>>` table and no
/// shortcuts (sums saturate, as in ctxpack). Returns the positions in output order.
pub(crate) fn naive_knapsack(items: &[ScoredItem<'_>], target: i64, q: i64) -> Vec<usize> {
    if items.is_empty() || target <= 0 {
        return Vec::new();
    }
    let zero: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].item.tokens() == 0)
        .collect();
    let cands: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].item.tokens() > 0)
        .collect();
    let cap = (target / q) as usize;
    if cands.is_empty() || cap == 0 {
        return zero;
    }
    let w: Vec<usize> = cands
        .iter()
        .map(|&i| ((items[i].item.tokens() + q - 1) / q) as usize)
        .collect();
    let v: Vec<i64> = cands
        .iter()
        .map(|&i| ((items[i].score * 10000.0).floor() as i64).max(0))
        .collect();
    let mut best = vec![0i64; cap + 1];
    let mut take = vec![vec![false; cap + 1]; cands.len()];
    for j in 0..cands.len() {
        if w[j] > cap {
            continue;
        }
        for c in (w[j]..=cap).rev() {
            let cand = best[c - w[j]].saturating_add(v[j]);
            if cand > best[c] {
                best[c] = cand;
                take[j][c] = true;
            }
        }
    }
    let mut out = zero;
    let mut c = cap;
    for j in (0..cands.len()).rev() {
        if take[j][c] {
            out.push(cands[j]);
            c -= w[j];
        }
    }
    out
}

/// What the naive count-quota reference returns.
#[derive(Debug, PartialEq)]
pub(crate) struct NaiveCount {
    /// Selected positions in output order.
    pub selected: Vec<usize>,
    /// `(kind, required, satisfied)` per shortfall.
    pub shortfalls: Vec<(String, u64, u64)>,
    /// Cap-excluded positions.
    pub cap_excluded: Vec<usize>,
}

/// A direct transcription of spec 04 §6.2 with the decision D10 in docs/decisions.md Phase 1 order:
/// full stable sorts, string-keyed maps. `entries` are `(kind, require, cap)`; `phase2` gets the
/// residual and the room and returns positions into the residual. `Err((kind, satisfied,
/// required))` stands for the Throw error.
pub(crate) fn naive_count(
    items: &[ScoredItem<'_>],
    target: i64,
    entries: &[(String, usize, usize)],
    throw: bool,
    phase2: &dyn Fn(&[ScoredItem<'_>], i64) -> Vec<usize>,
) -> std::result::Result<NaiveCount, (String, u64, u64)> {
    use std::collections::HashMap;
    let mut out = NaiveCount {
        selected: vec![],
        shortfalls: vec![],
        cap_excluded: vec![],
    };
    if items.is_empty() || target <= 0 {
        return Ok(out);
    }
    let fold = |s: &str| s.to_ascii_lowercase();
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut pre = 0i64;
    for (kind, require, _) in entries {
        if *require == 0 {
            continue;
        }
        let mut group: Vec<usize> = (0..items.len())
            .filter(|&p| fold(items[p].item.kind().as_str()) == fold(kind))
            .collect();
        group.sort_by(|&a, &b| items[b].score.total_cmp(&items[a].score));
        group.truncate(*require);
        counts.insert(fold(kind), group.len());
        pre += group.iter().map(|&p| items[p].item.tokens()).sum::<i64>();
        out.selected.extend(&group);
        if group.len() < *require {
            if throw {
                return Err((kind.clone(), group.len() as u64, *require as u64));
            }
            out.shortfalls
                .push((kind.clone(), *require as u64, group.len() as u64));
        }
    }
    let rest: Vec<usize> = (0..items.len())
        .filter(|p| !out.selected.contains(p))
        .collect();
    let room = (target - pre).max(0);
    let inner: Vec<usize> = if room > 0 && !rest.is_empty() {
        let view: Vec<ScoredItem<'_>> = rest.iter().map(|&p| items[p]).collect();
        phase2(&view, room).into_iter().map(|p| rest[p]).collect()
    } else {
        vec![]
    };
    let caps: HashMap<String, usize> = entries.iter().map(|(k, _, c)| (fold(k), *c)).collect();
    for p in inner {
        let k = fold(items[p].item.kind().as_str());
        let n = counts.entry(k.clone()).or_insert(0);
        if caps.get(&k).is_some_and(|&cap| *n >= cap) {
            out.cap_excluded.push(p);
        } else {
            out.selected.push(p);
            *n += 1;
        }
    }
    Ok(out)
}

/// One random count-quota scenario.
pub(crate) struct CountCase {
    /// `(content, tokens, kind, score)`.
    pub items: Vec<(String, i64, String, f64)>,
    /// `(kind, require, cap)` with distinct folded kinds.
    pub entries: Vec<(String, usize, usize)>,
    /// The budget target.
    pub target: i64,
    /// Scarcity Throw instead of Degrade.
    pub throw: bool,
}

impl CountCase {
    /// Kinds in mixed case, one configured kind without items (`ghost`), tied scores,
    /// zero-token items.
    pub(crate) fn random(rng: &mut crate::testutil::Rng) -> Self {
        const ITEM_KINDS: [&str; 6] = ["a", "A", "b", "B", "c", "d"];
        const ENTRY_KINDS: [&str; 4] = ["a", "B", "c", "ghost"];
        const SCORES: [f64; 5] = [0.1, 0.3, 0.5, 0.8, 0.0];
        let n = rng.below(18);
        let items = (0..n)
            .map(|i| {
                let tokens = if rng.chance(0.15) {
                    0
                } else {
                    rng.range(1, 90)
                };
                let score = if rng.chance(0.6) {
                    *rng.pick(&SCORES)
                } else {
                    rng.unit()
                };
                (
                    format!("i{i}"),
                    tokens,
                    rng.pick(&ITEM_KINDS).to_string(),
                    score,
                )
            })
            .collect();
        let mut entries = Vec::new();
        for kind in ENTRY_KINDS {
            if rng.chance(0.6) {
                let require = rng.below(4);
                let cap = require + rng.below(3);
                let cap = if require == 0 && rng.chance(0.2) {
                    0
                } else {
                    cap.max(1)
                };
                entries.push((kind.to_string(), require, cap));
            }
        }
        let target = if rng.chance(0.1) {
            0
        } else {
            rng.range(1, 400)
        };
        let throw = rng.chance(0.2);
        Self {
            items,
            entries,
            target,
            throw,
        }
    }

    /// The entries as slicer configuration.
    pub(crate) fn quota_entries(&self) -> Vec<crate::slicer::CountQuotaEntry> {
        self.entries
            .iter()
            .map(|(k, r, c)| {
                crate::slicer::CountQuotaEntry::new(ContextKind::new(k.clone()).unwrap(), *r, *c)
                    .unwrap()
            })
            .collect()
    }

    /// The scarcity behaviour.
    pub(crate) fn scarcity(&self) -> crate::slicer::ScarcityBehavior {
        if self.throw {
            crate::slicer::ScarcityBehavior::Throw
        } else {
            crate::slicer::ScarcityBehavior::Degrade
        }
    }
}

/// How often the random count cases reached each interesting outcome.
#[derive(Debug, Default)]
pub(crate) struct Coverage {
    /// Cases that failed under Throw.
    pub threw: usize,
    /// Cases with at least one shortfall.
    pub shortfalls: usize,
    /// Cases with at least one cap exclusion.
    pub cap_excluded: usize,
    /// Cases whose Phase 1 commits exceeded the target.
    pub over_target: usize,
}

impl Coverage {
    /// Panics unless every outcome was reached at least `min` times.
    pub(crate) fn assert_at_least(&self, min: usize) {
        let Coverage {
            threw,
            shortfalls,
            cap_excluded,
            over_target,
        } = *self;
        assert!(
            [threw, shortfalls, cap_excluded, over_target]
                .iter()
                .all(|&n| n >= min),
            "random cases too narrow: {self:?}"
        );
    }
}

/// Runs `slicer` on `case`, compares with [`naive_count`] and checks the invariants: commits
/// kept as a prefix, caps respected, positions distinct, Phase 2 within its room.
pub(crate) fn check_count_case(
    seed: u64,
    case: &CountCase,
    slicer: &dyn Slicer,
    phase2: &dyn Fn(&[ScoredItem<'_>], i64) -> Vec<usize>,
    coverage: &mut Coverage,
) {
    let fx = Fixture::from_owned(&case.items);
    let items = fx.scored();
    let want = naive_count(&items, case.target, &case.entries, case.throw, phase2);
    let got = slicer.slice(&items, &budget(case.target));
    let got = match (got, want) {
        (Err(e), Err((kind, satisfied, required))) => {
            match e {
                crate::Error::CountRequirementUnmet {
                    kind: k,
                    satisfied: s,
                    required: r,
                    ..
                } => {
                    assert_eq!((k, s, r), (kind, satisfied, required), "seed {seed}")
                }
                other => panic!("seed {seed}: unexpected error {other:?}"),
            }
            coverage.threw += 1;
            return;
        }
        (Ok(got), Ok(want)) => {
            let shortfalls: Vec<(String, u64, u64)> = got
                .shortfalls
                .iter()
                .map(|s| (s.kind.clone(), s.required_count, s.satisfied_count))
                .collect();
            let as_naive = NaiveCount {
                selected: got.selected.clone(),
                shortfalls,
                cap_excluded: got.cap_excluded.clone(),
            };
            assert_eq!(as_naive, want, "seed {seed}");
            got
        }
        (got, want) => panic!("seed {seed}: got {got:?}, want {want:?}"),
    };
    // Invariants, independent of the reference.
    let mut seen = vec![false; items.len()];
    for &p in got.selected.iter().chain(&got.cap_excluded) {
        assert!(!seen[p], "seed {seed}: position {p} twice");
        seen[p] = true;
    }
    let mut committed = 0usize;
    let mut committed_tokens = 0i64;
    for (kind, require, cap) in &case.entries {
        let of_kind = |p: &&usize| items[**p].item.kind().matches(kind);
        let available = items.iter().filter(|s| s.item.kind().matches(kind)).count();
        let n = got.selected.iter().filter(of_kind).count();
        assert!(n <= *cap, "seed {seed}: kind {kind} has {n} > cap {cap}");
        if case.target > 0 && !items.is_empty() {
            let commits = (*require).min(available);
            assert!(n >= commits, "seed {seed}: commits of {kind} lost");
            committed += commits;
        }
    }
    for &p in &got.selected[..committed] {
        committed_tokens += items[p].item.tokens();
    }
    coverage.shortfalls += usize::from(!got.shortfalls.is_empty());
    coverage.cap_excluded += usize::from(!got.cap_excluded.is_empty());
    coverage.over_target += usize::from(committed_tokens > case.target);
    let phase2_tokens: i64 = got.selected[committed..]
        .iter()
        .map(|&p| items[p].item.tokens())
        .sum();
    assert!(
        phase2_tokens <= (case.target - committed_tokens).max(0),
        "seed {seed}: phase 2 over room"
    );
}
