//! The run (STUB).
use crate::error::Result;
use crate::model::{ContextBudget, ContextItem};
use crate::pipeline::{Pipeline, RunOptions, Selection};

pub(super) fn run(
    _pipeline: &Pipeline,
    _items: &[ContextItem],
    _budget: &ContextBudget,
    _options: &RunOptions<'_>,
) -> Result<Selection> {
    todo!()
}
