//! The provider rules a selection must also satisfy beyond keeping units whole.
//!
//! * Every request keeps at least one message.
//! * Anthropic: the first message is a user message (A3 in docs/chat.md).
//! * Anthropic: the API merges consecutive messages of one role into one turn, and with
//!   extended thinking the last assistant turn must start with a thinking block. So an
//!   assistant message that starts with a thinking block is never left right after another
//!   assistant message it did not follow in the request (A7).
//!
//! A selection that breaks one of the last two can be repaired in two ways: by dropping
//! units (the leading ones until a user message leads; for A7 the earlier assistant
//! message's unit, or the thinking turn's when that one is pinned), or by pinning a user
//! message that repairs it (the nearest one before the selection, then the conversation's
//! first; the nearest one between the two assistant messages) and running the pipeline
//! again, which fills the budget around it. [`select`] makes each candidate valid by
//! dropping and keeps the one that keeps the most of the first run's selection, counted in
//! tokens, then the most messages, then the most tokens (the first run's on a tie): a
//! repair never gives up more of what the pipeline chose than the other would.
//!
//! Drops only ever remove units from a selection and pinning runs the pipeline again with
//! the same budget, so the budget holds either way.

use crate::chat::conversation::{Conversation, Role};
use crate::chat::select::Run;
use crate::chat::{Adjustment, Provider};
use crate::error::{Error, Result};

/// The most runs made after the first one with a user message pinned.
const MAX_RERUNS: usize = 2;

/// A selection that satisfies the provider's rules, and how it was reached.
pub(crate) struct Valid {
    /// The run whose selection this is; its `kept_units` are the units sent.
    pub(crate) run: Run,
    /// Units the run selected that were dropped afterwards.
    pub(crate) dropped: Vec<Adjustment>,
    /// Units pinned for the run, beyond the request's own pinned units.
    pub(crate) pinned: Vec<Adjustment>,
}

/// Runs the pipeline with `run` (given which units are pinned) and returns a selection that
/// satisfies the provider's rules; see the module documentation for how. A run made only
/// to repair the first one may fail (say, the pinned user message does not fit): the
/// repair is then not available, and only a cancellation is reported.
pub(crate) fn select(
    conv: &Conversation,
    pinned: &[bool],
    run: &dyn Fn(&[bool]) -> Result<Run>,
) -> Result<Valid> {
    let first = run(pinned)?;
    let chosen = first.kept_units.clone();
    let mut next_pin = repair_pin(conv, &first.kept_units, None);
    let mut best = enforce(conv, first, pinned, Vec::new())?;
    let mut reruns = 0;
    while let Some((unit, reason)) = next_pin.take() {
        if pinned[unit] || reruns == MAX_RERUNS {
            break;
        }
        reruns += 1;
        let mut pins = pinned.to_vec();
        pins[unit] = true;
        let again = match run(&pins) {
            Ok(again) => again,
            Err(e @ Error::Cancelled(_)) => return Err(e),
            Err(_) => break,
        };
        next_pin = repair_pin(conv, &again.kept_units, Some(unit));
        let pin = Adjustment {
            paths: conv.unit_paths(unit),
            reason,
        };
        let candidate = enforce(conv, again, &pins, vec![pin])?;
        if kept_size(conv, &candidate, &chosen) > kept_size(conv, &best, &chosen) {
            best = candidate;
        }
    }
    if !best.run.kept_units.iter().any(|&k| k) {
        return Err(Error::InvalidBudget(
            "the budget leaves room for no message of the request (a request needs at least \
             one)"
                .into(),
        ));
    }
    Ok(best)
}

