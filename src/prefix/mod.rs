//! Cache-friendly selection across turns (an extension of the specification,
//! `docs/prefix-cache.md`).
//!
//! Providers cache prompt prefixes: a request that starts with the same tokens as an
//! earlier one is served partly from the cache, cheaper and sooner. A selection made afresh
//! every turn moves its cut points every turn and throws that cache away. With a
//! [`PrefixState`] carried from one turn to the next, a run can measure how much of the
//! previous window survives ([`PrefixMode::Measure`]) or keep it
//! ([`PrefixMode::Hold`]): the previous window stays first, in the same order, and the rest
//! of the budget is selected after it — unless that gives up more than a set share of value
//! against a fresh selection, in which case the turn re-anchors to a lower watermark so the
//! next turns can append again.
//!
//! ```
//! use std::sync::Arc;
//!
//! use ctxpack::placer::ChronologicalPlacer;
//! use ctxpack::prefix::{PrefixMode, PrefixOptions, TurnOutcome};
//! use ctxpack::scorer::RecencyScorer;
//! use ctxpack::slicer::GreedySlice;
//! use ctxpack::{ContextBudget, ContextItem, Pipeline, RunOptions};
//!
//! let pipeline = Pipeline::builder()
//!     .scorer(Arc::new(RecencyScorer::new()))
//!     .slicer(Arc::new(GreedySlice::new()))
//!     .placer(Arc::new(ChronologicalPlacer::new()))
//!     .build()?;
//! let budget = ContextBudget::new(100, 100)?;
//! let message = |i: i64| ContextItem::builder(format!("message {i}"), 20).timestamp(i).build();
//! let mut items = (0..4).map(message).collect::<Result<Vec<_>, _>>()?;
//!
//! // Turn 1: no state yet, so the turn anchors (selects to the low watermark).
//! let options = PrefixOptions::new(PrefixMode::Hold);
//! let turn1 = pipeline.run_prefix(&items, &budget, &RunOptions::default(), &options)?;
//! assert_eq!(turn1.reuse.outcome, TurnOutcome::Anchored);
//!
//! // Turn 2: one more message; the previous window is kept as it was, the new one appended.
//! items.push(message(4)?);
//! let mut options = PrefixOptions::new(PrefixMode::Hold);
//! options.previous = Some(&turn1.state);
//! let turn2 = pipeline.run_prefix(&items, &budget, &RunOptions::default(), &options)?;
//! assert_eq!(turn2.reuse.outcome, TurnOutcome::Held);
//! assert!(turn2.selection.indices.starts_with(&turn1.selection.indices));
//! assert_eq!(turn2.reuse.kept_tokens, turn1.state.tokens());
//!
//! // The state travels as bytes (or JSON) next to the conversation.
//! let stored = turn2.state.to_bytes();
//! assert_eq!(ctxpack::prefix::PrefixState::from_bytes(&stored)?, turn2.state);
//! # Ok::<(), ctxpack::Error>(())
//! ```

mod cache_rule;
mod crc32c;
mod report;
mod state;

pub use cache_rule::CacheRule;
pub(crate) use report::{compare, key, Catalog, EntryKey};
pub use report::{Difference, DifferenceReason, ReuseReport, TurnOutcome};
pub use state::{PrefixState, StateEntry, STATE_MAGIC, STATE_VERSION};

use crate::error::{Error, Result};
use crate::pipeline::Selection;

/// What a run does with the previous turn's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrefixMode {
    /// Select as usual and report how much of the previous window survives.
    Measure,
    /// Keep the longest previous prefix that is still present and still fits, in the same
    /// order, and select the rest after it; re-anchor when that gives up too much value.
    Hold,
}

impl PrefixMode {
    /// The name used by the CLI and the JSON report: `measure`, `hold`.
    pub fn name(self) -> &'static str {
        match self {
            PrefixMode::Measure => "measure",
            PrefixMode::Hold => "hold",
        }
    }
}

/// The order in which the host sends the window, which is the order the prefix refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PrefixOrder {
    /// The placed order (`Selection::indices`), the default. Hold places the kept prefix
    /// first, in its previous order, and the placer orders the rest after it.
    #[default]
    Placed,
    /// Input order: the host sends the selected items in the order it gave them (a chat
    /// request keeps conversation order). Hold keeps the prefix by selection only: after
    /// the kept prefix, only items that come after it in the input are added.
    Input,
}

/// The default [`PrefixOptions::max_value_loss`]: a turn may give up 5 % of the value of
/// a fresh selection to keep the prefix.
pub const DEFAULT_MAX_VALUE_LOSS: f64 = 0.05;
/// The default [`PrefixOptions::low_watermark`]: an anchor selects to at least 80 % of the
/// target, leaving the rest for the next turns to append to.
pub const DEFAULT_LOW_WATERMARK: f64 = 0.8;

/// The options of a run with a prefix state.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PrefixOptions<'a> {
    /// Measure or Hold.
    pub mode: PrefixMode,
    /// The previous turn's state; `None` on a first turn (Hold then anchors).
    pub previous: Option<&'a PrefixState>,
    /// A key naming the conversation (any bytes, such as a conversation id). Its hash is
    /// stored in the state; a previous state made with another key, or with a key when
    /// none is given (and the other way round), is refused with
    /// [`Error::InvalidState`]. Without a key, a previous state none of whose unpinned
    /// items is in the input is refused as foreign.
    pub conversation: Option<&'a [u8]>,
    /// Hold: the largest share of a fresh selection's value a turn may give up, in
    /// [0, 1] (default [`DEFAULT_MAX_VALUE_LOSS`]).
    pub max_value_loss: f64,
    /// Hold: an anchor selects to the lowest target of at least this share of the budget's
    /// target (in (0, 1], default [`DEFAULT_LOW_WATERMARK`]) that gives up no more than
    /// `max_value_loss`.
    pub low_watermark: f64,
    /// The provider's caching rule, for the report's `cached_tokens` (default none).
    pub cache: CacheRule,
    /// The order the host sends the window in (default [`PrefixOrder::Placed`]).
    pub order: PrefixOrder,
    /// One identity per item, replacing the content hash by which items are recognised
    /// across turns (for a host whose items' contents are not what it sends: hash the
    /// bytes it sends, with [`hash_bytes`] or any 64-bit hash).
    pub identities: Option<&'a [u64]>,
}

