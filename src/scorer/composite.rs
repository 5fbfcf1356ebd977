//! CompositeScorer (STUB).
use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;
use std::any::Any;
use std::sync::Arc;

/// CompositeScorer: weighted sum of child scores, weights normalised by their sum.
#[derive(Debug, Clone)]
pub struct CompositeScorer;

impl CompositeScorer {
    /// Builds from (child, raw weight) pairs; weights must be > 0 and finite.
    pub fn new(_children: Vec<(Arc<dyn Scorer>, f64)>) -> Result<Self> {
        todo!()
    }
    /// The children with their raw (configured) weights.
    pub fn children(&self) -> &[(Arc<dyn Scorer>, f64)] {
        todo!()
    }
}

impl Scorer for CompositeScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
