//! PerItemScorer (STUB): adapts a per-item function to the batch trait.
use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;
use std::any::Any;
use std::fmt;

/// A custom scorer written per item: `f(i, items)` scores `items[i]`. A non-finite result
/// fails the run naming the item (D9).
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

impl<F> Scorer for PerItemScorer<F>
where
    F: Fn(usize, &[&ContextItem]) -> Result<f64> + Send + Sync + 'static,
{
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        let _ = (&self.f, items, out);
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
