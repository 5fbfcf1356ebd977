//! Stage 4, Sort (spec 02 §5): score descending under the IEEE total order, ties by
//! position. Deduplicate keeps input order, so the input index is the position key.

use crate::pipeline::score::Candidate;

pub(super) fn sort_by_score(candidates: &mut [Candidate]) {
    candidates.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
}
