//! PerItemScorer: adapts a per-item function to the batch trait (spec 03 §1, decision D9 in
//! docs/decisions.md).

use std::fmt;

use crate::error::{Error, Result};
use crate::model::ContextItem;
use crate::scorer::{caller_position, check_one_slot_per_item, Scorer};

/// A custom scorer written per item: `f(i, items)` scores `items[i]`. A non-finite result fails the
/// run naming the item (decision D9 in docs/decisions.md).
///
/// `f` is called exactly once per item, for `i = 0 … N−1` in order, always with the whole list. It
/// must be pure (spec 03 §1.4): the batch fast paths of ScaledScorer and CompositeScorer call it
/// once per pass, where the per-item spec form would call it many times, and the two agree only for
/// a pure `f`. An error returned by `f` stops the pass and is returned unchanged. A NaN or infinite
/// score fails with [`Error::Callback`] naming the value and the item's position: in the pipeline's
/// input when a pipeline scores ([`Scorer::score_all_at`]), else in `items`.
pub struct PerItemScorer<F> {
    f: F,
}

impl<F> PerItemScorer<F>
where
    F: Fn(usize, &[&ContextItem]) -> Result<f64> + Send + Sync,
{
    /// Wraps `f`.
    pub fn new(f: F) -> Self {
        Self { f }
    }
}

impl<F> fmt::Debug for PerItemScorer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PerItemScorer")
    }
}

/// Rejects a non-finite custom score, naming the item's position (decision D9 in
/// docs/decisions.md).
fn require_finite(position: usize, score: f64) -> Result<f64> {
    if score.is_finite() {
        Ok(score)
    } else {
        Err(Error::Callback(format!(
            "custom scorer returned {score} for the item at position {position}; scores must be finite"
        )))
    }
}

impl<F> Scorer for PerItemScorer<F>
where
    F: Fn(usize, &[&ContextItem]) -> Result<f64> + Send + Sync + 'static,
{
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        self.score_all_at(items, &[], out)
    }

    fn score_all_at(
        &self,
        items: &[&ContextItem],
        positions: &[usize],
        out: &mut [f64],
    ) -> Result<()> {
        check_one_slot_per_item(items, out)?;
        for (i, slot) in out.iter_mut().enumerate() {
            crate::cancel::check("while scoring")?;
            *slot = require_finite(caller_position(positions, i), (self.f)(i, items)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::test_support::{items_from, plain, run, try_run};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_non_finite_score_names_the_callers_position() {
        let s = PerItemScorer::new(|i, _: &[&ContextItem]| Ok(if i == 1 { f64::NAN } else { 0.5 }));
        let items = items_from(2, plain);
        let refs: Vec<&ContextItem> = items.iter().collect();
        let mut out = [0.0; 2];
        // Alone: the position in `items`.
        let err = s.score_all(&refs, &mut out).unwrap_err();
        assert_eq!(
            err.to_string(),
            "callback failed: custom scorer returned NaN for the item at position 1; scores must be finite"
        );
        // In a pipeline that scores items 3 and 7 of its input: the input's position.
        let err = s.score_all_at(&refs, &[3, 7], &mut out).unwrap_err();
        assert!(
            err.to_string().contains("NaN for the item at position 7;"),
            "{err}"
        );
    }

    #[test]
    fn calls_f_once_per_item_with_the_whole_list() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let s = PerItemScorer::new(move |i, items: &[&ContextItem]| {
            seen.fetch_add(1, Ordering::SeqCst);
            Ok(i as f64 * 10.0 + items.len() as f64)
        });
        assert_eq!(run(&s, &items_from(3, plain)), [3.0, 13.0, 23.0]);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(format!("{s:?}"), "PerItemScorer");
    }

    #[test]
    fn non_finite_results_fail_naming_the_position() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let s =
                PerItemScorer::new(move |i, _: &[&ContextItem]| Ok(if i == 2 { bad } else { 0.5 }));
            let e = try_run(&s, &items_from(4, plain)).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::Callback);
            assert!(e.to_string().contains("position 2"), "{e}");
        }
        let negative = PerItemScorer::new(|_, _: &[&ContextItem]| Ok(-3.0));
        assert_eq!(
            run(&negative, &items_from(1, plain)),
            [-3.0],
            "finite values outside [0, 1] pass"
        );
    }

    #[test]
    fn errors_from_f_propagate_unchanged() {
        let s = PerItemScorer::new(|i, _: &[&ContextItem]| {
            if i == 1 {
                Err(Error::Callback("user failure".into()))
            } else {
                Ok(1.0)
            }
        });
        assert_eq!(
            try_run(&s, &items_from(3, plain)).unwrap_err(),
            Error::Callback("user failure".into())
        );
    }
}
