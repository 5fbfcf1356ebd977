//! GreedySlice (spec 04 §2): value-density greedy fill in a single pass.

use crate::error::{Error, Result};
use crate::model::{ContextBudget, Levels, ScoredItem, Units};
use crate::radix::{f64_order_key, stable_order, stable_order_with_ties_in, SortBuffers};
use crate::slicer::shared::select_units;
use crate::slicer::{SliceOutcome, Slicer};

/// GreedySlice: value-density greedy fill (spec 04 §2).
///
/// Items are visited by density `score / tokens` descending (zero-token items get
/// `f64::MAX`, the largest finite double), ties by input position ascending, under the IEEE
/// total order. Each item is taken when its tokens fit the remaining target; an item that
/// does not fit is skipped for good while later, smaller items are still tried. Zero-token
/// items are always taken when the target is positive. The output lists the selected
/// positions in that visiting order.
///
/// With groups, the candidates are units (a group's tokens are its members' sum, its
/// score the group value), ties by the unit's earliest position. With variants
/// (`docs/variants.md`), units are visited by the density of their full form and each is
/// taken at the richest level that still fits.
///
/// Negative-token items never reach a slicer through the pipeline (Classify removes them);
/// on a direct call they always fit and *grow* the remaining budget, as the specification
/// describes (04 §1.2 rule 5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GreedySlice;

impl GreedySlice {
    /// Builds the slicer; it has no configuration.
    pub fn new() -> Self {
        Self
    }
}

