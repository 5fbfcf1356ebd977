//! Stage 4, Sort (spec 02 §5): score descending under the IEEE total order, ties by
//! position. Deduplicate keeps input order, so the input index is the position key.

use crate::pipeline::score::Candidate;
use crate::radix::{f64_order_key, stable_order};

/// Candidates arrive in input order (Classify, Score and Deduplicate keep it), so a
/// stable sort by descending score gives (score descending, index ascending): the stable
/// order of the inverted total-order keys of the scores.
pub(super) fn sort_by_score(candidates: &mut [Candidate]) {
    debug_assert!(candidates.windows(2).all(|w| w[0].index < w[1].index));
    let order = stable_order(candidates.len(), |k| !f64_order_key(candidates[k].score));
    let unsorted = candidates.to_vec();
    for (slot, k) in candidates.iter_mut().zip(order) {
        *slot = unsorted[k];
    }
}
