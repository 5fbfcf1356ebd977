//! Scorers (spec chapter 03): the trait and the eleven built-ins.
//!
//! A scorer sees the whole scoreable list at once (`score_all`), so relative scorers can
//! rank by sorting, build one tag index, or run an inner scorer once per pass; the spec's
//! per-item `score(item, allItems)` is the special case (see [`PerItemScorer`]).

use std::fmt;

use crate::error::{Error, Result};
use crate::model::ContextItem;

mod composite;
mod decay;
mod frequency;
mod kind;
mod metadata_key;
mod metadata_trust;
mod per_item;
mod priority;
mod rank;
mod rank_count;
mod recency;
mod reflexive;
mod scaled;
mod str_table;
mod tag;
#[cfg(test)]
mod test_support;

pub use composite::CompositeScorer;
pub use decay::{Clock, DecayCurve, DecayScorer, FixedClock, SystemClock};
pub use frequency::FrequencyScorer;
pub use kind::KindScorer;
pub use metadata_key::MetadataKeyScorer;
pub use metadata_trust::MetadataTrustScorer;
pub use per_item::PerItemScorer;
pub use priority::PriorityScorer;
pub use recency::RecencyScorer;
pub use reflexive::ReflexiveScorer;
pub use scaled::ScaledScorer;
pub use tag::TagScorer;

pub(crate) use rank::{rank_sorted_in, RanksInOrder};
pub(crate) use rank_count::{count_below, ranked_by_counting, Below};
pub(crate) use reflexive::clamped_hint;
pub(crate) use str_table::head_words;

/// Computes relevance scores for a whole scoreable list in one pass.
///
/// Contract (spec 03 §1): `out[i]` receives the score of `items[i]` computed against the
/// whole of `items`; identity is position. Scorers are pure: the same `items` give the same
/// scores. A built-in scorer fails only when `out` and `items` differ in length
/// ([`Error::InvalidArgument`]); a custom scorer may return an error, which fails the run.
///
/// Every scorer also has `as_any()` (through a blanket implementation, never written by
/// hand), which lets policy code recognise the built-in scorers by downcasting.
///
/// A custom scorer that prefers short items:
///
/// ```
/// use std::sync::Arc;
///
/// use ctxpack::scorer::Scorer;
/// use ctxpack::{ContextItem, Result};
///
/// #[derive(Debug)]
/// struct Brevity;
///
/// impl Scorer for Brevity {
///     fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
///         for (slot, item) in out.iter_mut().zip(items) {
///             *slot = 1.0 / (1.0 + item.tokens().max(0) as f64);
///         }
///         Ok(())
///     }
/// }
///
/// let items = [ContextItem::new("short", 1)?, ContextItem::new("longer", 3)?];
/// let refs: Vec<&ContextItem> = items.iter().collect();
/// let mut scores = [0.0; 2];
/// Brevity.score_all(&refs, &mut scores)?;
/// assert_eq!(scores, [0.5, 0.25]);
///
/// // Pipelines hold scorers as `Arc<dyn Scorer>`; `as_any()` recovers the type.
/// let scorer: Arc<dyn Scorer> = Arc::new(Brevity);
/// assert!(scorer.as_any().is::<Brevity>());
/// # Ok::<(), ctxpack::Error>(())
/// ```
pub trait Scorer: crate::downcast::AsAny + Send + Sync + fmt::Debug {
    /// Writes one score per item into `out` (`out.len() == items.len()`).
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()>;

    /// As [`Scorer::score_all`], where `positions[i]` is the position of `items[i]` in the
    /// caller's input (the pipeline scores only some of its items), so that an error can
    /// name the item the caller knows. Only scorers that report items in their errors
    /// (custom scorers) and scorers that call others (composite, scaled) need to
    /// override it; the default ignores `positions`.
    fn score_all_at(
        &self,
        items: &[&ContextItem],
        positions: &[usize],
        out: &mut [f64],
    ) -> Result<()> {
        let _ = positions;
        self.score_all(items, out)
    }
}

/// The caller's position of the `i`-th scored item: `positions[i]` when the caller gave
/// positions ([`Scorer::score_all_at`]), else `i`.
pub(crate) fn caller_position(positions: &[usize], i: usize) -> usize {
    positions.get(i).copied().unwrap_or(i)
}