impl PrefixOptions<'static> {
    /// The options of `mode` with every default: no previous state, no conversation key.
    pub fn new(mode: PrefixMode) -> Self {
        PrefixOptions {
            mode,
            previous: None,
            conversation: None,
            max_value_loss: DEFAULT_MAX_VALUE_LOSS,
            low_watermark: DEFAULT_LOW_WATERMARK,
            cache: CacheRule::None,
            order: PrefixOrder::Placed,
            identities: None,
        }
    }
}

impl PrefixOptions<'_> {
    /// Checks the thresholds, the cache rule and the identities' length.
    pub(crate) fn validate(&self, items: usize) -> Result<()> {
        let share = self.max_value_loss;
        if !(share.is_finite() && (0.0..=1.0).contains(&share)) {
            return Err(Error::InvalidArgument(format!(
                "max_value_loss must be in [0, 1], got {share}"
            )));
        }
        let w = self.low_watermark;
        if !(w.is_finite() && w > 0.0 && w <= 1.0) {
            return Err(Error::InvalidArgument(format!(
                "low_watermark must be in (0, 1], got {w}"
            )));
        }
        self.cache.validate()?;
        if let Some(ids) = self.identities {
            if ids.len() != items {
                return Err(Error::InvalidArgument(format!(
                    "{} identities given for {items} items",
                    ids.len()
                )));
            }
        }
        Ok(())
    }

    /// The hash of the conversation key, as stored in the state.
    pub(crate) fn conversation_hash(&self) -> Option<u64> {
        self.conversation.map(hash_bytes)
    }
}

/// The outcome of a run with a prefix state: the selection, the reuse report and the state
/// to pass to the next turn.
#[derive(Debug, Clone)]
pub struct PrefixRun {
    /// The selection (as [`crate::Pipeline::run_with`] returns it).
    pub selection: Selection,
    /// How much of the previous window was kept, and at what cost.
    pub reuse: ReuseReport,
    /// The state of this turn, for the next one.
    pub state: PrefixState,
}

/// The 64-bit hash by which a prefix state recognises contents, group keys and
/// conversation keys (the same as the hash deduplication uses). It is part of the state
/// format: the same bytes give the same hash in every version that reads format 1.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    crate::hash::hash_bytes(bytes)
}

/// The keys of `items` (identity, group key hash, tokens), as runs compute them.
pub(crate) fn item_keys(
    items: &[crate::model::ContextItem],
    identities: Option<&[u64]>,
) -> Vec<EntryKey> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let id = identities.map_or_else(|| item.content_hash(), |ids| ids[i]);
            (
                id,
                item.group().map(|g| hash_bytes(g.as_bytes())),
                item.tokens(),
            )
        })
        .collect()
}

/// Brings a run's state and report up to date after the caller dropped some of the
/// selected items (`kept[position]` false): the chat requests' provider rules drop units
/// after the run. The value figures stay those of the selection.
pub(crate) fn restate(
    run: (&mut ReuseReport, &mut PrefixState),
    previous: Option<&PrefixState>,
    keys: Vec<EntryKey>,
    kept: &[bool],
    input_order: bool,
) {
    let (reuse, state) = run;
    state
        .entries
        .retain(|e| kept.get(e.position as usize).copied().unwrap_or(false));
    let catalog = Catalog::new(keys, previous);
    let c = compare(previous, &state.entries, &catalog, input_order);
    reuse.window_entries = state.entries.len();
    reuse.window_tokens = state.tokens();
    reuse.kept_entries = c.kept_entries;
    reuse.kept_tokens = c.kept_tokens;
    reuse.cached_tokens =
        reuse
            .cache_rule
            .cached_tokens(c.kept_tokens, c.kept_entries, state.entries.len());
    reuse.first_difference = c.first_difference;
}

/// Checks that `previous` belongs to the conversation `conversation` (a key hash).
pub(crate) fn check_conversation(previous: &PrefixState, conversation: Option<u64>) -> Result<()> {
    match (previous.conversation, conversation) {
        (a, b) if a == b => Ok(()),
        (None, None) => Ok(()),
        (Some(_), Some(_)) => Err(state::invalid(
            "the state belongs to another conversation (its conversation key differs)",
        )),
        (Some(_), None) => Err(state::invalid(
            "the state was made with a conversation key; give the same key",
        )),
        (None, Some(_)) => Err(state::invalid(
            "the state was made without a conversation key, but a key is given",
        )),
    }
}

/// Refuses, when no conversation key is given, a previous state none of whose unpinned
/// entries is among the current items (by key).
pub(crate) fn check_not_foreign(previous: &PrefixState, catalog: &Catalog) -> Result<()> {
    let mut unpinned = previous.entries.iter().filter(|e| !e.pinned).peekable();
    if unpinned.peek().is_none() {
        return Ok(());
    }
    if unpinned.any(|e| !catalog.positions(&key(e)).is_empty()) {
        return Ok(());
    }
    Err(state::invalid(
        "none of the state's unpinned items is in the input: it looks like a state of \
         another conversation (give a conversation key to tell conversations apart exactly)",
    ))
}
