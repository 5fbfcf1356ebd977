//! The reuse report: how much of the previous window the new one starts with, where they
//! first differ and why, and what the turn gave up for it.

use std::fmt::Write;

use crate::hash::FastMap;
use crate::prefix::{CacheRule, PrefixMode, PrefixState, StateEntry};

/// What a turn did with the previous prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnOutcome {
    /// Measure mode: the usual selection, measured against the previous window.
    Measured,
    /// Hold mode: the previous prefix was kept and the rest selected after it.
    Held,
    /// Hold mode without a previous state (or with an empty one): a fresh selection to the
    /// low watermark, which later turns append to.
    Anchored,
    /// Hold mode: keeping the prefix would have given up more than the allowed share of
    /// value, so the turn selected afresh to the low watermark.
    Reanchored,
}

impl TurnOutcome {
    /// The name in the JSON form and the CLI: `measured`, `held`, `anchored`, `reanchored`.
    pub fn name(self) -> &'static str {
        match self {
            TurnOutcome::Measured => "measured",
            TurnOutcome::Held => "held",
            TurnOutcome::Anchored => "anchored",
            TurnOutcome::Reanchored => "reanchored",
        }
    }
}

/// Why the new window stops matching the previous one at the first difference. The reason
/// is a diagnosis for people; nothing the library does depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DifferenceReason {
    /// The previous item is in no item of the input any more (nothing new took its place).
    Removed,
    /// The previous item's content (or tokens) changed: an item the previous state does not
    /// know stands where it stood.
    Edited,
    /// The previous item is still placed, later; an item the previous window placed after
    /// it now comes first.
    Reordered,
    /// The previous item is still placed, later; an item the previous window did not have
    /// (a new pinned item, a new candidate placed before it) now comes first.
    Inserted,
    /// The previous item is still in the input but was not selected: the budget (a smaller
    /// target, more pinned tokens, a re-anchor to the watermark) left it out.
    Budget,
    /// The previous item is still in the input but its group gained or lost members, so
    /// its unit is no longer the one that was placed.
    GroupChanged,
}

impl DifferenceReason {
    /// The name in the JSON form and the CLI: `removed`, `edited`, `reordered`,
    /// `inserted`, `budget`, `group_changed`.
    pub fn name(self) -> &'static str {
        match self {
            DifferenceReason::Removed => "removed",
            DifferenceReason::Edited => "edited",
            DifferenceReason::Reordered => "reordered",
            DifferenceReason::Inserted => "inserted",
            DifferenceReason::Budget => "budget",
            DifferenceReason::GroupChanged => "group_changed",
        }
    }
}

/// The first place where the new window differs from the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Difference {
    /// The index (in both windows) of the first differing item: the number of items kept.
    pub index: usize,
    /// Why they differ there.
    pub reason: DifferenceReason,
    /// The input position of the item the new window has at `index`, if it has one.
    pub item: Option<usize>,
    /// The input position, in the previous turn, of the previous window's item at `index`.
    pub previous_position: u32,
}

/// How much of the previous prefix a turn kept, aligned to the provider's caching rule,
/// and what the turn gave up for it (`docs/prefix-cache.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReuseReport {
    /// The mode of the turn.
    pub mode: PrefixMode,
    /// Held, re-anchored, anchored or measured.
    pub outcome: TurnOutcome,
    /// The turn number (1 for the first turn of a state chain).
    pub turn: u64,
    /// Turns since the latest anchor (0 on an anchor turn).
    pub turns_since_anchor: u64,
    /// Items of the previous window (0 without a previous state).
    pub previous_entries: usize,
    /// Tokens of the previous window.
    pub previous_tokens: i64,
    /// Items of the new window.
    pub window_entries: usize,
    /// Tokens of the new window.
    pub window_tokens: i64,
    /// Items the new window starts with that are the previous window's first items, in
    /// the same order.
    pub kept_entries: usize,
    /// Their tokens.
    pub kept_tokens: i64,
    /// `kept_tokens` under the provider's caching rule: what a provider cache would serve.
    pub cached_tokens: i64,
    /// The caching rule applied.
    pub cache_rule: CacheRule,
    /// The first difference; `None` when the previous window is a prefix of the new one
    /// (or there is no previous window).
    pub first_difference: Option<Difference>,
    /// The token target of the anchor the window appends to (the target itself in
    /// Measure mode).
    pub anchor_target: i64,
    /// The value of a fresh selection at the full target: the sum of the values of its
    /// selected units that are not pinned (an item's score, a group's value).
    pub fresh_value: f64,
    /// The value of the window returned, counted the same way.
    pub value: f64,
    /// `fresh_value - value`: what holding the prefix (or anchoring low) gave up. It can be
    /// negative when a greedy fresh selection is not optimal.
    pub value_given_up: f64,
}