/// Writes `score(item)` into `out` for every item: the batch pass of an absolute scorer,
/// whose score of an item never depends on the other items.
fn score_each(
    items: &[&ContextItem],
    out: &mut [f64],
    score: impl Fn(&ContextItem) -> f64,
) -> Result<()> {
    check_one_slot_per_item(items, out)?;
    for (slot, item) in out.iter_mut().zip(items) {
        *slot = score(item);
    }
    Ok(())
}

/// Fails with [`Error::InvalidArgument`] unless `out` has exactly one slot per item, so a
/// caller's sizing mistake is reported instead of panicking across the C ABI.
fn check_one_slot_per_item(items: &[&ContextItem], out: &[f64]) -> Result<()> {
    if items.len() == out.len() {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "score buffer has {} slots for {} items",
        out.len(),
        items.len()
    )))
}

/// The scorer-configuration error carrying one of the messages of spec 03.
fn config_error(message: impl Into<String>) -> Error {
    Error::ScorerConfig(message.into())
}

/// Checks one entry of a weight table (KindScorer, TagScorer): `< 0` is reported first
/// (so `-inf` is "non-negative"), then non-finite values (NaN, `+inf`). `subject` names the
/// entry, e.g. `weight for kind 'Memory'`.
fn validate_table_weight(subject: &str, weight: f64) -> Result<()> {
    if weight < 0.0 {
        return Err(config_error(format!("{subject} must be non-negative")));
    }
    if !weight.is_finite() {
        return Err(config_error(format!("{subject} must be finite")));
    }
    Ok(())
}

/// The left fold `0.0 + w_0 + w_1 + ...` in configuration order (spec 03 §2.4, §2.7).
fn sum_in_order(weights: impl IntoIterator<Item = f64>) -> f64 {
    weights.into_iter().fold(0.0, |total, w| total + w)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::scorer::test_support::{items_from, plain, run};
    use crate::ErrorCode;

    /// One instance of every built-in scorer.
    fn every_builtin() -> Vec<Arc<dyn Scorer>> {
        let decay_curve = DecayCurve::Window { max_age_ns: 1 };
        vec![
            Arc::new(RecencyScorer::new()),
            Arc::new(PriorityScorer::new()),
            Arc::new(KindScorer::new()),
            Arc::new(TagScorer::new(vec![("a".into(), 1.0)]).unwrap()),
            Arc::new(FrequencyScorer::new()),
            Arc::new(ReflexiveScorer::new()),
            Arc::new(CompositeScorer::new(vec![(Arc::new(KindScorer::new()), 1.0)]).unwrap()),
            Arc::new(ScaledScorer::new(Arc::new(RecencyScorer::new()))),
            Arc::new(MetadataTrustScorer::default()),
            Arc::new(DecayScorer::new(Arc::new(FixedClock(0)), decay_curve, 0.5).unwrap()),
            Arc::new(MetadataKeyScorer::new("k", "v", 2.0).unwrap()),
            Arc::new(PerItemScorer::new(|_, _: &[&ContextItem]| Ok(0.25))),
        ]
    }

    #[test]
    fn every_builtin_rejects_a_missized_buffer() {
        let items = items_from(3, plain);
        let refs: Vec<&ContextItem> = items.iter().collect();
        for scorer in every_builtin() {
            for len in [2, 4] {
                let mut out = vec![0.0; len];
                let err = scorer.score_all(&refs, &mut out).unwrap_err();
                assert_eq!(err.code(), ErrorCode::InvalidArgument, "{scorer:?}");
                assert!(
                    err.to_string()
                        .contains(&format!("{len} slots for 3 items")),
                    "{err}"
                );
            }
        }
    }

    #[test]
    fn every_builtin_scores_empty_and_single_item_lists() {
        for scorer in every_builtin() {
            assert_eq!(run(scorer.as_ref(), &[]), Vec::<f64>::new(), "{scorer:?}");
            let single = run(scorer.as_ref(), &[plain(0)]);
            assert!(single[0].is_finite(), "{scorer:?}: {single:?}");
        }
    }

    #[test]
    fn builtins_are_recognisable_through_as_any() {
        let scorers = every_builtin();
        assert!(scorers[0].as_any().is::<RecencyScorer>());
        assert!(scorers[6]
            .as_any()
            .downcast_ref::<CompositeScorer>()
            .is_some());
        assert!(scorers[9].as_any().is::<DecayScorer>());
    }
}
