//! The prefix-state extension (`docs/prefix-cache.md`): Measure selects exactly as a plain
//! run; Hold keeps the previous prefix and appends; the reuse report's figures and
//! reasons; the adversarial cases of the issue (a one-byte edit, reordered history, a
//! duplicate inside the prefix, a new pinned item ahead of the prefix, a budget shrinking
//! below the prefix, a state of another item list, truncated and bit-flipped states); the
//! state format read by an independent decoder written from the documentation; seeded
//! multi-turn property runs over every preset.

#[path = "common/groups.rs"]
mod groups;
#[path = "common/rng.rs"]
mod rng;

use std::sync::Arc;

use ctxpack::diagnostics::TraceDetail;
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::policy::{Policy, Preset};
use ctxpack::prefix::{
    hash_bytes, CacheRule, DifferenceReason, PrefixMode, PrefixOptions, PrefixOrder, PrefixRun,
    PrefixState, TurnOutcome,
};
use ctxpack::slicer::{GreedySlice, KnapsackSlice};
use ctxpack::{
    ContextBudget, ContextItem, ErrorCode, OverflowStrategy, Pipeline, RunOptions, ScoredItem,
};

use groups::{check_whole_and_adjacent, item, pipeline, Options};
use rng::Rng;

// ---------------------------------------------------------------------------------------
// Helpers

/// Reflexive scoring (hint = score), greedy, chronological, pinned first.
fn reflexive(options: Options) -> Pipeline {
    pipeline(
        Arc::new(GreedySlice::new()),
        Arc::new(ChronologicalPlacer::new()),
        Options {
            pinned_first: true,
            ..options
        },
    )
}

/// The base conversation: a pinned `sys` and `m1`..`m8`, 10 tokens each, `m{i}` scored
/// `0.1 × i` and stamped `i`.
fn base() -> Vec<ContextItem> {
    let mut items = vec![item("sys", 10, 0.0).pinned(true).build().unwrap()];
    for i in 1..=8 {
        items.push(message(&format!("m{i}"), i as f64 / 10.0, i));
    }
    items
}

fn message(content: &str, score: f64, at: i64) -> ContextItem {
    item(content, 10, score).timestamp(at).build().unwrap()
}

fn options(mode: PrefixMode, previous: Option<&PrefixState>) -> PrefixOptions<'_> {
    let mut o = PrefixOptions::new(mode);
    o.previous = previous;
    o
}

fn run(
    p: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    o: &PrefixOptions<'_>,
) -> PrefixRun {
    p.run_prefix(items, budget, &RunOptions::default(), o)
        .expect("prefix run")
}

fn contents<'a>(items: &'a [ContextItem], r: &PrefixRun) -> Vec<&'a str> {
    r.selection
        .indices
        .iter()
        .map(|&i| items[i].content())
        .collect()
}

fn budget(target: i64) -> ContextBudget {
    ContextBudget::new(target, target).unwrap()
}

/// A first turn of Hold over `items` that selects freshly at the full target (watermark
/// 1), so that tests start from the specification's window.
fn first_turn(p: &Pipeline, items: &[ContextItem], b: &ContextBudget) -> PrefixRun {
    let mut o = options(PrefixMode::Hold, None);
    o.low_watermark = 1.0;
    let r = run(p, items, b, &o);
    assert_eq!(r.reuse.outcome, TurnOutcome::Anchored);
    assert_eq!(r.selection.indices, p.run(items, b).unwrap().indices);
    r
}

// ---------------------------------------------------------------------------------------
// Hand-worked behaviour

