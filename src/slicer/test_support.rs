//! Test-only helpers shared by the slicer tests: item fixtures, budgets, naive reference
//! algorithms.

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
