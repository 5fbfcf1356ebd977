//! KindScorer (STUB).
use crate::error::Result;
use crate::model::{ContextItem, ContextKind};
use crate::scorer::Scorer;
use std::any::Any;

/// KindScorer: a weight per kind.
#[derive(Debug, Clone)]
pub struct KindScorer;

impl KindScorer {
    /// The default table (SystemPrompt 1.0, Memory 0.8, ToolOutput 0.6, Document 0.4, Message 0.2).
    pub fn new() -> Self {
        todo!()
    }
    /// A custom table replacing the defaults; weights must be >= 0 and finite.
    pub fn with_weights(_weights: Vec<(ContextKind, f64)>) -> Result<Self> {
        todo!()
    }
    /// The configured table, in configuration order.
    pub fn weights(&self) -> &[(ContextKind, f64)] {
        todo!()
    }
}

impl Default for KindScorer {
    fn default() -> Self {
        Self::new()
    }
}

impl Scorer for KindScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