#[test]
fn hold_keeps_the_previous_window_first_and_appends() {
    let p = reflexive(Options::default());
    let b = budget(120);
    let mut items = base();
    let t1 = first_turn(&p, &items, &b);
    assert_eq!(
        contents(&items, &t1),
        ["sys", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"]
    );
    // Two new messages: 20 tokens more, 110 in all, within 120.
    items.push(message("m9", 0.9, 9));
    items.push(message("m10", 0.95, 10));
    let t2 = run(&p, &items, &b, &options(PrefixMode::Hold, Some(&t1.state)));
    assert_eq!(t2.reuse.outcome, TurnOutcome::Held);
    assert!(t2.selection.indices.starts_with(&t1.selection.indices));
    assert_eq!(contents(&items, &t2)[9..], ["m9", "m10"]);
    assert_eq!(
        (
            t2.reuse.kept_entries,
            t2.reuse.kept_tokens,
            t2.reuse.first_difference
        ),
        (9, 90, None)
    );
    assert_eq!(
        (t2.reuse.previous_entries, t2.reuse.window_entries),
        (9, 11)
    );
    assert_eq!(t2.reuse.value_given_up, 0.0);
    assert_eq!((t2.state.turn(), t2.state.anchor_turn()), (2, 1));
}

#[test]
fn the_same_input_twice_gives_the_same_window_and_full_reuse() {
    let b = budget(3_000);
    let mut rng = Rng::new(0x18);
    for preset in Preset::ALL {
        let mut policy = preset.policy();
        policy.pinned_first = rng.chance(0.5);
        let p = policy.build_pipeline().unwrap();
        for case in 0..20 {
            let items = random_items(&mut rng, 40);
            for mode in [PrefixMode::Measure, PrefixMode::Hold] {
                let first = p.run_prefix(&items, &b, &RunOptions::default(), &options(mode, None));
                let Ok(first) = first else { continue };
                let again = run(&p, &items, &b, &options(mode, Some(&first.state)));
                let what = format!("{preset:?} case {case} {mode:?}");
                assert_eq!(again.selection.indices, first.selection.indices, "{what}");
                let r = &again.reuse;
                assert_eq!(r.kept_entries, r.previous_entries, "{what}");
                assert_eq!(r.kept_entries, r.window_entries, "{what}");
                assert_eq!(r.kept_tokens, first.state.tokens(), "{what}");
                assert_eq!(r.first_difference, None, "{what}");
                let want = match mode {
                    PrefixMode::Measure => TurnOutcome::Measured,
                    PrefixMode::Hold => TurnOutcome::Held,
                };
                assert_eq!(r.outcome, want, "{what}");
                assert_eq!(again.state.entries(), first.state.entries(), "{what}");
            }
        }
    }
}

#[test]
fn a_one_byte_edit_in_an_early_message_ends_the_prefix_there() {
    let p = reflexive(Options::default());
    let b = budget(100);
    let mut items = base();
    let t1 = first_turn(&p, &items, &b);
    items[2] = message("m2!", 0.2, 2);
    for mode in [PrefixMode::Measure, PrefixMode::Hold] {
        let t2 = run(&p, &items, &b, &options(mode, Some(&t1.state)));
        // Same window either way: the prefix before the edit, then the rest as placed.
        assert_eq!(t2.selection.indices, t1.selection.indices, "{mode:?}");
        assert_eq!(
            (t2.reuse.kept_entries, t2.reuse.kept_tokens),
            (2, 20),
            "{mode:?}"
        );
        let d = t2.reuse.first_difference.expect("a difference");
        assert_eq!(
            (d.index, d.reason, d.item, d.previous_position),
            (2, DifferenceReason::Edited, Some(2), 2),
            "{mode:?}"
        );
    }
}

#[test]
fn a_removed_message_is_told_from_an_edited_one() {
    let p = reflexive(Options::default());
    let b = budget(100);
    let mut items = base();
    let t1 = first_turn(&p, &items, &b);
    items.remove(3); // m3
    let t2 = run(
        &p,
        &items,
        &b,
        &options(PrefixMode::Measure, Some(&t1.state)),
    );
    let d = t2.reuse.first_difference.expect("a difference");
    assert_eq!((d.index, d.reason), (3, DifferenceReason::Removed));
    assert_eq!(t2.reuse.kept_entries, 3);
}

#[test]
fn reordered_history() {
    let b = budget(100);
    let p = reflexive(Options::default());
    let mut items = base();
    let t1 = first_turn(&p, &items, &b);
    // m3 and m4 swap timestamps: chronological placement swaps them.
    items[3] = message("m3", 0.3, 4);
    items[4] = message("m4", 0.4, 3);
    let measured = run(
        &p,
        &items,
        &b,
        &options(PrefixMode::Measure, Some(&t1.state)),
    );
    let d = measured.reuse.first_difference.expect("a difference");
    assert_eq!((d.index, d.reason), (3, DifferenceReason::Reordered));
    // Hold in placed order keeps the previous order: full reuse.
    let held = run(&p, &items, &b, &options(PrefixMode::Hold, Some(&t1.state)));
    assert_eq!(held.reuse.outcome, TurnOutcome::Held);
    assert_eq!(held.selection.indices, t1.selection.indices);
    assert_eq!(held.reuse.first_difference, None);

    // Input order (the host sends input order): the two swap places in the list. Hold
    // keeps the prefix up to m3 and cannot append m4, which now comes before it.
    let mut swapped = base();
    swapped.swap(3, 4);
    let mut o = options(PrefixMode::Hold, Some(&t1.state));
    o.order = PrefixOrder::Input;
    o.max_value_loss = 0.2; // m4 is 0.4 of 3.6: 11 % given up
    let t2 = run(&p, &swapped, &b, &o);
    assert_eq!(t2.reuse.outcome, TurnOutcome::Held);
    let mut window = contents(&swapped, &t2);
    window.sort_by_key(|c| swapped.iter().position(|i| i.content() == *c));
    assert_eq!(window, ["sys", "m1", "m2", "m3", "m5", "m6", "m7", "m8"]);
    let d = t2.reuse.first_difference.expect("a difference");
    assert_eq!((d.index, d.reason), (4, DifferenceReason::Reordered));
    assert!((t2.reuse.value_share_given_up() - 0.4 / 3.6).abs() < 1e-12);
    // With the default share that is too much: the turn re-anchors (here to the full
    // target), in input order.
    o.max_value_loss = 0.05;
    o.low_watermark = 1.0;
    let t2 = run(&p, &swapped, &b, &o);
    assert_eq!(t2.reuse.outcome, TurnOutcome::Reanchored);
    assert_eq!(t2.reuse.kept_entries, 3);
    assert_eq!(
        t2.reuse.first_difference.map(|d| d.reason),
        Some(DifferenceReason::Reordered)
    );
}

#[test]
fn a_duplicate_inside_the_prefix() {
    let b = budget(100);
    for dedup in [true, false] {
        let p = reflexive(Options {
            dedup,
            ..Options::default()
        });
        let mut items = base();
        let t1 = first_turn(&p, &items, &b);
        // A newer copy of m5, scored higher.
        items.push(message("m5", 0.9, 9));
        let t2 = run(&p, &items, &b, &options(PrefixMode::Hold, Some(&t1.state)));
        assert_eq!(t2.reuse.outcome, TurnOutcome::Held, "dedup {dedup}");
        assert_eq!(t2.reuse.kept_entries, 9, "dedup {dedup}");
        assert_eq!(t2.reuse.first_difference, None, "dedup {dedup}");
        let window = contents(&items, &t2);
        assert_eq!(
            window[..9],
            ["sys", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"]
        );
        if dedup {
            // The survivor (the newer copy) stands where m5 stood.
            assert_eq!(t2.selection.indices[5], 9);
            assert_eq!(window.len(), 9);
        } else {
            // Both copies are candidates: the old one keeps its place, the new one is
            // appended.
            assert_eq!(t2.selection.indices[5], 5);
            assert_eq!(window[9..], ["m5"]);
        }
        // Measure with deduplication: the surviving copy is placed at its own time.
        if dedup {
            let m = run(
                &p,
                &items,
                &b,
                &options(PrefixMode::Measure, Some(&t1.state)),
            );
            let d = m.reuse.first_difference.expect("a difference");
            assert_eq!((d.index, d.reason), (5, DifferenceReason::Reordered));
        }
    }
}

#[test]
fn a_new_pinned_item_ahead_of_the_prefix() {
    let p = reflexive(Options::default());
    let b = budget(100);
    let items = base();
    let t1 = first_turn(&p, &items, &b);
    let mut with_pin = vec![item("policy", 10, 0.0).pinned(true).build().unwrap()];
    with_pin.extend(items.iter().cloned());
    // Measure: pinned items first, so the new one comes before the whole prefix.
    let m = run(
        &p,
        &with_pin,
        &b,
        &options(PrefixMode::Measure, Some(&t1.state)),
    );
    assert_eq!(contents(&with_pin, &m)[..2], ["policy", "sys"]);
    let d = m.reuse.first_difference.expect("a difference");
    assert_eq!(
        (d.index, d.reason, d.item),
        (0, DifferenceReason::Inserted, Some(0))
    );
    assert_eq!(m.reuse.kept_entries, 0);
    // Hold: the prefix stays first; the new pinned item is placed right after it.
    let h = run(
        &p,
        &with_pin,
        &b,
        &options(PrefixMode::Hold, Some(&t1.state)),
    );
    assert_eq!(h.reuse.outcome, TurnOutcome::Held);
    assert_eq!(
        contents(&with_pin, &h),
        ["sys", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "policy"]
    );
    assert_eq!((h.reuse.kept_entries, h.reuse.first_difference), (9, None));
}

#[test]
fn the_budget_shrinking_below_the_prefix() {
    let p = reflexive(Options::default());
    let items = base();
    let t1 = first_turn(&p, &items, &budget(100));
    let small = budget(50);
    // Allowed to give up anything: Hold keeps the longest prefix that fits (40 tokens
    // besides the pinned 10), and nothing else fits.
    let mut o = options(PrefixMode::Hold, Some(&t1.state));
    o.max_value_loss = 1.0;
    let h = run(&p, &items, &small, &o);
    assert_eq!(h.reuse.outcome, TurnOutcome::Held);
    assert_eq!(contents(&items, &h), ["sys", "m1", "m2", "m3", "m4"]);
    let d = h.reuse.first_difference.expect("a difference");
    assert_eq!((d.index, d.reason), (5, DifferenceReason::Budget));
    // A fresh selection takes m5..m8 (2.6) where the prefix keeps m1..m4 (1.0): with the
    // default 5 % the turn re-anchors. No target below 50 keeps 95 % of 2.6, so the anchor
    // is the fresh selection itself.
    let h = run(
        &p,
        &items,
        &small,
        &options(PrefixMode::Hold, Some(&t1.state)),
    );
    assert_eq!(h.reuse.outcome, TurnOutcome::Reanchored);
    assert_eq!(contents(&items, &h), ["sys", "m5", "m6", "m7", "m8"]);
    assert_eq!((h.reuse.anchor_target, h.state.anchor_target()), (50, 50));
    assert_eq!(h.reuse.value_given_up, 0.0);
    let d = h.reuse.first_difference.expect("a difference");
    assert_eq!((d.index, d.reason), (1, DifferenceReason::Budget));
}

#[test]
fn a_state_of_another_item_list_is_refused() {
    let p = reflexive(Options::default());
    let b = budget(100);
    let a = base();
    let t1 = first_turn(&p, &a, &b);
    // Another conversation: the same pinned system prompt, other messages.
    let mut other = vec![a[0].clone()];
    other.extend((1..=5).map(|i| message(&format!("x{i}"), 0.5, i)));
    for mode in [PrefixMode::Measure, PrefixMode::Hold] {
        let err = p
            .run_prefix(
                &other,
                &b,
                &RunOptions::default(),
                &options(mode, Some(&t1.state)),
            )
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidState);
        assert!(err.to_string().contains("another conversation"), "{err}");
    }
    // With conversation keys the check is exact, both ways.
    let mut keyed = options(PrefixMode::Hold, None);
    keyed.conversation = Some(b"conversation A");
    let ka = run(&p, &a, &b, &keyed);
    let mut wrong = options(PrefixMode::Hold, Some(&ka.state));
    wrong.conversation = Some(b"conversation B");
    let no_key = options(PrefixMode::Hold, Some(&ka.state));
    let mut key_without = options(PrefixMode::Hold, Some(&t1.state));
    key_without.conversation = Some(b"conversation A");
    for o in [wrong, no_key, key_without] {
        let err = p
            .run_prefix(&a, &b, &RunOptions::default(), &o)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidState, "{err}");
    }
    // The right key is accepted even when nothing of the list survived (no heuristic).
    let mut right = options(PrefixMode::Hold, Some(&ka.state));
    right.conversation = Some(b"conversation A");
    let r = run(&p, &other, &b, &right);
    assert_eq!(r.reuse.kept_entries, 1); // the pinned system prompt
    assert_eq!(r.state.conversation(), Some(hash_bytes(b"conversation A")));
}

