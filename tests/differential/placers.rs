//! Group 3: both placers, on random scored lists (pinned items at score 1.0, tied scores,
//! tied and missing timestamps), against the crate's placers: identical order.

use ctxpack::ScoredItem;

use crate::both::{both_all, id_of, Both};
use crate::check::same;
use crate::gen::{self, ItemProfile, ItemSpec, PlacerSpec};
use crate::harness::{verify, Case, HasItems};

/// One placer case.
#[derive(Debug, Clone)]
struct PlaceCase {
    placer: PlacerSpec,
    items: Vec<ItemSpec>,
}

impl HasItems for PlaceCase {
    fn items_mut(&mut self) -> &mut Vec<ItemSpec> {
        &mut self.items
    }
}

/// Generates and checks one case.
pub fn case(c: &Case) -> Result<(), String> {
    let mut rng = c.rng();
    let profile = ItemProfile::PLACING.sometimes_large(&mut rng);
    let mut items = gen::items(&mut rng, &profile);
    for item in &mut items {
        item.score = if item.pinned {
            1.0
        } else {
            gen::score(&mut rng)
        };
    }
    verify(
        PlaceCase {
            placer: gen::placer(&mut rng),
            items,
        },
        check,
    )
}

/// Places in both libraries and compares the orders (as input positions).
fn check(spec: &PlaceCase) -> Result<(), String> {
    let (ours, theirs) = spec.placer.both();
    let (our_items, their_items) = both_all(&spec.items);
    let our_scored: Vec<ScoredItem> = our_items
        .iter()
        .zip(&spec.items)
        .map(|(item, s)| ScoredItem {
            item,
            score: s.score,
        })
        .collect();
    let their_scored: Vec<cupel::ScoredItem> = their_items
        .into_iter()
        .zip(&spec.items)
        .map(|(item, s)| cupel::ScoredItem {
            item,
            score: s.score,
        })
        .collect();
    let want: Vec<usize> = theirs.place(&their_scored).iter().map(id_of).collect();
    let got = ours
        .place(&our_scored)
        .map_err(|e| format!("ctxpack placer failed: {e}"))?;
    same("placement order", &want, &got)
}
