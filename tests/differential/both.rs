//! "Build in both libraries": every description of `gen.rs` becomes the ctxpack value and
//! the equivalent cupel value through the one [`Both`] trait.

use std::collections::HashMap;
use std::fmt::{Debug, Display};
use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use ctxpack::model::ContextItemBuilder;
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::scorer::{
    CompositeScorer, DecayCurve, DecayScorer, FixedClock, FrequencyScorer, KindScorer,
    MetadataKeyScorer, MetadataTrustScorer, PriorityScorer, RecencyScorer, ReflexiveScorer,
    ScaledScorer, Scorer, TagScorer,
};
use ctxpack::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, ScarcityBehavior, Slicer,
};
use ctxpack::{ContextBudget, ContextItem, ContextKind, ContextSource, ErrorCode};

use crate::gen::{
    BudgetSpec, CountEntry, CurveSpec, ItemSpec, PlacerSpec, ScorerSpec, SlicerSpec, NOW_MS,
};

/// Metadata key carrying an item's id, so cupel output (owned clones) maps back to
/// positions even when contents repeat. No generated scorer reads this key.
pub const ID_KEY: &str = "diff:id";

const NANOS_PER_MS: i64 = 1_000_000;

/// A description that can be built in both libraries.
pub trait Both {
    /// The ctxpack value.
    type Ours;
    /// The cupel value.
    type Theirs;
    /// Builds the ctxpack value; panics (failing the case) if ctxpack rejects a
    /// configuration the generators only produce valid.
    fn ours(&self) -> Self::Ours;
    /// Builds the cupel value; panics likewise.
    fn theirs(&self) -> Self::Theirs;
    /// Builds both.
    fn both(&self) -> (Self::Ours, Self::Theirs) {
        (self.ours(), self.theirs())
    }
}

/// Builds every element of a list in both libraries.
pub fn both_all<T: Both>(xs: &[T]) -> (Vec<T::Ours>, Vec<T::Theirs>) {
    xs.iter().map(Both::both).unzip()
}

/// Builds every element of a list in cupel only.
pub fn theirs_all<T: Both>(xs: &[T]) -> Vec<T::Theirs> {
    xs.iter().map(Both::theirs).collect()
}

/// The id of an item built by [`Both`].
pub fn id_of(item: &cupel::ContextItem) -> usize {
    item.metadata()[ID_KEY]
        .parse()
        .expect("every generated item carries its id")
}

/// Unwraps a construction result, naming the library and the configuration on failure.
fn built<T, E: Display>(r: Result<T, E>, lib: &str, what: &dyn Debug) -> T {
    r.unwrap_or_else(|e| panic!("{lib} rejected a valid configuration {what:?}: {e}"))
}

fn ours<T>(r: ctxpack::Result<T>, what: &dyn Debug) -> T {
    built(r, "ctxpack", what)
}

fn theirs<T>(r: Result<T, cupel::CupelError>, what: &dyn Debug) -> T {
    built(r, "cupel", what)
}

fn our_kind(k: &str) -> ContextKind {
    ours(ContextKind::new(k), &k)
}

fn their_kind(k: &str) -> cupel::ContextKind {
    theirs(cupel::ContextKind::new(k), &k)
}

/// A cupel instant from whole milliseconds.
pub fn instant(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).expect("generated instants are in range")
}

/// A cupel duration from whole milliseconds.
fn duration(ms: i64) -> TimeDelta {
    TimeDelta::try_milliseconds(ms).expect("generated durations are in range")
}

// ---------------------------------------------------------------------------------------
// Items
// ---------------------------------------------------------------------------------------