#[test]
fn truncated_and_bit_flipped_states_are_refused() {
    let p = reflexive(Options::default());
    let t1 = first_turn(&p, &base(), &budget(100));
    let bytes = t1.state.to_bytes();
    assert_eq!(PrefixState::read(&bytes).unwrap(), t1.state);
    for len in 0..bytes.len() {
        let err = PrefixState::read(&bytes[..len]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidState, "length {len}");
    }
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1 << bit;
            let err = PrefixState::read(&flipped).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidState, "byte {at} bit {bit}");
        }
    }
    let json = t1.state.to_json();
    assert_eq!(PrefixState::read(json.as_bytes()).unwrap(), t1.state);
    for len in 0..json.len() {
        assert!(
            PrefixState::read(&json.as_bytes()[..len]).is_err(),
            "length {len}"
        );
    }
    // Any digit of the JSON changed is caught (by the checksum, or by the syntax).
    for (at, ch) in json.char_indices().filter(|(_, c)| c.is_ascii_hexdigit()) {
        let other = if ch == '1' { '2' } else { '1' };
        let mut edited = json.clone();
        edited.replace_range(at..at + 1, &other.to_string());
        assert!(
            PrefixState::read(edited.as_bytes()).is_err(),
            "digit at {at}"
        );
    }
}

