//! The data model (spec chapter 01): items, budgets, kinds and sources, overflow strategy,
//! scored items; the item-group extension's value modes and units (`docs/groups.md`); and
//! the variant extension's alternative forms (`docs/variants.md`).

mod budget;
mod group;
mod head_tail;
mod item;
mod json;
mod kind;
mod levels;
#[allow(unsafe_code)]
mod shared_store;
mod store;
mod timestamp;
mod variant;

pub(crate) use budget::BudgetRule;
pub use budget::ContextBudget;
pub(crate) use group::{check_len as check_unit_count, Accumulator};
pub use group::{GroupValue, Units};
pub use head_tail::{HeadTail, HeadTailCut, DEFAULT_HEAD_TAIL_MARKER};
pub(crate) use item::ItemValues;
pub use item::{ContextItem, ContextItemBuilder};
pub(crate) use json::type_name;
pub use json::{read_items, read_items_counted, read_items_with, ItemReadError, ItemReadOptions};
pub(crate) use kind::fold_ascii;
pub use kind::{ContextKind, ContextSource};
pub(crate) use levels::{LevelSource, Levels};
pub(crate) use shared_store::drop_items;
pub(crate) use store::TextPacker;
pub use store::{TagIter, Tags};
pub use timestamp::{format_rfc3339, parse_rfc3339};
pub(crate) use variant::{check as check_variants, kept_forms, kept_forms_with, PruneScratch};
pub use variant::{PrunedForm, Variant};

/// What the Place stage does when the merged selection exceeds `target_tokens`
/// (spec 01 §5, 02 §7.3). The C ABI numbers the values 0, 1, 2 in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OverflowStrategy {
    /// Fail the run with [`crate::Error::Overflow`] (the default).
    #[default]
    Throw,
    /// Drop non-pinned items that do not fit, walking the merged list in order (decision D3 in
    /// docs/decisions.md).
    Truncate,
    /// Keep everything and report an [`crate::diagnostics::OverflowEvent`] (decision D7 in
    /// docs/decisions.md).
    Proceed,
}

/// An item paired with its score, as slicers and placers see it. The item is borrowed:
/// no stage copies content.
#[derive(Debug, Clone, Copy)]
pub struct ScoredItem<'a> {
    /// The item.
    pub item: &'a ContextItem,
    /// Its score (pinned items carry 1.0 at Place).
    pub score: f64,
}
