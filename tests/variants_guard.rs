//! A million forms against the knapsack's memory guard (`docs/variants.md`, decision D11):
//! the guard counts the bits of a level number per cell and refuses before the slicer
//! allocates anything — checked with a counting allocator on the calling thread.

use std::sync::Arc;

use ctxpack::model::{GroupValue, Units};
use ctxpack::placer::ChronologicalPlacer;
use ctxpack::scorer::ReflexiveScorer;
use ctxpack::slicer::{KnapsackSlice, Slicer, DEFAULT_TABLE_LIMIT_BYTES};
use ctxpack::{ContextBudget, ContextItem, Error, Pipeline, ScoredItem};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// `n` items with `forms` forms each, none dominated (tokens and quality both fall).
fn items(n: usize, forms: usize) -> Vec<ContextItem> {
    (0..n)
        .map(|i| {
            let mut b = ContextItem::builder(format!("item {i}"), 100 * forms as i64)
                .future_relevance_hint(0.5);
            for f in 1..forms {
                let quality = 1.0 - f as f64 / forms as f64;
                b = b.variant(format!("{i}/{f}"), 100 * (forms - f) as i64, quality);
            }
            b.build().unwrap()
        })
        .collect()
}

fn scored(items: &[ContextItem]) -> Vec<ScoredItem<'_>> {
    items
        .iter()
        .map(|item| ScoredItem { item, score: 0.5 })
        .collect()
}

/// The guard's bytes for `rows` rows of `bits` bits per cell at capacity `cap`.
fn bytes(rows: u64, bits: u64, cap: u64) -> u64 {
    (rows * bits * (cap + 1)).div_ceil(64) * 8 + 8 * (cap + 1)
}

#[test]
fn a_million_forms_hit_the_guard_before_any_allocation() {
    // 200 000 items × 5 forms: every unit has 5 levels, a cell holds 0..=5 in 3 bits.
    let items = items(200_000, 5);
    let scored = scored(&items);
    let units = Units::new(&scored, GroupValue::Sum).unwrap();
    let forms: usize = (0..units.len()).map(|u| units.level_count(u)).sum();
    assert_eq!(forms, 1_000_000);
    let slicer = KnapsackSlice::new(1).unwrap();
    let budget = ContextBudget::new(20_000, 20_000).unwrap();
    let (result, count) = allocations(|| slicer.slice_grouped(&scored, &units, &budget));
    let want = Error::TableTooLarge {
        candidates: 200_000,
        capacity: 20_000,
        cells: 200_000 * 20_001,
        bytes: bytes(200_000, 3, 20_000),
        limit: DEFAULT_TABLE_LIMIT_BYTES,
    };
    assert_eq!(result.unwrap_err(), want);
    assert_eq!(count, 0, "the slicer allocated before refusing");
    // The same items without variants need a third of the table: 1 bit a cell.
    let plain: Vec<ContextItem> = items
        .iter()
        .map(|i| ContextItem::new(i.content(), i.tokens()).unwrap())
        .collect();
    let err = slicer.slice(&self::scored(&plain), &budget).unwrap_err();
    assert!(
        matches!(err, Error::TableTooLarge { bytes, .. } if bytes == self::bytes(200_000, 1, 20_000))
    );
    // Through the whole pipeline, the same error.
    let pipeline = Pipeline::builder()
        .scorer(Arc::new(ReflexiveScorer::new()))
        .slicer(Arc::new(slicer))
        .placer(Arc::new(ChronologicalPlacer::new()))
        .build()
        .unwrap();
    assert_eq!(pipeline.run(&items, &budget).unwrap_err(), want);
}

#[test]
fn one_item_with_a_million_forms_hits_the_guard_before_any_allocation() {
    // One unit with 1 000 000 levels: a cell takes 20 bits; at capacity 200 000 000 that is
    // 500 MB, over the 256 MiB default.
    let items = items(1, 1_000_000);
    let scored = scored(&items);
    let units = Units::new(&scored, GroupValue::Sum).unwrap();
    assert_eq!(units.level_count(0), 1_000_000);
    let slicer = KnapsackSlice::new(1).unwrap();
    let budget = ContextBudget::new(200_000_000, 200_000_000).unwrap();
    let (result, count) = allocations(|| slicer.slice_grouped(&scored, &units, &budget));
    assert_eq!(
        result.unwrap_err(),
        Error::TableTooLarge {
            candidates: 1,
            capacity: 200_000_000,
            cells: 200_000_001,
            bytes: bytes(1, 20, 200_000_000),
            limit: DEFAULT_TABLE_LIMIT_BYTES,
        }
    );
    assert_eq!(count, 0);
    // Within the guard the same item is solved: a form that fits 25 000 tokens and is
    // worth something (score 0.5 × quality × 10 000 >= 1: quality >= 0.0002, the forms
    // of at least 20 000 tokens).
    let budget = ContextBudget::new(25_000, 25_000).unwrap();
    let out = slicer.slice_grouped(&scored, &units, &budget).unwrap();
    assert_eq!(out.selected, [0]);
    let tokens = items[0].form_tokens(out.forms[0]);
    assert!((20_000..=25_000).contains(&tokens), "{tokens}");
}

#[test]
fn without_a_limit_an_impossible_choice_table_is_an_error_not_an_abort() {
    // Two items of 6 × 10^11 tokens with a variant each, a budget of 10^12 in buckets of 1:
    // the DP row alone would need 8 TB. Without a limit the guard lets it through, and the
    // allocation fails with OutOfMemory instead of aborting.
    let items: Vec<ContextItem> = (0..2)
        .map(|i| {
            ContextItem::builder(format!("item {i}"), 600_000_000_000)
                .future_relevance_hint(0.5)
                .variant(format!("summary {i}"), 500_000_000_000, 0.5)
                .build()
                .unwrap()
        })
        .collect();
    let scored = scored(&items);
    let units = Units::new(&scored, GroupValue::Sum).unwrap();
    let slicer = KnapsackSlice::with_table_limit(1, u64::MAX).unwrap();
    let budget = ContextBudget::new(1_000_000_000_000, 1_000_000_000_000).unwrap();
    let err = slicer.slice_grouped(&scored, &units, &budget).unwrap_err();
    assert_eq!(err.code(), ctxpack::ErrorCode::OutOfMemory);
    assert_eq!(
        err.to_string(),
        "out of memory: the knapsack DP row needs 8000000000008 bytes"
    );
}