#[test]
fn cuts_fall_only_between_groups() {
    // sys, u1, a call with its result (10 + 10 tokens), u2.
    let p = reflexive(Options::default());
    let mk = |c: &str, s: f64, at: i64, g: Option<&str>| {
        let b = item(c, 10, s).timestamp(at);
        match g {
            Some(g) => b.group(g).build().unwrap(),
            None => b.build().unwrap(),
        }
    };
    let items = vec![
        item("sys", 10, 0.0).pinned(true).build().unwrap(),
        mk("u1", 0.1, 1, None),
        mk("call", 0.2, 2, Some("c1")),
        mk("result", 0.3, 3, Some("c1")),
        mk("u2", 0.4, 4, None),
    ];
    let t1 = first_turn(&p, &items, &budget(50));
    // 25 tokens besides the pinned: u1 and the call would fit, the call's result not.
    let mut o = options(PrefixMode::Hold, Some(&t1.state));
    o.max_value_loss = 1.0;
    let h = run(&p, &items, &budget(35), &o);
    assert_eq!(h.reuse.outcome, TurnOutcome::Held);
    let window = contents(&items, &h);
    assert!(window.starts_with(&["sys", "u1"]), "{window:?}");
    assert!(
        !window.contains(&"call") && !window.contains(&"result"),
        "{window:?}"
    );
    check_whole_and_adjacent(&items, &h.selection.indices).unwrap();

    // The group gains a member that does not fit: the call is dropped with it, and the
    // report says the group changed.
    let mut grown = items.clone();
    grown.push(
        ContextItem::builder("result 2", 500)
            .future_relevance_hint(0.9)
            .timestamp(5)
            .group("c1")
            .build()
            .unwrap(),
    );
    let m = run(
        &p,
        &grown,
        &budget(50),
        &options(PrefixMode::Measure, Some(&t1.state)),
    );
    assert_eq!(contents(&grown, &m), ["sys", "u1", "u2"]);
    let d = m.reuse.first_difference.expect("a difference");
    assert_eq!((d.index, d.reason), (2, DifferenceReason::GroupChanged));
}

