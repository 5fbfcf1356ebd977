//! ScaledScorer (STUB).
use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;
use std::any::Any;
use std::sync::Arc;

/// ScaledScorer: min-max normalisation of an inner scorer.
#[derive(Debug, Clone)]
pub struct ScaledScorer;

impl ScaledScorer {
    /// Wraps `inner`.
    pub fn new(_inner: Arc<dyn Scorer>) -> Self {
        todo!()
    }
    /// The inner scorer.
    pub fn inner(&self) -> &Arc<dyn Scorer> {
        todo!()
    }
}

impl Scorer for ScaledScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