impl Slicer for GreedySlice {
    fn slice(&self, items: &[ScoredItem<'_>], budget: &ContextBudget) -> Result<SliceOutcome> {
        let target = budget.target_tokens();
        if items.is_empty() || target <= 0 {
            return Ok(SliceOutcome::default());
        }
        // One pass reads every item (the only one that touches the items themselves).
        let tokens: Vec<i64> = items.iter().map(|s| s.item.tokens()).collect();
        let order = density_order(tokens.len(), |pos| tokens[pos], |pos| items[pos].score);
        let selected = fill(&tokens, &order, target)?;
        Ok(SliceOutcome {
            selected,
            ..SliceOutcome::default()
        })
    }

    /// The same pass over units: a unit's density is its value over its tokens (zero-token
    /// units first, as zero-token items), ties by unit order (earliest position first);
    /// a selected unit contributes all its members, in input order.
    fn slice_grouped(
        &self,
        items: &[ScoredItem<'_>],
        units: &Units,
        budget: &ContextBudget,
    ) -> Result<SliceOutcome> {
        select_units(
            items,
            units,
            budget,
            |tokens, target| {
                let order = density_order(tokens.len(), |u| tokens[u], |u| units.value(u));
                fill(tokens, &order, target)
            },
            |levels, target| fill_levels(levels, units.len(), target),
        )
    }
}

/// The greedy pass over units with levels (`docs/variants.md`): units in order of their
/// full level's density (as [`density_order`]), each taken at its richest level that fits
/// the room left (a zero-token level always fits); a unit with no fitting level is skipped.
/// Returns (unit, level) in visiting order.
fn fill_levels(levels: &Levels, n: usize, target: i64) -> Result<Vec<(usize, usize)>> {
    let full: Vec<i64> = (0..n).map(|u| levels.tokens(u, 0)).collect();
    let order = density_order(n, |u| full[u], |u| levels.value(u, 0));
    let mut room = target;
    let mut picks = Vec::new();
    for u in order {
        let fitting = (0..levels.count(u)).find(|&l| {
            let t = levels.tokens(u, l);
            t == 0 || t <= room
        });
        if let Some(level) = fitting {
            picks.push((u, level));
            room = room.checked_sub(levels.tokens(u, level)).ok_or_else(|| {
                Error::TokenOverflow("GreedySlice remaining budget does not fit in 64 bits".into())
            })?;
        }
    }
    Ok(picks)
}

/// Value density of one item: `score / tokens` as an f64 division, `f64::MAX` for zero tokens.
fn density(score: f64, tokens: i64) -> f64 {
    match tokens {
        0 => f64::MAX,
        tokens => score / tokens as f64,
    }
}

/// Candidates (items or units) ordered by density descending (total order), then index
/// ascending: the stable order of the inverted total-order keys of the densities.
/// Candidate `i` of the `n` has `tokens(i)` tokens and score `score(i)`.
fn density_order(
    n: usize,
    tokens: impl Fn(usize) -> i64,
    score: impl Fn(usize) -> f64,
) -> Vec<usize> {
    stable_order(n, |i| density_key(score(i), tokens(i)))
}

/// The sort key of a density order: the inverted total-order key of the density.
fn density_key(score: f64, tokens: i64) -> u64 {
    !f64_order_key(density(score, tokens))
}

/// The single greedy pass over `order` with `target > 0` tokens of room (`tokens[i]`
/// is the token count of candidate `i`); the selected candidates in visiting order.
fn fill(tokens: &[i64], order: &[usize], target: i64) -> Result<Vec<usize>> {
    // At most every candidate: one allocation instead of a doubling series.
    let mut selected = Vec::with_capacity(order.len());
    visit(|pos| tokens[pos], order, target, |pos| selected.push(pos))?;
    Ok(selected)
}

/// The greedy pass itself: walks `order` with `target` tokens of room and calls `take`
/// with every candidate taken, in visiting order.
fn visit(
    tokens: impl Fn(usize) -> i64,
    order: &[usize],
    target: i64,
    mut take: impl FnMut(usize),
) -> Result<()> {
    let mut room = target;
    for &pos in order {
        let tokens = tokens(pos);
        if tokens == 0 {
            take(pos);
        } else if tokens <= room {
            take(pos);
            // Only a negative token count (direct calls) can overflow here.
            room = room.checked_sub(tokens).ok_or_else(|| {
                Error::TokenOverflow("GreedySlice remaining budget does not fit in 64 bits".into())
            })?;
        }
    }
    Ok(())
}

/// [`GreedySlice::slice`] over columns instead of item references, for the pipeline,
/// which has every candidate's tokens and score at hand: candidate `i` of the `n` has
/// `tokens(i)` tokens and score `score(i)`. Sets `selected[i]` (all false on entry, `n`
/// long) for exactly the candidates `slice` selects, and returns how many it set.
pub(crate) fn select_columns(
    n: usize,
    tokens: impl Fn(usize) -> i64,
    score: impl Fn(usize) -> f64,
    budget: &ContextBudget,
    selected: &mut [bool],
) -> Result<usize> {
    let target = budget.target_tokens();
    if n == 0 || target <= 0 {
        return Ok(0);
    }
    let order = density_order(n, &tokens, score);
    mark_selected(tokens, &order, target, selected)
}

/// [`select_columns`] over candidates that Sort has not ordered, its density order
/// computed in `buffers` (kept for the next call): candidate `i` is the `i`-th in input
/// order, and ties in density are broken as Sort's order would break them, by score
/// descending (total order), then position. So it selects, candidate for candidate, what
/// [`select_columns`] selects over the same candidates sorted by Sort (score descending,
/// position), without that sort.
pub(crate) fn select_columns_in(
    n: usize,
    tokens: impl Fn(usize) -> i64,
    score: impl Fn(usize) -> f64,
    budget: &ContextBudget,
    selected: &mut [bool],
    buffers: &mut SortBuffers,
) -> Result<usize> {
    let target = budget.target_tokens();
    if n == 0 || target <= 0 {
        return Ok(0);
    }
    let order = stable_order_with_ties_in(
        n,
        |i| density_key(score(i), tokens(i)),
        Some(|i| !f64_order_key(score(i))),
        buffers,
    );
    mark_selected(tokens, order, target, selected)
}

/// The greedy pass over `order` with `target` tokens of room, setting `selected` for every
/// candidate taken; how many it took.
fn mark_selected(
    tokens: impl Fn(usize) -> i64,
    order: &[usize],
    target: i64,
    selected: &mut [bool],
) -> Result<usize> {
    let mut count = 0;
    visit(tokens, order, target, |pos| {
        selected[pos] = true;
        count += 1;
    })?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slicer::test_support::{budget, run, Fixture};
    use crate::testutil::Rng;
    use std::cmp::Ordering;

    /// Reference: stable sort of every position by density, then the spec's loop.
    fn naive(items: &[ScoredItem<'_>], target: i64) -> Vec<usize> {
        if items.is_empty() || target <= 0 {
            return Vec::new();
        }
        let dens: Vec<f64> = items
            .iter()
            .map(|s| {
                if s.item.tokens() == 0 {
                    f64::MAX
                } else {
                    s.score / s.item.tokens() as f64
                }
            })
            .collect();
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&a, &b| dens[b].total_cmp(&dens[a]));
        let mut room = target;
        let mut out = Vec::new();
        for i in order {
            let t = items[i].item.tokens();
            if t == 0 {
                out.push(i);
            } else if t <= room {
                out.push(i);
                room -= t;
            }
        }
        out
    }

    fn greedy(fx: &Fixture, target: i64) -> Vec<usize> {
        run(&GreedySlice::new(), &fx.scored(), target).selected
    }

    #[test]
    fn empty_input_or_no_target_selects_nothing() {
        let fx = Fixture::new(&[("a", 0, "x", 0.9), ("b", 10, "x", 0.5)]);
        assert!(greedy(&Fixture::new(&[]), 100).is_empty());
        assert!(
            greedy(&fx, 0).is_empty(),
            "zero-token items are not returned at target 0"
        );
    }

    #[test]
    fn all_zero_token_items_come_back_in_input_order() {
        let fx = Fixture::new(&[("a", 0, "x", 0.1), ("b", 0, "x", 0.9), ("c", 0, "x", 0.5)]);
        assert_eq!(greedy(&fx, 1), vec![0, 1, 2]);
    }

    #[test]
    fn only_zero_token_items_when_nothing_else_fits() {
        let fx = Fixture::new(&[("a", 50, "x", 0.9), ("b", 0, "x", 0.1), ("c", 60, "x", 0.9)]);
        assert_eq!(greedy(&fx, 40), vec![1]);
    }

    #[test]
    fn everything_fits_in_density_order() {
        // densities: a 0.01, b 0.05, c 0.05, d 0.02
        let fx = Fixture::new(&[
            ("a", 10, "x", 0.1),
            ("b", 10, "x", 0.5),
            ("c", 2, "x", 0.1),
            ("d", 5, "x", 0.1),
        ]);
        assert_eq!(greedy(&fx, 1000), vec![1, 2, 3, 0]);
    }

    #[test]
    fn misfits_are_skipped_and_exact_fit_accepted() {
        // density order: a (0.9/60), b (0.5/50), c (0.1/40)
        let fx = Fixture::new(&[
            ("a", 60, "x", 0.9),
            ("b", 50, "x", 0.5),
            ("c", 40, "x", 0.1),
        ]);
        assert_eq!(
            greedy(&fx, 100),
            vec![0, 2],
            "b skipped, c still taken, exact fit"
        );
    }

    #[test]
    fn scores_are_never_a_tie_break() {
        // equal densities 0.01: order by index even though b has the higher score
        let fx = Fixture::new(&[("a", 10, "x", 0.1), ("b", 50, "x", 0.5)]);
        assert_eq!(greedy(&fx, 100), vec![0, 1]);
    }

    #[test]
    fn zero_and_negative_scores_are_still_taken_last() {
        let fx = Fixture::new(&[
            ("neg", 10, "x", -0.5),
            ("zero", 10, "x", 0.0),
            ("p", 10, "x", 0.1),
        ]);
        assert_eq!(greedy(&fx, 30), vec![2, 1, 0]);
    }

    #[test]
    fn non_finite_scores_rank_per_total_order() {
        // +inf and NaN densities rank above f64::MAX (zero-token); -0.0 below +0.0.
        let fx = Fixture::new(&[
            ("zero-tok", 0, "x", 0.0),
            ("inf", 10, "x", f64::INFINITY),
            ("nan", 10, "x", f64::NAN),
            ("negzero", 10, "x", -0.0),
            ("poszero", 10, "x", 0.0),
            ("max", 1, "x", f64::MAX),
        ]);
        assert_eq!(greedy(&fx, 1000), vec![2, 1, 0, 5, 4, 3]);
    }

    #[test]
    fn negative_tokens_grow_the_room_on_direct_calls() {
        let fx = Fixture::new(&[
            ("a", 10, "x", 0.9),
            ("b", -5, "x", -0.9),
            ("c", 15, "x", 0.1),
        ]);
        // density: a 0.09, b 0.18 (−0.9/−5), c 0.0067 → b, a, c; room 10 → 15 → 5 → 5 < 15
        assert_eq!(greedy(&fx, 10), vec![1, 0]);
        let fx = Fixture::new(&[("a", 1, "x", 0.1), ("b", i64::MIN, "x", -1.0)]);
        let err = GreedySlice::new()
            .slice(&fx.scored(), &budget(10))
            .unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::TokenOverflow);
    }

    #[test]
    fn total_order_key_matches_total_cmp() {
        let values = [
            f64::NEG_INFINITY,
            -f64::NAN,
            -1.0,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
        ];
        for a in values {
            for b in values {
                let want = a.total_cmp(&b);
                let got = f64_order_key(a).cmp(&f64_order_key(b));
                assert_eq!(got, want, "{a} vs {b}");
            }
        }
        assert_eq!(f64_order_key(-0.0).cmp(&f64_order_key(0.0)), Ordering::Less);
    }

    #[test]
    fn random_cases_match_the_naive_sort() {
        const SCORES: [f64; 12] = [
            0.0,
            -0.0,
            0.1,
            0.25,
            0.5,
            1.0,
            -0.3,
            3.7,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            1e-300,
        ];
        for seed in 0..3000u64 {
            let mut rng = Rng::new(seed);
            let n = rng.below(30);
            let specs: Vec<(i64, f64)> = (0..n)
                .map(|_| {
                    let tokens = match rng.below(10) {
                        0 => 0,
                        1 => rng.range(1, 3),
                        2 if rng.chance(0.3) => -rng.range(1, 20),
                        _ => rng.range(1, 120),
                    };
                    let score = if rng.chance(0.5) {
                        *rng.pick(&SCORES)
                    } else {
                        rng.unit() * 2.0 - 0.5
                    };
                    (tokens, score)
                })
                .collect();
            let fx = Fixture::from_tokens_scores(&specs);
            let target = rng.range(0, 600);
            let items = fx.scored();
            let want = naive(&items, target);
            let got = run(&GreedySlice::new(), &items, target).selected;
            assert_eq!(got, want, "seed {seed}");
        }
    }

    #[test]
    fn columns_select_exactly_what_slice_selects() {
        let scores = [0.0, -0.0, 0.5, 1.0, -0.3, f64::MAX, f64::INFINITY, f64::NAN];
        // The buffered form reuses one set of buffers across all the cases.
        let mut buffers = SortBuffers::default();
        for seed in 0..1500u64 {
            let mut rng = Rng::new(seed ^ 0x5eed);
            let n = match seed % 5 {
                0 => 300 + rng.below(3000), // past the radix sort's small-input path
                _ => rng.below(40),
            };
            let specs: Vec<(i64, f64)> = (0..n)
                .map(|_| {
                    let tokens = match rng.below(8) {
                        0 => 0,
                        1 => rng.range(1, 3),
                        _ => rng.range(1, 400),
                    };
                    let score = match rng.below(3) {
                        0 => *rng.pick(&scores),
                        1 => rng.below(5) as f64 / 4.0, // many equal densities
                        _ => rng.unit(),
                    };
                    (tokens, score)
                })
                .collect();
            let fx = Fixture::from_tokens_scores(&specs);
            let total: i64 = specs.iter().map(|s| s.0).sum();
            let target = rng.range(0, total.max(1) + 50);
            let want = naive(&fx.scored(), target);
            let mut want_mask = vec![false; n];
            for &p in &want {
                want_mask[p] = true;
            }
            let mut got = vec![false; n];
            let (tokens, score) = (|i: usize| specs[i].0, |i: usize| specs[i].1);
            let count = select_columns(n, tokens, score, &budget(target), &mut got).unwrap();
            assert_eq!(got, want_mask, "seed {seed}");
            assert_eq!(count, want.len(), "seed {seed}");
            // The unsorted form over the same candidates in input order: sorted by Sort
            // (score descending, then position), they are the candidates above.
            let mut sorted: Vec<usize> = (0..n).collect();
            sorted.sort_by(|&a, &b| specs[b].1.total_cmp(&specs[a].1));
            let mut unsorted = vec![false; n];
            got.fill(false);
            let (tokens, score) = (|i: usize| specs[sorted[i]].0, |i: usize| specs[sorted[i]].1);
            let count = select_columns(n, tokens, score, &budget(target), &mut got).unwrap();
            let (tokens, score) = (|i: usize| specs[i].0, |i: usize| specs[i].1);
            let budget = budget(target);
            let count_in =
                select_columns_in(n, tokens, score, &budget, &mut unsorted, &mut buffers);
            assert_eq!(count_in.unwrap(), count, "seed {seed}, unsorted");
            let by_candidate: Vec<bool> = (0..n).map(|i| unsorted[sorted[i]]).collect();
            assert_eq!(
                by_candidate, got,
                "seed {seed}, unsorted, in reused buffers"
            );
        }
    }
}
