//! Scorers (spec chapter 03): the trait and the eleven built-ins.
//!
//! A scorer sees the whole scoreable list at once (`score_all`), so relative scorers can
//! rank by sorting, build one tag index, or run an inner scorer once per pass; the spec's
//! per-item `score(item, allItems)` is the special case (see [`PerItemScorer`]).

use std::any::Any;
use std::fmt;

use crate::error::Result;
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
mod recency;
mod reflexive;
mod scaled;
mod tag;

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

/// Computes relevance scores for a whole scoreable list in one pass.
///
/// Contract (spec 03 §1): `out[i]` receives the score of `items[i]` computed against the
/// whole of `items`; identity is position. Scorers are pure: the same `items` give the same
/// scores. Built-in scorers never fail; a custom scorer may return an error, which fails
/// the run.
pub trait Scorer: Send + Sync + fmt::Debug {
    /// Writes one score per item into `out` (`out.len() == items.len()`).
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()>;

    /// Lets policy code recognise built-in scorers.
    fn as_any(&self) -> &dyn Any;
}