impl ReuseReport {
    /// `value_given_up` as a share of `|fresh_value|` (0 when the fresh value is 0 and
    /// nothing was given up).
    pub fn value_share_given_up(&self) -> f64 {
        if self.value_given_up <= 0.0 {
            0.0
        } else if self.fresh_value == 0.0 {
            f64::INFINITY
        } else {
            self.value_given_up / self.fresh_value.abs()
        }
    }

    /// The JSON form (one object; members in the order of the fields; non-finite numbers
    /// as `null`):
    /// `{"mode":"hold","outcome":"held","turn":7,…,"first_difference":{"index":12,
    /// "reason":"edited","item":15,"previous_position":12},…}`.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(400);
        let float = |v: f64| {
            if v.is_finite() {
                format!("{v:?}")
            } else {
                "null".to_owned()
            }
        };
        let _ = write!(
            out,
            "{{\"mode\":\"{}\",\"outcome\":\"{}\",\"turn\":{},\"turns_since_anchor\":{},\
             \"previous_entries\":{},\"previous_tokens\":{},\"window_entries\":{},\
             \"window_tokens\":{},\"kept_entries\":{},\"kept_tokens\":{},\"cached_tokens\":{},\
             \"cache_rule\":\"{}\",\"first_difference\":",
            self.mode.name(),
            self.outcome.name(),
            self.turn,
            self.turns_since_anchor,
            self.previous_entries,
            self.previous_tokens,
            self.window_entries,
            self.window_tokens,
            self.kept_entries,
            self.kept_tokens,
            self.cached_tokens,
            self.cache_rule.name(),
        );
        match &self.first_difference {
            None => out.push_str("null"),
            Some(d) => {
                let item = d.item.map_or("null".to_owned(), |i| i.to_string());
                let _ = write!(
                    out,
                    "{{\"index\":{},\"reason\":\"{}\",\"item\":{item},\"previous_position\":{}}}",
                    d.index,
                    d.reason.name(),
                    d.previous_position
                );
            }
        }
        let _ = write!(
            out,
            ",\"anchor_target\":{},\"fresh_value\":{},\"value\":{},\"value_given_up\":{}}}",
            self.anchor_target,
            float(self.fresh_value),
            float(self.value),
            float(self.value_given_up)
        );
        out
    }
}

/// How an item is recognised across turns: identity hash, group hash, tokens.
pub(crate) type EntryKey = (u64, Option<u64>, i64);

/// The key of a state entry.
pub(crate) fn key(e: &StateEntry) -> EntryKey {
    (e.hash, e.group, e.tokens)
}

/// What the comparison needs to know about the current input: every item's key, by
/// position, and where the previous window's keys are now.
pub(crate) struct Catalog {
    keys: Vec<EntryKey>,
    /// The input positions (ascending) of each key of the previous window; no other key
    /// is looked up, so no other is stored.
    positions: FastMap<EntryKey, Vec<u32>>,
}

impl Catalog {
    /// The catalog of an input whose items have these keys (in input order), for
    /// comparisons with `previous`.
    pub(crate) fn new(keys: Vec<EntryKey>, previous: Option<&PrefixState>) -> Catalog {
        let mut positions: FastMap<EntryKey, Vec<u32>> = FastMap::default();
        if let Some(prev) = previous {
            positions.reserve(prev.entries.len());
            for e in &prev.entries {
                positions.entry(key(e)).or_default();
            }
            for (p, k) in keys.iter().enumerate() {
                if let Some(list) = positions.get_mut(k) {
                    list.push(p as u32);
                }
            }
        }
        Catalog { keys, positions }
    }

    /// The input positions of items with key `k` (a key of the previous window),
    /// ascending.
    pub(crate) fn positions(&self, k: &EntryKey) -> &[u32] {
        self.positions.get(k).map_or(&[], Vec::as_slice)
    }