/// The optional item fields, set the same way on either library's item builder.
trait ItemSink: Sized {
    fn set_kind(self, k: &'static str) -> Self;
    fn set_source(self, s: &'static str) -> Self;
    fn set_priority(self, p: i64) -> Self;
    fn set_timestamp_ms(self, ms: i64) -> Self;
    fn set_hint(self, h: f64) -> Self;
    fn set_tags(self, tags: Vec<String>) -> Self;
    fn set_metadata(self, entries: Vec<(String, String)>) -> Self;
}

/// Walks the spec's optional fields into a builder; the id goes into the metadata.
fn fill<B: ItemSink>(spec: &ItemSpec, mut b: B) -> B {
    if let Some(k) = spec.kind {
        b = b.set_kind(k);
    }
    if let Some(s) = spec.source {
        b = b.set_source(s);
    }
    if let Some(p) = spec.priority {
        b = b.set_priority(p);
    }
    if let Some(ms) = spec.timestamp_ms {
        b = b.set_timestamp_ms(ms);
    }
    if let Some(h) = spec.hint {
        b = b.set_hint(h);
    }
    let mut metadata: Vec<(String, String)> = spec
        .metadata
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    metadata.push((ID_KEY.to_string(), spec.id.to_string()));
    b.set_tags(spec.tags.iter().map(|t| t.to_string()).collect())
        .set_metadata(metadata)
}

impl ItemSink for ContextItemBuilder {
    fn set_kind(self, k: &'static str) -> Self {
        self.kind(our_kind(k))
    }
    fn set_source(self, s: &'static str) -> Self {
        self.source(ours(ContextSource::new(s), &s))
    }
    fn set_priority(self, p: i64) -> Self {
        self.priority(p)
    }
    fn set_timestamp_ms(self, ms: i64) -> Self {
        self.timestamp(ms * NANOS_PER_MS)
    }
    fn set_hint(self, h: f64) -> Self {
        self.future_relevance_hint(h)
    }
    fn set_tags(self, tags: Vec<String>) -> Self {
        self.tags(tags)
    }
    fn set_metadata(self, entries: Vec<(String, String)>) -> Self {
        self.metadata(entries.into_iter().collect())
    }
}

impl ItemSink for cupel::ContextItemBuilder {
    fn set_kind(self, k: &'static str) -> Self {
        self.kind(their_kind(k))
    }
    fn set_source(self, s: &'static str) -> Self {
        self.source(theirs(cupel::ContextSource::new(s), &s))
    }
    fn set_priority(self, p: i64) -> Self {
        self.priority(p)
    }
    fn set_timestamp_ms(self, ms: i64) -> Self {
        self.timestamp(instant(ms))
    }
    fn set_hint(self, h: f64) -> Self {
        self.future_relevance_hint(h)
    }
    fn set_tags(self, tags: Vec<String>) -> Self {
        self.tags(tags)
    }
    fn set_metadata(self, entries: Vec<(String, String)>) -> Self {
        self.metadata(entries.into_iter().collect::<HashMap<_, _>>())
    }
}

impl Both for ItemSpec {
    type Ours = ContextItem;
    type Theirs = cupel::ContextItem;

    fn ours(&self) -> ContextItem {
        let b = ContextItem::builder(self.content.clone(), self.tokens).pinned(self.pinned);
        ours(fill(self, b).build(), self)
    }

    fn theirs(&self) -> cupel::ContextItem {
        let b =
            cupel::ContextItemBuilder::new(self.content.clone(), self.tokens).pinned(self.pinned);
        theirs(fill(self, b).build(), self)
    }
}

// ---------------------------------------------------------------------------------------
// Scorers
// ---------------------------------------------------------------------------------------

/// The crate's decay clock, fixed at an instant.
struct FixedNow(DateTime<Utc>);

impl cupel::TimeProvider for FixedNow {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

impl Both for CurveSpec {
    type Ours = DecayCurve;
    type Theirs = cupel::DecayCurve;

    fn ours(&self) -> DecayCurve {
        let ns = |ms: i64| ms * NANOS_PER_MS;
        match self {
            CurveSpec::Exponential(ms) => DecayCurve::Exponential {
                half_life_ns: ns(*ms),
            },
            CurveSpec::Window(ms) => DecayCurve::Window {
                max_age_ns: ns(*ms),
            },
            CurveSpec::Step(windows) => DecayCurve::Step {
                windows: windows.iter().map(|&(ms, s)| (ns(ms), s)).collect(),
            },
        }
    }

    fn theirs(&self) -> cupel::DecayCurve {
        let curve = match self {
            CurveSpec::Exponential(ms) => cupel::DecayCurve::exponential(duration(*ms)),
            CurveSpec::Window(ms) => cupel::DecayCurve::window(duration(*ms)),
            CurveSpec::Step(windows) => {
                cupel::DecayCurve::step(windows.iter().map(|&(ms, s)| (duration(ms), s)).collect())
            }
        };
        theirs(curve, self)
    }
}

impl Both for ScorerSpec {
    type Ours = Arc<dyn Scorer>;
    type Theirs = Box<dyn cupel::Scorer>;

    fn ours(&self) -> Arc<dyn Scorer> {
        match self {
            ScorerSpec::Recency => Arc::new(RecencyScorer::new()),
            ScorerSpec::Priority => Arc::new(PriorityScorer::new()),
            ScorerSpec::Frequency => Arc::new(FrequencyScorer::new()),
            ScorerSpec::Reflexive => Arc::new(ReflexiveScorer::new()),
            ScorerSpec::Kind(None) => Arc::new(KindScorer::new()),
            ScorerSpec::Kind(Some(weights)) => {
                let table = weights.iter().map(|&(k, w)| (our_kind(k), w)).collect();
                Arc::new(ours(KindScorer::with_weights(table), self))
            }
            ScorerSpec::Tag(weights) => {
                let table = weights.iter().map(|&(t, w)| (t.to_string(), w)).collect();
                Arc::new(ours(TagScorer::new(table), self))
            }
            ScorerSpec::MetadataTrust(default) => {
                Arc::new(ours(MetadataTrustScorer::new(*default), self))
            }
            ScorerSpec::MetadataKey { key, value, boost } => {
                Arc::new(ours(MetadataKeyScorer::new(*key, *value, *boost), self))
            }
            ScorerSpec::Decay { curve, null_score } => {
                let clock = Arc::new(FixedClock(NOW_MS * NANOS_PER_MS));
                Arc::new(ours(
                    DecayScorer::new(clock, curve.ours(), *null_score),
                    self,
                ))
            }
            ScorerSpec::Scaled(inner) => Arc::new(ScaledScorer::new(inner.ours())),
            ScorerSpec::Composite(children) => {
                let entries = children
                    .iter()
                    .map(|(child, w)| (child.ours(), *w))
                    .collect();
                Arc::new(ours(CompositeScorer::new(entries), self))
            }
        }
    }

    fn theirs(&self) -> Box<dyn cupel::Scorer> {
        match self {
            ScorerSpec::Recency => Box::new(cupel::RecencyScorer),
            ScorerSpec::Priority => Box::new(cupel::PriorityScorer),
            ScorerSpec::Frequency => Box::new(cupel::FrequencyScorer),
            ScorerSpec::Reflexive => Box::new(cupel::ReflexiveScorer),
            ScorerSpec::Kind(None) => Box::new(cupel::KindScorer::with_default_weights()),
            ScorerSpec::Kind(Some(weights)) => {
                let table = weights.iter().map(|&(k, w)| (their_kind(k), w)).collect();
                Box::new(theirs(cupel::KindScorer::new(table), self))
            }
            ScorerSpec::Tag(weights) => {
                let table = weights.iter().map(|&(t, w)| (t.to_string(), w)).collect();
                Box::new(theirs(cupel::TagScorer::new(table), self))
            }
            ScorerSpec::MetadataTrust(default) => {
                Box::new(theirs(cupel::MetadataTrustScorer::new(*default), self))
            }
            ScorerSpec::MetadataKey { key, value, boost } => Box::new(theirs(
                cupel::MetadataKeyScorer::new(*key, *value, *boost),
                self,
            )),
            ScorerSpec::Decay { curve, null_score } => {
                let now = Box::new(FixedNow(instant(NOW_MS)));
                Box::new(theirs(
                    cupel::DecayScorer::new(now, curve.theirs(), *null_score),
                    self,
                ))
            }
            ScorerSpec::Scaled(inner) => Box::new(cupel::ScaledScorer::new(inner.theirs())),
            ScorerSpec::Composite(children) => {
                let entries = children
                    .iter()
                    .map(|(child, w)| (child.theirs(), *w))
                    .collect();
                Box::new(theirs(cupel::CompositeScorer::new(entries), self))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Slicers, placers, budgets
// ---------------------------------------------------------------------------------------

fn our_count_entries(entries: &[CountEntry]) -> Vec<CountQuotaEntry> {
    let entry = |&(k, r, c): &CountEntry| ours(CountQuotaEntry::new(our_kind(k), r, c), &(k, r, c));
    entries.iter().map(entry).collect()
}

fn their_count_entries(entries: &[CountEntry]) -> Vec<cupel::CountQuotaEntry> {
    let entry = |&(k, r, c): &CountEntry| {
        theirs(cupel::CountQuotaEntry::new(their_kind(k), r, c), &(k, r, c))
    };
    entries.iter().map(entry).collect()
}

fn our_scarcity(throw: bool) -> ScarcityBehavior {
    if throw {
        ScarcityBehavior::Throw
    } else {
        ScarcityBehavior::Degrade
    }
}

fn their_scarcity(throw: bool) -> cupel::ScarcityBehavior {
    if throw {
        cupel::ScarcityBehavior::Throw
    } else {
        cupel::ScarcityBehavior::Degrade
    }
}

impl Both for SlicerSpec {
    type Ours = Arc<dyn Slicer>;
    type Theirs = Box<dyn cupel::Slicer>;

    fn ours(&self) -> Arc<dyn Slicer> {
        match self {
            SlicerSpec::Greedy => Arc::new(GreedySlice::new()),
            SlicerSpec::Knapsack(bucket) => Arc::new(ours(KnapsackSlice::new(*bucket), self)),
            SlicerSpec::Quota(entries, inner) => {
                let entry = |&(k, r, c): &(&str, f64, f64)| {
                    ours(QuotaEntry::new(our_kind(k), r, c), &(k, r, c))
                };
                let entries = entries.iter().map(entry).collect();
                Arc::new(ours(QuotaSlice::new(entries, inner.ours()), self))
            }
            SlicerSpec::CountQuota(entries, throw) => {
                let inner = Arc::new(GreedySlice::new());
                let slicer =
                    CountQuotaSlice::new(our_count_entries(entries), inner, our_scarcity(*throw));
                Arc::new(ours(slicer, self))
            }
            SlicerSpec::Ccks(entries, bucket, throw) => {
                let knapsack = ours(KnapsackSlice::new(*bucket), self);
                let slicer = CountConstrainedKnapsackSlice::new(
                    our_count_entries(entries),
                    knapsack,
                    our_scarcity(*throw),
                );
                Arc::new(ours(slicer, self))
            }
        }
    }

    fn theirs(&self) -> Box<dyn cupel::Slicer> {
        match self {
            SlicerSpec::Greedy => Box::new(cupel::GreedySlice),
            SlicerSpec::Knapsack(bucket) => {
                Box::new(theirs(cupel::KnapsackSlice::new(*bucket), self))
            }
            SlicerSpec::Quota(entries, inner) => {
                let entry = |&(k, r, c): &(&str, f64, f64)| {
                    theirs(cupel::QuotaEntry::new(their_kind(k), r, c), &(k, r, c))
                };
                let entries = entries.iter().map(entry).collect();
                Box::new(theirs(
                    cupel::QuotaSlice::new(entries, inner.theirs()),
                    self,
                ))
            }
            SlicerSpec::CountQuota(entries, throw) => {
                let inner = Box::new(cupel::GreedySlice);
                let slicer = cupel::CountQuotaSlice::new(
                    their_count_entries(entries),
                    inner,
                    their_scarcity(*throw),
                );
                Box::new(theirs(slicer, self))
            }
            SlicerSpec::Ccks(entries, bucket, throw) => {
                let knapsack = theirs(cupel::KnapsackSlice::new(*bucket), self);
                let slicer = cupel::CountConstrainedKnapsackSlice::new(
                    their_count_entries(entries),
                    knapsack,
                    their_scarcity(*throw),
                );
                Box::new(theirs(slicer, self))
            }
        }
    }
}

impl Both for PlacerSpec {
    type Ours = Arc<dyn Placer>;
    type Theirs = Box<dyn cupel::Placer>;

    fn ours(&self) -> Arc<dyn Placer> {
        match self {
            PlacerSpec::Chronological => Arc::new(ChronologicalPlacer::new()),
            PlacerSpec::UShaped => Arc::new(UShapedPlacer::new()),
        }
    }

    fn theirs(&self) -> Box<dyn cupel::Placer> {
        match self {
            PlacerSpec::Chronological => Box::new(cupel::ChronologicalPlacer),
            PlacerSpec::UShaped => Box::new(cupel::UShapedPlacer),
        }
    }
}

impl Both for BudgetSpec {
    type Ours = ContextBudget;
    type Theirs = cupel::ContextBudget;

    fn ours(&self) -> ContextBudget {
        let slots = self.slots.iter().map(|&(k, n)| (our_kind(k), n)).collect();
        ours(
            ContextBudget::with_all(self.max, self.target, self.reserve, slots, self.margin),
            self,
        )
    }

    /// The crate's budget keeps reserved slots and the margin but ignores both (decision D1 in
    /// docs/decisions.md).
    fn theirs(&self) -> cupel::ContextBudget {
        let slots = self
            .slots
            .iter()
            .map(|&(k, n)| (their_kind(k), n))
            .collect();
        theirs(
            cupel::ContextBudget::new(self.max, self.target, self.reserve, slots, self.margin),
            self,
        )
    }
}

/// The ctxpack error code a cupel run error corresponds to. A slicer configuration error
/// at run time only comes from a count-quota slicer under Throw.
pub fn cupel_error_code(e: &cupel::CupelError) -> ErrorCode {
    match e {
        cupel::CupelError::PinnedExceedsBudget { .. } => ErrorCode::PinnedExceedsBudget,
        cupel::CupelError::Overflow { .. } => ErrorCode::Overflow,
        cupel::CupelError::SlicerConfig(_) => ErrorCode::CountRequirementUnmet,
        cupel::CupelError::TableTooLarge { .. } => ErrorCode::TableTooLarge,
        other => panic!("unexpected cupel run error: {other}"),
    }
}
