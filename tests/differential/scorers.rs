//! Group 1: every scorer, on random item lists, against the crate's scorer of the same
//! configuration. Scores must agree within 1e-9 and order (ties included) exactly.

use ctxpack::ContextItem;

use crate::both::{both_all, Both};
use crate::check;
use crate::gen::{self, ItemProfile, ItemSpec, ScorerSpec};
use crate::harness::{verify, Case, HasItems};

/// One scorer case: a configuration and the list it scores.
#[derive(Debug, Clone)]
struct ScorerCase {
    scorer: ScorerSpec,
    items: Vec<ItemSpec>,
}

impl HasItems for ScorerCase {
    fn items_mut(&mut self) -> &mut Vec<ItemSpec> {
        &mut self.items
    }
}

/// Generates and checks one case.
pub fn case(c: &Case) -> Result<(), String> {
    let mut rng = c.rng();
    let profile = ItemProfile::SCORING.sometimes_large(&mut rng);
    let items = gen::items(&mut rng, &profile);
    let spec = ScorerCase {
        scorer: gen::scorer_for(&mut rng, items.len()),
        items,
    };
    verify(spec, check)
}

/// Scores every item against the whole list in both libraries (the crate per item, with
/// the item borrowed from the list so identity holds; ctxpack in one pass).
fn check(spec: &ScorerCase) -> Result<(), String> {
    let (ours, theirs) = spec.scorer.both();
    let (our_items, their_items) = both_all(&spec.items);
    let want: Vec<f64> = their_items
        .iter()
        .map(|item| theirs.score(item, &their_items))
        .collect();
    let refs: Vec<&ContextItem> = our_items.iter().collect();
    let mut got = vec![f64::NAN; refs.len()];
    ours.score_all(&refs, &mut got)
        .map_err(|e| format!("ctxpack scorer failed: {e}"))?;
    check::scores(&want, &got)
}
