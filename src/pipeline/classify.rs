//! Stage 1, Classify (spec 02 §2): drop negative-token items, set pinned items aside,
//! check pinned tokens against `max_tokens - output_reserve`.
//!
//! With groups (`docs/groups.md`): a member with negative tokens excludes its whole group,
//! and a pinned member pins its whole group. With variants (`docs/variants.md`): each
//! scoreable candidate's dominated variants are pruned here, before anything is scored.

use crate::diagnostics::{Collector, ExclusionReason, PipelineStage};
use crate::error::{checked_token_sum, Error, Result};
use crate::model::{ContextBudget, ContextItem, GroupValue};
use crate::pipeline::forms::RunForms;
use crate::pipeline::groups::{member_reason, GroupIds, RunGroups, NO_GROUP};

/// The partitions of the input, as input positions in input order, and the run's groups.
pub(super) struct Classified<'a> {
    pub pinned: Vec<usize>,
    pub scoreable: Vec<usize>,
    /// The tokens of the scoreable items (parallel to `scoreable`), for their candidates.
    pub scoreable_tokens: Vec<i64>,
    pub pinned_tokens: i64,
    /// `None` when no item has a group key.
    pub groups: Option<RunGroups<'a>>,
    /// `None` when no scoreable candidate has variants, or the pipeline does not use them.
    pub forms: Option<RunForms>,
}

pub(super) fn classify<'a, C: Collector>(
    items: &'a [ContextItem],
    budget: &ContextBudget,
    group_value: GroupValue,
    use_variants: bool,
    collector: &mut C,
) -> Result<Classified<'a>> {
    collector.begin_stage();
    let mut pinned = Vec::new();
    let mut scoreable = Vec::with_capacity(items.len());
    let mut scoreable_tokens = Vec::with_capacity(items.len());
    let mut negative = Vec::new();
    let mut ids = GroupIds::new(items.len());
    let mut variants = false;
    for (index, item) in items.iter().enumerate() {
        if item.has_extension() {
            if let Some(key) = item.group() {
                ids.add(index, key, item);
            }
            variants |= item.has_variants();
        }
        if item.tokens() < 0 {
            negative.push(index);
        } else if item.pinned() {
            pinned.push(index);
        } else {
            scoreable.push(index);
            scoreable_tokens.push(item.tokens());
        }
    }
    // Unless some group has a negative or a pinned member, every negative item is
    // ungrouped and the partitions above already keep groups together.
    let regroup = |v: &[u32]| v.iter().any(|&m| m != NO_GROUP);
    let groups = if ids.is_empty() {
        None
    } else if regroup(ids.first_negative()) || regroup(ids.first_pinned()) {
        let (first_negative, first_pinned) =
            (ids.first_negative().to_vec(), ids.first_pinned().to_vec());
        let mut table = ids.finish(group_value)?;
        (pinned, scoreable) =
            classify_groups(items, &mut table, &first_negative, &first_pinned, collector);
        scoreable_tokens.clear();
        scoreable_tokens.extend(scoreable.iter().map(|&i| items[i].tokens()));
        negative.clear();
        Some(table)
    } else {
        Some(ids.finish(group_value)?)
    };
    if C::ENABLED {
        for index in negative {
            let reason = ExclusionReason::NegativeTokens {
                tokens: items[index].tokens(),
            };
            collector.exclude(PipelineStage::Classify, index, 0.0, reason);
        }
    }
    let pinned_tokens =
        checked_token_sum(pinned.iter().map(|&i| items[i].tokens()), "pinned tokens")?;
    let available = budget.max_tokens() - budget.output_reserve();
    if pinned_tokens > available {
        return Err(Error::PinnedExceedsBudget {
            pinned_tokens,
            available,
        });
    }
    let forms = match variants && use_variants {
        true => RunForms::new(items, &scoreable)?,
        false => None,
    };
    collector.end_stage(PipelineStage::Classify, pinned.len() + scoreable.len());
    Ok(Classified {
        pinned,
        scoreable,
        scoreable_tokens,
        pinned_tokens,
        groups,
        forms,
    })
}

/// The partitions when the input has groups: a member of a group with a negative-token
/// member is excluded (the negative members with `NegativeTokens`, the others with
/// `GroupExcluded` naming the first negative member); every member of a group with a
/// pinned member is pinned. Exclusions are recorded in input order.
fn classify_groups<C: Collector>(
    items: &[ContextItem],
    table: &mut RunGroups<'_>,
    first_negative: &[u32],
    first_pinned: &[u32],
    collector: &mut C,
) -> (Vec<usize>, Vec<usize>) {
    let member = |m: u32| (m != NO_GROUP).then_some(m as usize);
    let first_negative: Vec<Option<usize>> = first_negative.iter().map(|&m| member(m)).collect();
    let first_pinned: Vec<Option<usize>> = first_pinned.iter().map(|&m| member(m)).collect();
    for g in 0..table.len() {
        if let (None, Some(by)) = (first_negative[g], first_pinned[g]) {
            table.set_pinned_by(g, by);
        }
    }
    let mut pinned = Vec::new();
    let mut scoreable = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let group = table.group_of(index);
        let lead = group.and_then(|g| first_negative[g]);
        if item.tokens() < 0 || lead.is_some() {
            if let (Some(g), Some(lead)) = (group, lead) {
                table.set_excluded(g, PipelineStage::Classify, lead);
            }
            if C::ENABLED {
                let own = ExclusionReason::NegativeTokens {
                    tokens: item.tokens(),
                };
                // Every negative member carries its own reason; the others name the first
                // negative member of their group.
                let reason = match (group, lead) {
                    (Some(g), Some(lead)) if item.tokens() >= 0 => {
                        let lead_reason = ExclusionReason::NegativeTokens {
                            tokens: items[lead].tokens(),
                        };
                        member_reason(table, items, g, lead, &lead_reason)
                    }
                    _ => own,
                };
                collector.exclude(PipelineStage::Classify, index, 0.0, reason);
            }
        } else if item.pinned() || group.is_some_and(|g| first_pinned[g].is_some()) {
            pinned.push(index);
        } else {
            scoreable.push(index);
        }
    }
    (pinned, scoreable)
}
