//! Stage 4, Sort (spec 02 §5): score descending under the IEEE total order, ties by
//! position. Deduplicate keeps input order, so the input index is the position key.

use crate::pipeline::score::Candidate;
use crate::radix::{f64_order_key, stable_order};

/// Candidates arrive in input order (Classify, Score and Deduplicate keep it), so a
/// stable sort by descending score gives (score descending, index ascending): the stable
/// order of the inverted total-order keys of the scores.
///
/// Up to [`PERMUTE_MAX_LEN`] candidates are permuted in place (no allocation); longer lists
/// are gathered into a new vector, whose independent reads overlap where the in-place
/// permutation's chain of dependent reads misses the cache on every step.
pub(super) fn sort_by_score(mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    debug_assert!(candidates.windows(2).all(|w| w[0].index < w[1].index));
    let order = stable_order(candidates.len(), |k| !f64_order_key(candidates[k].score));
    if candidates.len() <= PERMUTE_MAX_LEN {
        permute(&mut candidates, order);
        return candidates;
    }
    order.into_iter().map(|k| candidates[k]).collect()
}

/// Up to this many candidates (24 KiB of them), Sort permutes in place. Beyond, the
/// gather was measured faster: at 10 000 candidates of 24 bytes, the permutation's chain
/// of dependent moves cost more than the new vector.
const PERMUTE_MAX_LEN: usize = 1 << 10;

/// Puts `values[order[i]]` at position `i` for every `i`, in place (`order` a
/// permutation of the positions): each cycle of the permutation is followed once, its
/// entries marked done in `order` itself, so no copy of `values` is made.
fn permute<T: Copy>(values: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    debug_assert_eq!(values.len(), order.len());
    for start in 0..order.len() {
        if order[start] == DONE {
            continue;
        }
        let first = values[start];
        let mut slot = start;
        loop {
            let from = std::mem::replace(&mut order[slot], DONE);
            if from == start {
                values[slot] = first;
                break;
            }
            values[slot] = values[from];
            slot = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    #[test]
    fn permute_matches_a_gather() {
        for seed in 0..200 {
            let mut rng = Rng::new(seed);
            let n = rng.below(300);
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, rng.below(i + 1));
            }
            let values: Vec<u64> = (0..n).map(|_| rng.below(1000) as u64).collect();
            let want: Vec<u64> = order.iter().map(|&k| values[k]).collect();
            let mut got = values.clone();
            permute(&mut got, order);
            assert_eq!(got, want);
        }
    }

    #[test]
    fn sorts_by_score_descending_then_index() {
        for seed in 0..200 {
            let mut rng = Rng::new(seed);
            let n = match seed % 8 {
                0 => PERMUTE_MAX_LEN + rng.below(3000),
                _ => rng.below(700),
            };
            let candidates: Vec<Candidate> = (0..n)
                .map(|index| Candidate {
                    index,
                    score: match rng.below(5) {
                        0 => f64::NAN,
                        1 => -0.0,
                        _ => rng.below(8) as f64 / 8.0,
                    },
                    tokens: index as i64,
                })
                .collect();
            let mut want = candidates.clone();
            want.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
            let candidates = sort_by_score(candidates);
            let key = |c: &[Candidate]| c.iter().map(|c| (c.index, c.tokens)).collect::<Vec<_>>();
            assert_eq!(key(&candidates), key(&want));
        }
    }
}
