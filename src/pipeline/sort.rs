//! Stage 4, Sort (spec 02 §5): score descending under the IEEE total order, ties by
//! position. Deduplicate keeps input order, so the input index is the position key.

use crate::pipeline::score::Candidate;
use crate::radix::{f64_from_order_key, f64_order_key, stable_sort_by_key};

/// Candidates arrive in input order (Classify, Score and Deduplicate keep it), so a
/// stable sort by descending score gives (score descending, index ascending). The key is
/// the inverted total-order key of the score, from which the score is recovered exactly.
pub(super) fn sort_by_score(candidates: &mut [Candidate]) {
    debug_assert!(candidates.windows(2).all(|w| w[0].index < w[1].index));
    let mut keyed: Vec<(u64, usize)> = candidates
        .iter()
        .map(|c| (!f64_order_key(c.score), c.index))
        .collect();
    stable_sort_by_key(&mut keyed);
    for (slot, (key, index)) in candidates.iter_mut().zip(keyed) {
        *slot = Candidate {
            index,
            score: f64_from_order_key(!key),
        };
    }
}
