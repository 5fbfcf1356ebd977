//! Shared by the item-group tests: item and pipeline builders, and the checks every
//! grouped selection must pass (each group all in or all out; members adjacent and in
//! input order). Not every includer uses every function.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use ctxpack::placer::Placer;
use ctxpack::scorer::ReflexiveScorer;
use ctxpack::slicer::Slicer;
use ctxpack::{ContextItem, ContextKind, GroupValue, OverflowStrategy, Pipeline, Selection};

/// An item builder whose score (ReflexiveScorer) is `score`.
pub fn item(content: &str, tokens: i64, score: f64) -> ctxpack::model::ContextItemBuilder {
    ContextItem::builder(content, tokens).future_relevance_hint(score)
}

/// A kind (panics on a blank name: test data only).
pub fn kind(name: &str) -> ContextKind {
    ContextKind::new(name).expect("kind")
}

/// The pipeline options the group tests vary.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub dedup: bool,
    pub overflow: OverflowStrategy,
    pub group_value: GroupValue,
    pub pinned_first: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            dedup: true,
            overflow: OverflowStrategy::Throw,
            group_value: GroupValue::Sum,
            pinned_first: false,
        }
    }
}

/// Reflexive scoring (each item's hint is its score) with the given slicer and placer.
pub fn pipeline(slicer: Arc<dyn Slicer>, placer: Arc<dyn Placer>, o: Options) -> Pipeline {
    Pipeline::builder()
        .scorer(Arc::new(ReflexiveScorer::new()))
        .slicer(slicer)
        .placer(placer)
        .deduplication(o.dedup)
        .overflow_strategy(o.overflow)
        .group_value(o.group_value)
        .pinned_first(o.pinned_first)
        .build()
        .expect("pipeline")
}

/// The members of every group, input positions in input order, by key.
pub fn groups_of(items: &[ContextItem]) -> BTreeMap<&str, Vec<usize>> {
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(key) = item.group() {
            groups.entry(key).or_default().push(i);
        }
    }
    groups
}

/// Every group is placed whole or not at all, and a placed group's members follow one
/// another in input order.
pub fn check_whole_and_adjacent(items: &[ContextItem], placed: &[usize]) -> Result<(), String> {
    let mut at = vec![None; items.len()];
    for (rank, &i) in placed.iter().enumerate() {
        at[i] = Some(rank);
    }
    for (key, members) in groups_of(items) {
        let ranks: Vec<Option<usize>> = members.iter().map(|&m| at[m]).collect();
        let placed_count = ranks.iter().filter(|r| r.is_some()).count();
        if placed_count != 0 && placed_count != members.len() {
            return Err(format!(
                "group {key:?} split: members {members:?} placed at {ranks:?}"
            ));
        }
        if placed_count == members.len() {
            let first = ranks[0].expect("placed");
            for (k, r) in ranks.iter().enumerate() {
                if *r != Some(first + k) {
                    return Err(format!(
                        "group {key:?} not adjacent in input order: members {members:?} at {ranks:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Tokens of the placed items.
pub fn placed_tokens(items: &[ContextItem], selection: &Selection) -> i64 {
    selection.indices.iter().map(|&i| items[i].tokens()).sum()
}

/// Contents of the placed items, in placed order.
pub fn placed_contents<'a>(items: &'a [ContextItem], selection: &Selection) -> Vec<&'a str> {
    selection
        .indices
        .iter()
        .map(|&i| items[i].content())
        .collect()
}
