//! The provider rules a selection must also satisfy beyond keeping units whole, enforced by
//! dropping further units after the run (never by adding any, so the budget still holds).
//!
//! * Every request keeps at least one message.
//! * Anthropic: the first message is a user message; units are dropped from the front until
//!   one that starts with a user message leads.
//! * Anthropic: the API merges consecutive messages of one role into one turn, and with
//!   extended thinking the last assistant turn must start with a thinking block. So an
//!   assistant message that starts with a thinking block is never left right after another
//!   assistant message it did not follow in the request: the earlier one's unit is dropped
//!   (or, when that one is pinned, the later one's).

use crate::chat::conversation::{Conversation, Role};
use crate::chat::{Adjustment, Provider};
use crate::error::{Error, Result};

/// Drops units until the selection satisfies the provider's rules; returns what was dropped.
pub(crate) fn enforce(
    conv: &Conversation,
    kept: &mut [bool],
    pinned: &[bool],
) -> Result<Vec<Adjustment>> {
    let mut adjustments = Vec::new();
    if conv.provider == Provider::Anthropic {
        while let Some((unit, reason)) = anthropic_violation(conv, kept, pinned)? {
            kept[unit] = false;
            adjustments.push(Adjustment {
                paths: conv.units[unit].clone().map(Conversation::path).collect(),
                reason,
            });
        }
    }
    if !kept.iter().any(|&k| k) {
        return Err(Error::InvalidBudget(
            "the budget leaves room for no message of the request (a request needs at least \
             one)"
                .into(),
        ));
    }
    Ok(adjustments)
}

/// The next unit to drop, with the reason, or `None` when the selection is valid.
fn anthropic_violation(
    conv: &Conversation,
    kept: &[bool],
    pinned: &[bool],
) -> Result<Option<(usize, String)>> {
    let Some(first) = kept.iter().position(|&k| k) else {
        return Ok(None);
    };
    if !conv.starts_with_user(first) {
        return droppable(
            first,
            pinned,
            "an Anthropic request must start with a user message",
        )
        .map(Some);
    }
    let kept_messages: Vec<usize> = conv
        .units
        .iter()
        .zip(kept)
        .filter(|(_, &k)| k)
        .flat_map(|(u, _)| u.clone())
        .collect();
    for pair in kept_messages.windows(2) {
        let (p, q) = (pair[0], pair[1]);
        let (before, after) = (&conv.messages[p], &conv.messages[q]);
        if q != p + 1
            && before.role == Role::Assistant
            && after.role == Role::Assistant
            && after.starts_with_thinking
        {
            let reason = format!(
                "it would merge into the turn of {}, which must start with its thinking block",
                Conversation::path(q)
            );
            let (pu, qu) = (conv.unit_of(p), conv.unit_of(q));
            return if pinned[pu] {
                droppable(qu, pinned, &reason).map(Some)
            } else {
                Ok(Some((pu, reason)))
            };
        }
    }
    Ok(None)
}

fn droppable(unit: usize, pinned: &[bool], reason: &str) -> Result<(usize, String)> {
    if pinned[unit] {
        // The pinned units (the last one and the user-led one before it) are chosen so that
        // this cannot happen; an error is still better than an invalid request.
        return Err(Error::InvalidRequest(format!(
            "cannot trim the request validly: a pinned unit would have to be dropped because \
             {reason}"
        )));
    }
    Ok((unit, reason.to_owned()))
}