    /// The key of the item at input position `p` (which must exist).
    pub(crate) fn key_of(&self, p: usize) -> EntryKey {
        self.keys[p]
    }

    /// The key of the item at input position `p`, if there is one.
    fn key_at(&self, p: u32) -> Option<&EntryKey> {
        self.keys.get(p as usize)
    }

    /// The keys of the members of the group with key hash `g`, in input order.
    fn group_members(&self, g: u64) -> Vec<EntryKey> {
        self.keys
            .iter()
            .filter(|k| k.1 == Some(g))
            .copied()
            .collect()
    }
}

/// The comparison of a new window with the previous one.
pub(crate) struct Comparison {
    pub kept_entries: usize,
    pub kept_tokens: i64,
    pub first_difference: Option<Difference>,
}

/// Compares the new `window` (entries in sent order; `input_order` when that is input
/// order) with the previous state's entries.
pub(crate) fn compare(
    previous: Option<&PrefixState>,
    window: &[StateEntry],
    catalog: &Catalog,
    input_order: bool,
) -> Comparison {
    let prev: &[StateEntry] = previous.map_or(&[], |s| &s.entries);
    let kept = prev
        .iter()
        .zip(window)
        .take_while(|(a, b)| key(a) == key(b))
        .count();
    let kept_tokens = prev[..kept]
        .iter()
        .fold(0i64, |t, e| t.saturating_add(e.tokens));
    let first_difference = (kept < prev.len()).then(|| Difference {
        index: kept,
        reason: diagnose(prev, window, kept, catalog, input_order),
        item: window.get(kept).map(|e| e.position as usize),
        previous_position: prev[kept].position,
    });
    Comparison {
        kept_entries: kept,
        kept_tokens,
        first_difference,
    }
}

/// Why `prev[k]` is not at index `k` of the new window.
fn diagnose(
    prev: &[StateEntry],
    window: &[StateEntry],
    k: usize,
    catalog: &Catalog,
    input_order: bool,
) -> DifferenceReason {
    let e = key(&prev[k]);
    // The earlier entries with the same key took the first positions with that key.
    let used = prev[..k].iter().filter(|p| key(p) == e).count();
    if let Some(&now) = catalog.positions(&e).get(used) {
        // In input order, an item now before the last kept one has moved up the list.
        let moved_up = input_order && k > 0 && window.get(k - 1).is_some_and(|w| now < w.position);
        if window[k.min(window.len())..].iter().any(|w| key(w) == e) {
            // Still placed, later: what came first?
            let ahead = key(&window[k]);
            let later_in_previous = prev[k + 1..].iter().any(|p| key(p) == ahead);
            return if later_in_previous {
                DifferenceReason::Reordered
            } else {
                DifferenceReason::Inserted
            };
        }
        if moved_up {
            return DifferenceReason::Reordered;
        }
        if let Some(g) = e.1 {
            if group_changed(prev, g, catalog) {
                return DifferenceReason::GroupChanged;
            }
        }
        return DifferenceReason::Budget;
    }
    // Gone: was it edited in place or removed? Find the next previous item that is still
    // in the input and see whether it moved down (a removal shifts later positions).
    let mut before: FastMap<EntryKey, usize> = FastMap::default();
    for p in &prev[..k] {
        *before.entry(key(p)).or_insert(0) += 1;
    }
    for later in &prev[k + 1..] {
        let lk = key(later);
        let used = before.get(&lk).copied().unwrap_or(0);
        if let Some(&now) = catalog.positions(&lk).get(used) {
            return if now < later.position {
                DifferenceReason::Removed
            } else {
                DifferenceReason::Edited
            };
        }
    }
    // Nothing later survived: look at what stands at the old position now.
    match catalog.key_at(prev[k].position) {
        Some(now) if !prev.iter().any(|p| key(p) == *now) => DifferenceReason::Edited,
        _ => DifferenceReason::Removed,
    }
}

/// Whether the members of group `g` differ from the previous window's members of it.
fn group_changed(prev: &[StateEntry], g: u64, catalog: &Catalog) -> bool {
    let mut before: Vec<EntryKey> = prev
        .iter()
        .filter(|p| p.group == Some(g))
        .map(key)
        .collect();
    let mut now = catalog.group_members(g);
    before.sort_unstable();
    now.sort_unstable();
    before != now
}