#[test]
fn input_order_appends_only_after_the_prefix() {
    // The host sends input order (a chat request). Turn 1 cannot afford m1; turn 2 could,
    // but m1 comes before the prefix, so only the new m9 is appended.
    let p = reflexive(Options::default());
    let mut items = base();
    items[1] = message("m1", 0.05, 1);
    let b1 = budget(80);
    let mut o = options(PrefixMode::Hold, None);
    o.order = PrefixOrder::Input;
    o.low_watermark = 1.0;
    let t1 = run(&p, &items, &b1, &o);
    assert!(!contents(&items, &t1).contains(&"m1"));
    items.push(message("m9", 0.9, 9));
    let mut o = options(PrefixMode::Hold, Some(&t1.state));
    o.order = PrefixOrder::Input;
    let t2 = run(&p, &items, &budget(110), &o);
    assert_eq!(t2.reuse.outcome, TurnOutcome::Held);
    let mut window = t2.selection.indices.clone();
    window.sort_unstable();
    assert_eq!(window, [0, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(
        (t2.reuse.kept_entries, t2.reuse.first_difference),
        (8, None)
    );
    // m1 is worth 0.05 of the 4.45 a fresh selection has: within the default 5 %.
    assert!(t2.reuse.value_share_given_up() <= 0.05);
}

#[test]
fn u_shaped_placement_under_hold() {
    // The previous window keeps its U shape; what is appended is placed U-shaped on its own.
    let p = pipeline(
        Arc::new(GreedySlice::new()),
        Arc::new(UShapedPlacer::new()),
        Options::default(),
    );
    let b = budget(200);
    let mut items = base();
    let t1 = first_turn(&p, &items, &b);
    for i in 9..=12 {
        items.push(message(&format!("m{i}"), i as f64 / 13.0, i));
    }
    let t2 = run(&p, &items, &b, &options(PrefixMode::Hold, Some(&t1.state)));
    let n = t1.selection.indices.len();
    assert!(t2.selection.indices.starts_with(&t1.selection.indices));
    let tail: Vec<usize> = t2.selection.indices[n..].to_vec();
    let scored: Vec<ScoredItem<'_>> = tail
        .iter()
        .zip(&t2.selection.scores[n..])
        .map(|(&i, &score)| ScoredItem {
            item: &items[i],
            score,
        })
        .collect();
    let order = UShapedPlacer::new().place(&scored).unwrap();
    let by_placer: Vec<usize> = order.iter().map(|&k| tail[k]).collect();
    // The appended items are the new ones, in the placer's own order.
    let mut appended = tail.clone();
    appended.sort_unstable();
    assert_eq!(appended, [9, 10, 11, 12]);
    assert_eq!(
        t2.selection.indices[n..],
        by_placer[..],
        "appended {tail:?}, placer {by_placer:?}"
    );
}

#[test]
fn overflow_strategies_apply_to_the_held_window() {
    // A pinned item of 100 tokens arrives with a target of 100 (under a 200 maximum):
    // nothing but the pinned items can stay, whatever was held, and each strategy treats
    // the overflow as a plain run does.
    let items = base();
    let mut more = items.clone();
    more.push(item("big pin", 100, 0.0).pinned(true).build().unwrap());
    let b = ContextBudget::new(200, 100).unwrap();
    for strategy in [
        OverflowStrategy::Throw,
        OverflowStrategy::Truncate,
        OverflowStrategy::Proceed,
    ] {
        let p = reflexive(Options {
            overflow: strategy,
            ..Options::default()
        });
        let t1 = first_turn(&p, &items, &budget(100));
        let mut o = options(PrefixMode::Hold, Some(&t1.state));
        o.max_value_loss = 1.0;
        let plain = p.run(&more, &b);
        let held = p.run_prefix(&more, &b, &RunOptions::default(), &o);
        match (plain, held) {
            (Err(a), Err(h)) => {
                assert_eq!(strategy, OverflowStrategy::Throw);
                assert_eq!(
                    (a.code(), h.code()),
                    (ErrorCode::Overflow, ErrorCode::Overflow)
                );
            }
            (Ok(a), Ok(h)) => {
                let mut got = h.selection.indices.clone();
                got.sort_unstable();
                assert_eq!(got, [0, 9], "{strategy:?}");
                assert_eq!(h.selection.overflow, a.overflow, "{strategy:?}");
                assert_eq!(h.reuse.kept_entries, 1, "{strategy:?}");
            }
            (a, h) => panic!("{strategy:?}: plain {:?}, held {:?}", a.is_ok(), h.is_ok()),
        }
    }
}

#[test]
fn caller_identities_replace_the_content_hash() {
    let p = reflexive(Options::default());
    let b = budget(100);
    let items = base();
    let ids: Vec<u64> = (0..items.len() as u64).collect();
    let mut o = options(PrefixMode::Measure, None);
    o.identities = Some(&ids);
    let t1 = run(&p, &items, &b, &o);
    assert_eq!(t1.state.entries()[3].hash, 3);
    // Same contents, but the host sends something else for item 3 now.
    let mut ids2 = ids.clone();
    ids2[3] = 99;
    let mut o = options(PrefixMode::Measure, Some(&t1.state));
    o.identities = Some(&ids2);
    let t2 = run(&p, &items, &b, &o);
    let d = t2.reuse.first_difference.expect("a difference");
    assert_eq!((d.index, d.reason), (3, DifferenceReason::Edited));
    let short = [1u64, 2];
    let mut o = options(PrefixMode::Measure, None);
    o.identities = Some(&short);
    assert_eq!(
        p.run_prefix(&items, &b, &RunOptions::default(), &o)
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn bad_options_are_invalid_arguments() {
    let p = reflexive(Options::default());
    let items = base();
    let b = budget(100);
    let mut cases = Vec::new();
    for share in [f64::NAN, -0.1, 1.5] {
        let mut o = options(PrefixMode::Hold, None);
        o.max_value_loss = share;
        cases.push(o);
    }
    for w in [0.0, -1.0, 1.01, f64::INFINITY] {
        let mut o = options(PrefixMode::Hold, None);
        o.low_watermark = w;
        cases.push(o);
    }
    let mut o = options(PrefixMode::Hold, None);
    o.cache = CacheRule::Blocks { size: 0 };
    cases.push(o);
    for o in cases {
        let err = p
            .run_prefix(&items, &b, &RunOptions::default(), &o)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{o:?}");
    }
}

#[test]
fn the_reuse_report_and_its_json_form() {
    let p = reflexive(Options::default());
    let b = ContextBudget::new(4000, 4000).unwrap();
    let items: Vec<ContextItem> = (0..30)
        .map(|i| {
            ContextItem::builder(format!("turn {i}"), 100)
                .future_relevance_hint(0.5)
                .timestamp(i)
                .build()
                .unwrap()
        })
        .collect();
    let mut o = options(PrefixMode::Hold, None);
    o.cache = CacheRule::OpenAi;
    let t1 = run(&p, &items, &b, &o);
    let mut edited = items.clone();
    edited[20] = ContextItem::builder("turn 20 (edited)", 100)
        .future_relevance_hint(0.5)
        .timestamp(20)
        .build()
        .unwrap();
    let mut o = options(PrefixMode::Measure, Some(&t1.state));
    o.cache = CacheRule::OpenAi;
    let t2 = run(&p, &edited, &b, &o);
    let r = &t2.reuse;
    assert_eq!(r.kept_tokens, 2000);
    assert_eq!(r.cached_tokens, 1024 + (2000 - 1024) / 128 * 128);
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["mode"], "measure");
    assert_eq!(json["outcome"], "measured");
    assert_eq!(json["turn"], 2);
    assert_eq!(json["kept_entries"], 20);
    assert_eq!(json["kept_tokens"], 2000);
    assert_eq!(json["cached_tokens"], r.cached_tokens);
    assert_eq!(json["cache_rule"], "openai");
    assert_eq!(json["first_difference"]["index"], 20);
    assert_eq!(json["first_difference"]["reason"], "edited");
    assert_eq!(json["first_difference"]["item"], 20);
    assert_eq!(json["value_given_up"], 0.0);
    assert_eq!(json["fresh_value"], r.fresh_value);
    assert_eq!(json.as_object().unwrap().len(), 17);
}

#[test]
fn traced_hold_runs_explain_what_the_tail_left_out() {
    let p = reflexive(Options::default());
    let b = budget(100);
    let mut items = base();
    let t1 = first_turn(&p, &items, &b);
    items.push(message("m9", 0.9, 9));
    items.push(message("m10", 0.05, 10));
    let traced = RunOptions {
        trace: TraceDetail::Item,
        on_overflow: None,
    };
    let mut o = options(PrefixMode::Hold, Some(&t1.state));
    o.max_value_loss = 1.0;
    let t = p.run_prefix(&items, &budget(110), &traced, &o).unwrap();
    let u = p
        .run_prefix(&items, &budget(110), &RunOptions::default(), &o)
        .unwrap();
    assert_eq!(t.selection.indices, u.selection.indices);
    assert_eq!(t.reuse, u.reuse);
    let report = t.selection.report.expect("report");
    assert_eq!(report.included.len(), t.selection.indices.len());
    // Every input item is included or excluded exactly once.
    let mut seen = vec![0; items.len()];
    for i in report
        .included
        .iter()
        .map(|e| e.index)
        .chain(report.excluded.iter().map(|e| e.index))
    {
        seen[i] += 1;
    }
    assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
}

// ---------------------------------------------------------------------------------------
// Measure is the specification's selection

#[test]
fn measure_selects_exactly_as_a_plain_run() {
    let mut rng = Rng::new(0x005e_ed18);
    let traced = RunOptions {
        trace: TraceDetail::Item,
        on_overflow: None,
    };
    for preset in Preset::ALL {
        for pinned_first in [false, true] {
            let mut policy: Policy = preset.policy();
            policy.pinned_first = pinned_first;
            let p = policy.build_pipeline().unwrap();
            let mut state: Option<PrefixState> = None;
            for case in 0..40 {
                let n = 1 + rng.below(60);
                let items = random_items(&mut rng, n);
                let b = budget(rng.range(0, 4000));
                // A conversation key: the cases are unrelated lists, which the check for a
                // foreign state would refuse without one.
                let mut o = options(PrefixMode::Measure, state.as_ref());
                o.conversation = Some(b"measure");
                let what = format!("{preset:?} {pinned_first} case {case}");
                let plain = p.run_with(&items, &b, &traced);
                let measured = p.run_prefix(&items, &b, &traced, &o);
                match (plain, measured) {
                    (Ok(a), Ok(m)) => {
                        let s = &m.selection;
                        assert_eq!(
                            (&a.indices, &a.scores, &a.reasons),
                            (&s.indices, &s.scores, &s.reasons),
                            "{what}"
                        );
                        assert_eq!(a.overflow, s.overflow, "{what}");
                        let (ra, rm) = (a.report.unwrap(), s.report.clone().unwrap());
                        assert_eq!(ra.included, rm.included, "{what}");
                        assert_eq!(ra.excluded, rm.excluded, "{what}");
                        assert_eq!(ra.groups, rm.groups, "{what}");
                        assert_eq!(m.reuse.value_given_up, 0.0, "{what}");
                        state = Some(m.state);
                    }
                    (Err(a), Err(m)) => assert_eq!(a.code(), m.code(), "{what}"),
                    (a, m) => panic!("{what}: plain ok {}, measure ok {}", a.is_ok(), m.is_ok()),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Seeded multi-turn runs: the invariants of Hold

/// Random items: kinds, tokens, timestamps, hints, priorities, some pinned, some groups,
/// some repeated contents.
fn random_items(rng: &mut Rng, n: usize) -> Vec<ContextItem> {
    let kinds = ["Message", "ToolOutput", "Document", "Memory"];
    (0..n)
        .map(|i| {
            let content = if rng.chance(0.1) {
                format!("shared {}", rng.below(3))
            } else {
                format!("item {i} {}", rng.below(1000))
            };
            let mut b = ContextItem::builder(content, rng.range(0, 300))
                .kind(ctxpack::ContextKind::new(kinds[rng.below(4)]).unwrap())
                .future_relevance_hint(rng.unit())
                .priority(rng.range(0, 5))
                .timestamp(i as i64)
                .pinned(rng.chance(0.04));
            if rng.chance(0.3) {
                b = b.group(format!("g{}", i / 3));
            }
            b.build().unwrap()
        })
        .collect()
}

/// Appends, edits, removes: what a host's item list goes through between turns.
fn evolve(rng: &mut Rng, items: &mut Vec<ContextItem>, turn: usize) {
    for k in 0..rng.below(6) {
        let at = items.len() as i64 + 1000 * turn as i64;
        let mut b = ContextItem::builder(format!("new {turn}.{k}"), rng.range(1, 300))
            .future_relevance_hint(rng.unit())
            .timestamp(at);
        if rng.chance(0.3) {
            b = b.group(format!("n{turn}"));
        }
        items.push(b.build().unwrap());
    }
    if rng.chance(0.15) && items.len() > 3 {
        let at = rng.below(items.len());
        items.remove(at);
    }
    if rng.chance(0.15) && !items.is_empty() {
        let at = rng.below(items.len());
        let old = &items[at];
        let mut b = ContextItem::builder(format!("{} (edited)", old.content()), old.tokens())
            .future_relevance_hint(rng.unit());
        if let Some(g) = old.group() {
            b = b.group(g);
        }
        if let Some(t) = old.timestamp() {
            b = b.timestamp(t);
        }
        items[at] = b.build().unwrap();
    }
}

/// The number of leading entries two states share.
fn common_prefix(a: &PrefixState, b: &PrefixState) -> usize {
    let key = |e: &ctxpack::prefix::StateEntry| (e.hash, e.group, e.tokens);
    a.entries()
        .iter()
        .zip(b.entries())
        .take_while(|(x, y)| key(x) == key(y))
        .count()
}

#[test]
fn hold_invariants_over_seeded_sessions() {
    let cases: usize = std::env::var("CTXPACK_PREFIX_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut rng = Rng::new(0x0018_0018);
    let mut pipelines: Vec<(String, Pipeline)> = Preset::ALL
        .iter()
        .map(|p| {
            let mut policy = p.policy();
            policy.pinned_first = true;
            policy.overflow_strategy = OverflowStrategy::Truncate;
            (format!("{p:?}"), policy.build_pipeline().unwrap())
        })
        .collect();
    pipelines.push((
        "knapsack u-shaped".into(),
        pipeline(
            Arc::new(KnapsackSlice::new(25).unwrap()),
            Arc::new(UShapedPlacer::new()),
            Options::default(),
        ),
    ));
    let mut turns = 0;
    let mut outcomes = [0usize; 3];
    for case in 0..cases {
        let (name, p) = &pipelines[case % pipelines.len()];
        let order = if rng.chance(0.5) {
            PrefixOrder::Placed
        } else {
            PrefixOrder::Input
        };
        let share = *rng.pick(&[0.0, 0.05, 0.2]);
        let watermark = *rng.pick(&[0.5, 0.8, 1.0]);
        let n = 10 + rng.below(30);
        let mut items = random_items(&mut rng, n);
        let mut state: Option<PrefixState> = None;
        let mut target = rng.range(300, 3000);
        for turn in 0..12 {
            if rng.chance(0.1) {
                target = rng.range(100, 3000);
            }
            let b = ContextBudget::new(target + 500, target).unwrap();
            let mut o = options(PrefixMode::Hold, state.as_ref());
            o.conversation = Some(b"session");
            o.order = order;
            o.max_value_loss = share;
            o.low_watermark = watermark;
            let what =
                format!("{name} case {case} turn {turn} {order:?} share {share} w {watermark}");
            let Ok(r) = p.run_prefix(&items, &b, &RunOptions::default(), &o) else {
                // The plain run fails the same way (pinned items over the budget).
                assert!(p.run(&items, &b).is_err(), "{what}");
                state = None;
                evolve(&mut rng, &mut items, turn);
                continue;
            };
            turns += 1;
            let reuse = &r.reuse;
            // Value: never more given up than allowed.
            assert!(
                reuse.value_given_up <= share * reuse.fresh_value.abs() + 1e-9,
                "{what}: {reuse:?}"
            );
            match reuse.outcome {
                TurnOutcome::Held => outcomes[0] += 1,
                TurnOutcome::Reanchored | TurnOutcome::Anchored => {
                    outcomes[1] += 1;
                    let floor = (target as f64 * watermark).ceil() as i64;
                    assert!(reuse.anchor_target >= floor.min(target), "{what}");
                    assert!(reuse.anchor_target <= target, "{what}");
                }
                TurnOutcome::Measured => unreachable!(),
            }
            if reuse.kept_entries == reuse.previous_entries && reuse.previous_entries > 0 {
                outcomes[2] += 1;
            }
            // The window: distinct input positions, groups whole (and adjacent when placed).
            let mut seen = r.selection.indices.clone();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), r.selection.indices.len(), "{what}");
            if order == PrefixOrder::Placed {
                check_whole_and_adjacent(&items, &r.selection.indices)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            // The report agrees with the states, and the state reads back.
            if let Some(prev) = &state {
                assert_eq!(common_prefix(prev, &r.state), reuse.kept_entries, "{what}");
            }
            assert_eq!(reuse.window_entries, r.selection.indices.len(), "{what}");
            assert_eq!(
                PrefixState::from_bytes(&r.state.to_bytes()).unwrap(),
                r.state
            );
            assert_eq!(PrefixState::from_json(&r.state.to_json()).unwrap(), r.state);
            state = Some(r.state);
            evolve(&mut rng, &mut items, turn);
        }
    }
    eprintln!(
        "{turns} turns: {} held, {} anchored, {} kept the whole previous window",
        outcomes[0], outcomes[1], outcomes[2]
    );
    assert!(outcomes[0] > turns / 3 && outcomes[1] > 0, "{outcomes:?}");
}

// ---------------------------------------------------------------------------------------
// The state format, read by a decoder written from docs/prefix-cache.md

/// CRC-32C, bit by bit, from its definition (reflected polynomial 0x82F63B78).
fn crc32c_bitwise(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let lsb = crc & 1;
            crc >>= 1;
            if lsb == 1 {
                crc ^= 0x82F6_3B78;
            }
        }
    }
    crc ^ 0xFFFF_FFFF
}

/// The content hash as the documentation describes it.
fn documented_hash(bytes: &[u8]) -> u64 {
    const K: [u64; 4] = [
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
        0x1656_67b1_9e37_79f9,
        0x85eb_ca77_c2b2_ae63,
    ];
    let mut lanes = K;
    let mut padded = bytes.to_vec();
    while padded.len() % 32 != 0 {
        padded.push(0);
    }
    for block in padded.chunks(32) {
        for i in 0..4 {
            let word = u64::from_le_bytes(block[8 * i..8 * i + 8].try_into().unwrap());
            lanes[i] = (lanes[i] ^ word).wrapping_mul(K[i]).rotate_left(31);
        }
    }
    let mut x = (bytes.len() as u64).wrapping_mul(K[0])
        ^ lanes[0].rotate_left(1)
        ^ lanes[1].rotate_left(17)
        ^ lanes[2].rotate_left(33)
        ^ lanes[3].rotate_left(49);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

#[test]
fn the_content_hash_is_the_documented_one() {
    let mut rng = Rng::new(7);
    for len in 0..200 {
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        assert_eq!(hash_bytes(&bytes), documented_hash(&bytes), "length {len}");
    }
}

#[test]
fn the_byte_layout_is_the_documented_one() {
    let p = reflexive(Options::default());
    let mut items = base();
    items[4] = item("m4", 10, 0.4).timestamp(4).group("g").build().unwrap();
    let mut o = options(PrefixMode::Hold, None);
    o.conversation = Some(b"chat-42");
    o.low_watermark = 1.0;
    let t1 = run(&p, &items, &budget(100), &o);
    let bytes = t1.state.to_bytes();
    // Decode by hand: header, entries, checksum (all little-endian).
    let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap());
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert_eq!(&bytes[..4], b"CXPS");
    assert_eq!(u16_at(4), 1);
    assert_eq!(u16_at(6), 1); // the conversation flag
    assert_eq!(u64_at(8), documented_hash(b"chat-42"));
    assert_eq!((u64_at(16), u64_at(24), u64_at(32)), (1, 1, 100));
    let n = u32_at(40) as usize;
    assert_eq!(n, 9);
    assert_eq!(bytes.len(), 44 + 29 * n + 4);
    for (k, &index) in t1.selection.indices.iter().enumerate() {
        let at = 44 + 29 * k;
        let it = &items[index];
        assert_eq!(
            u64_at(at),
            documented_hash(it.content().as_bytes()),
            "entry {k}"
        );
        let grouped = it.group().is_some();
        let group = it.group().map_or(0, |g| documented_hash(g.as_bytes()));
        assert_eq!(u64_at(at + 8), group, "entry {k}");
        assert_eq!(u64_at(at + 16) as i64, it.tokens(), "entry {k}");
        assert_eq!(u32_at(at + 24) as usize, index, "entry {k}");
        let flags = u8::from(it.pinned()) | (u8::from(grouped) << 1);
        assert_eq!(bytes[at + 28], flags, "entry {k}");
    }
    let body = bytes.len() - 4;
    assert_eq!(u32_at(body), crc32c_bitwise(&bytes[..body]));
    // The JSON form carries the same checksum.
    let json: serde_json::Value = serde_json::from_str(&t1.state.to_json()).unwrap();
    assert_eq!(json["checksum"], format!("{:08x}", u32_at(body)));
    assert_eq!(
        json["conversation"],
        format!("{:016x}", documented_hash(b"chat-42"))
    );
    assert_eq!(json["entries"].as_array().unwrap().len(), n);
}
