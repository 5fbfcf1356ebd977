//! The selection step: the pipeline runs over the conversation and the units whose
//! messages it selects are kept. A unit (a tool call with its results) is kept whole or
//! dropped whole.
//!
//! INTERIM ADAPTER, until item groups exist in the engine: [`engine_items`] gives the
//! pipeline one item per unit (its members' contents joined, their tokens summed), so the
//! engine cannot split a unit. When `ContextItemBuilder::group` lands, `engine_items`
//! becomes one item per message, built with `conv.message_item(i)`, pinned as its unit,
//! with `.group(key)` for every `Some(key)` of `conv.group_key(i)`, and `unit[item]` the
//! message's unit. Nothing else changes: [`run`] already keeps a unit only when every one of
//! its items was selected.

use std::ops::Range;

use crate::chat::conversation::{Conversation, Kind};
use crate::diagnostics::TraceDetail;
use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextItem, ContextKind, ContextSource};
use crate::pipeline::{Pipeline, RunOptions, Selection};
use crate::prefix::{PrefixOptions, PrefixOrder, PrefixState, ReuseReport};

/// The outcome of the pipeline run, in terms of the conversation.
pub(crate) struct Run {
    /// The items the pipeline ran on.
    pub(crate) items: Vec<ContextItem>,
    /// The JSON paths each item stands for.
    pub(crate) item_paths: Vec<Vec<String>>,
    /// The pipeline's selection (with its report when traced).
    pub(crate) selection: Selection,
    /// Per unit: kept.
    pub(crate) kept_units: Vec<bool>,
    /// With a prefix state: the run's reuse report and new state, and the items'
    /// identities.
    pub(crate) prefix: Option<(ReuseReport, PrefixState, Vec<u64>)>,
}

/// Identifies the engine items (their JSON paths, the items) for a prefix state.
pub(crate) type Identify<'p> = &'p dyn Fn(&[Vec<String>], &[ContextItem]) -> Vec<u64>;

/// What a run with a prefix state needs: the options, and how to identify the engine
/// items by the JSON paths they stand for.
pub(crate) struct PrefixInput<'p> {
    pub(crate) options: PrefixOptions<'p>,
    pub(crate) identify: Identify<'p>,
}

/// The items of the pipeline: fixed parts first (pinned), then the conversation.
struct EngineItems {
    items: Vec<ContextItem>,
    paths: Vec<Vec<String>>,
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
    let mut members = vec![0usize; conv.units.len()];
    let mut selected = vec![0usize; conv.units.len()];
    for unit in engine.unit.iter().flatten() {
        members[*unit] += 1;
    }
    for &i in &selection.indices {
        if let Some(unit) = engine.unit[i] {
            selected[unit] += 1;
        }
    }
    let kept_units = members
        .iter()
        .zip(&selected)
        .map(|(&m, &s)| m > 0 && s == m)
        .collect();
    Ok(Run {
        items: engine.items,
        item_paths: engine.paths,
        selection,
        kept_units,
        prefix,
    })
}

/// INTERIM: one item per unit (see the module documentation for what replaces it).
fn engine_items(conv: &Conversation, pinned: &[bool]) -> Result<EngineItems> {
    let mut out = EngineItems {
        items: Vec::with_capacity(conv.fixed.len() + conv.units.len()),
        paths: Vec::new(),
        unit: Vec::new(),
    };
    for fixed in &conv.fixed {
        out.items.push(Conversation::fixed_item(fixed)?);
        out.paths.push(vec![fixed.path.clone()]);
        out.unit.push(None);
    }
    for (u, range) in conv.units.iter().enumerate() {
        let item = if range.len() == 1 {
            conv.message_item(range.start).pinned(pinned[u]).build()?
        } else {
            unit_item(conv, range.clone(), pinned[u])?
        };
        out.items.push(item);
        out.paths
            .push(range.clone().map(Conversation::path).collect());
        out.unit.push(Some(u));
    }
    Ok(out)
}

/// INTERIM: the one item of a unit of several messages: the range of paths, then their
/// contents, one per line; their tokens summed; stamped with the first one's time; a tool
/// output when any member is one.
fn unit_item(conv: &Conversation, range: Range<usize>, pinned: bool) -> Result<ContextItem> {
    let members = range
        .clone()
        .map(|i| conv.message_item(i).build())
        .collect::<Result<Vec<_>>>()?;
    let tokens = members.iter().try_fold(0i64, |sum, m| {
        sum.checked_add(m.tokens()).ok_or_else(|| {
            Error::TokenOverflow(format!(
                "the tokens of {} do not fit in 64 bits",
                Conversation::path(range.start)
            ))
        })
    })?;
    // "messages[2]..messages[4]: " first, so that a clipped display still names the unit.
    let mut content = vec![format!(
        "{}..{}:",
        Conversation::path(range.start),
        Conversation::path(range.end - 1)
    )];
    content.extend(members.iter().map(|m| m.content().to_owned()));
    let tool = conv.messages[range.clone()]
        .iter()
        .any(|m| m.kind == Kind::ToolOutput);
    let (kind, source) = if tool {
        (ContextKind::TOOL_OUTPUT, ContextSource::TOOL)
    } else {
        (ContextKind::MESSAGE, ContextSource::CHAT)
    };
    let mut tags: Vec<&str> = members
        .iter()
        .flat_map(|m| m.tags().iter().map(String::as_str))
        .collect();
    tags.sort_unstable();
    tags.dedup();
    let mut b = ContextItem::builder(content.join("\n"), tokens)
        .kind(ContextKind::new(kind)?)
        .source(ContextSource::new(source)?)
        .tags(tags)
        .pinned(pinned);
    if let Some(key) = conv.group_key(range.start) {
        // Shown by reports; with engine groups this becomes `.group(key)` on every member.
        b = b.metadata_entry("group", key);
    }
    if let Some(ts) = members[0].timestamp() {
        b = b.timestamp(ts);
    }
    b.build()
}