/// The user-led unit to pin for another run, and why, when the selection `kept` breaks an
/// Anthropic rule that a user message can repair:
/// * it starts with an assistant message: the nearest user-led unit before it, or, when a
///   run with `previous` pinned still does, the conversation's first unit;
/// * a thinking turn would merge into an earlier assistant message: the nearest user-led
///   unit between the two, if any.
fn repair_pin(
    conv: &Conversation,
    kept: &[bool],
    previous: Option<usize>,
) -> Option<(usize, String)> {
    if conv.provider != Provider::Anthropic {
        return None;
    }
    let first = kept.iter().position(|&k| k)?;
    let (unit, reason) = if !conv.starts_with_user(first) {
        let unit = match previous {
            None => conv.last_user_led(0..first)?,
            Some(_) => 0,
        };
        (
            unit,
            "pinned so that the request starts with a user message".to_owned(),
        )
    } else {
        let (p, q) = thinking_merge(conv, kept)?;
        let unit = conv.last_user_led(conv.unit_of(p) + 1..conv.unit_of(q))?;
        (
            unit,
            format!(
                "pinned so that the thinking turn of {} follows a user message",
                Conversation::path(q)
            ),
        )
    };
    (previous != Some(unit)).then(|| (unit, format!("{reason}; the pipeline ran again around it")))
}

/// How a repaired selection ranks, higher is better: the tokens it keeps of the messages
/// the first run chose (`chosen`, per unit), then how many messages it keeps, then their
/// tokens; each message counted as it would be sent (a shortened one by its shortened
/// form).
fn kept_size(conv: &Conversation, valid: &Valid, chosen: &[bool]) -> (i64, usize, i64) {
    let run = &valid.run;
    conv.units
        .iter()
        .zip(&run.kept_units)
        .zip(chosen)
        .filter(|((_, &k), _)| k)
        .flat_map(|((u, _), &c)| u.clone().map(move |i| (i, c)))
        .fold((0, 0, 0), |(o, n, t), (i, c)| {
            let tokens = conv.sent_tokens(i, run.shortened[i]);
            let overlap = if c { tokens } else { 0 };
            (o.saturating_add(overlap), n + 1, t.saturating_add(tokens))
        })
}

/// Drops units from the run's selection until it satisfies the provider's rules.
fn enforce(
    conv: &Conversation,
    mut run: Run,
    pinned: &[bool],
    pins: Vec<Adjustment>,
) -> Result<Valid> {
    let mut dropped = Vec::new();
    if conv.provider == Provider::Anthropic {
        while let Some((unit, reason)) = anthropic_violation(conv, &run.kept_units, pinned)? {
            run.kept_units[unit] = false;
            dropped.push(Adjustment {
                paths: conv.unit_paths(unit),
                reason,
            });
        }
    }
    Ok(Valid {
        run,
        dropped,
        pinned: pins,
    })
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
    let Some((p, q)) = thinking_merge(conv, kept) else {
        return Ok(None);
    };
    let reason = format!(
        "it would merge into the turn of {}, which must start with its thinking block",
        Conversation::path(q)
    );
    let (pu, qu) = (conv.unit_of(p), conv.unit_of(q));
    if pinned[pu] {
        droppable(qu, pinned, &reason).map(Some)
    } else {
        Ok(Some((pu, reason)))
    }
}

/// The first two kept messages `(p, q)` where `q`, an assistant message that starts with a
/// thinking block, would follow `p`, an assistant message it did not follow in the request.
fn thinking_merge(conv: &Conversation, kept: &[bool]) -> Option<(usize, usize)> {
    let mut kept_messages = conv
        .units
        .iter()
        .zip(kept)
        .filter(|(_, &k)| k)
        .flat_map(|(u, _)| u.clone());
    let mut p = kept_messages.next()?;
    for q in kept_messages {
        let (before, after) = (&conv.messages[p], &conv.messages[q]);
        if q != p + 1
            && before.role == Role::Assistant
            && after.role == Role::Assistant
            && after.starts_with_thinking
        {
            return Some((p, q));
        }
        p = q;
    }
    None
}

fn droppable(unit: usize, pinned: &[bool], reason: &str) -> Result<(usize, String)> {
    if pinned[unit] {
        // The pinned units (the last one, the user-led one before it, and a user message
        // pinned for a repair) are chosen so that this cannot happen; an error is still
        // better than an invalid request.
        return Err(Error::InvalidRequest(format!(
            "cannot trim the request validly: a pinned unit would have to be dropped because \
             {reason}"
        )));
    }
    Ok((unit, reason.to_owned()))
}
