//! The selection step: the pipeline runs over one item per message and the units whose
//! messages it selects are kept.
//!
//! Every message of a unit of several messages (a tool call with its results) carries the
//! unit's group key, so the engine keeps or drops the unit whole in every stage
//! (`docs/groups.md`): it scores, deduplicates, slices and places the real messages, and
//! its report explains each message on its own row. A unit is pinned by pinning every one
//! of its messages. [`run`] still keeps a unit only when every one of its items was
//! selected — the engine guarantees it, and the check costs one pass.

use crate::chat::conversation::Conversation;
use crate::diagnostics::TraceDetail;
use crate::error::Result;
use crate::model::{ContextBudget, ContextItem};
use crate::pipeline::{Pipeline, RunOptions, Selection};
use crate::prefix::{PrefixOptions, PrefixOrder, PrefixState, ReuseReport};

/// The outcome of the pipeline run, in terms of the conversation.
pub(crate) struct Run {
    /// The items the pipeline ran on.
    pub(crate) items: Vec<ContextItem>,
    /// The JSON path each item stands for.
    pub(crate) item_paths: Vec<String>,
    /// The pipeline's selection (with its report when traced).
    pub(crate) selection: Selection,
    /// Per unit: kept.
    pub(crate) kept_units: Vec<bool>,
    /// Per message: placed in its shortened form (`ChatOptions::shorten`).
    pub(crate) shortened: Vec<bool>,
    /// With a prefix state: the run's reuse report and new state, and the items'
    /// identities.
    pub(crate) prefix: Option<(ReuseReport, PrefixState, Vec<u64>)>,
}

/// Identifies the engine items (their JSON paths, the items) for a prefix state.
pub(crate) type Identify<'p> = &'p dyn Fn(&[String], &[ContextItem]) -> Vec<u64>;

/// What a run with a prefix state needs: the options, and how to identify the engine
/// items by the JSON paths they stand for.
pub(crate) struct PrefixInput<'p> {
    pub(crate) options: PrefixOptions<'p>,
    pub(crate) identify: Identify<'p>,
}

/// The items of the pipeline: fixed parts first (pinned), then one per message.
struct EngineItems {
    items: Vec<ContextItem>,
    paths: Vec<String>,
    /// The unit each item belongs to (`None` for fixed parts).
    unit: Vec<Option<usize>>,
}

/// Runs the pipeline and maps its selection back to units.
pub(crate) fn run(
    conv: &Conversation,
    pipeline: &Pipeline,
    budget: &ContextBudget,
    pinned: &[bool],
    trace: TraceDetail,
    prefix: Option<&PrefixInput<'_>>,
) -> Result<Run> {
    let engine = engine_items(conv, pinned)?;
    let options = RunOptions {
        trace,
        on_overflow: None,
    };
    let (selection, prefix) = match prefix {
        None => (pipeline.run_with(&engine.items, budget, &options)?, None),
        Some(p) => {
            // The trimmed request keeps conversation order: the state follows input order.
            let ids = (p.identify)(&engine.paths, &engine.items);
            let mut o = p.options;
            o.order = PrefixOrder::Input;
            o.identities = Some(&ids);
            let r = pipeline.run_prefix(&engine.items, budget, &options, &o)?;
            (r.selection, Some((r.reuse, r.state, ids)))
        }
    };
    let mut selected = vec![0usize; conv.units.len()];
    let mut shortened = vec![false; conv.messages.len()];
    for (rank, &i) in selection.indices.iter().enumerate() {
        if let Some(unit) = engine.unit[i] {
            selected[unit] += 1;
            let m = i - conv.fixed.len();
            shortened[m] = selection.form(rank) > 0 || conv.messages[m].send_short;
        }
    }
    let kept_units = conv
        .units
        .iter()
        .zip(&selected)
        .map(|(members, &s)| s == members.len())
        .collect();
    Ok(Run {
        items: engine.items,
        item_paths: engine.paths,
        selection,
        kept_units,
        shortened,
        prefix,
    })
}

/// One item per fixed part and per message; the messages of a unit of several share its
/// group key and its pinning.
fn engine_items(conv: &Conversation, pinned: &[bool]) -> Result<EngineItems> {
    let n = conv.fixed.len() + conv.messages.len();
    let mut out = EngineItems {
        items: Vec::with_capacity(n),
        paths: Vec::with_capacity(n),
        unit: Vec::with_capacity(n),
    };
    for fixed in &conv.fixed {
        out.items.push(Conversation::fixed_item(fixed)?);
        out.paths.push(fixed.path.clone());
        out.unit.push(None);
    }
    for (u, range) in conv.units.iter().enumerate() {
        let key = conv.group_key(range.start);
        for i in range.clone() {
            let mut item = conv.message_item(i).pinned(pinned[u]);
            if let Some(key) = &key {
                item = item.group(key.as_str());
            }
            out.items.push(item.build()?);
            out.paths.push(Conversation::path(i));
            out.unit.push(Some(u));
        }
    }
    Ok(out)
}
