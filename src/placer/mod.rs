//! Placers (spec chapter 05 and the UShapedPlacer seed): the trait and both built-ins.

use std::fmt;

use crate::error::{Error, Result};
use crate::model::{ScoredItem, Units};

mod chronological;
mod u_shaped;

pub use chronological::ChronologicalPlacer;
pub use u_shaped::UShapedPlacer;

pub(crate) use chronological::{chronological_order, chronological_order_with_ties_into};
pub(crate) use u_shaped::{u_shaped_order, u_shaped_order_into};

/// Orders the final selection.
///
/// Contract (spec 05 §1.2): return a permutation of `0..items.len()` (position `k` of the
/// result names the input position placed k-th); deterministic; ties broken by input
/// position. The pipeline checks that the result is a permutation.
///
/// Every placer also has `as_any()` (through a blanket implementation, never written by
/// hand), which lets policy code recognise the built-in placers by downcasting.
pub trait Placer: crate::downcast::AsAny + Send + Sync + fmt::Debug {
    /// Returns the placement order as input positions.
    fn place(&self, items: &[ScoredItem<'_>]) -> Result<Vec<usize>>;

    /// Returns the placement order when the items contain groups (`docs/groups.md`):
    /// `units` partitions the positions into ungrouped items and groups, and every unit's
    /// members must end up next to each other, in input order.
    ///
    /// The built-in placers place each unit as one element (chronological: at its
    /// earliest member timestamp; U-shaped: by its value) and then expand it. The default,
    /// for every other placer, calls [`Placer::place`], checks that it returned a
    /// permutation, and moves each group to where its first member was placed.
    fn place_grouped(&self, items: &[ScoredItem<'_>], units: &Units) -> Result<Vec<usize>> {
        let order = self.place(items)?;
        check_permutation(&order, items.len())?;
        Ok(units.gather(&order))
    }
}

/// Rejects a placer result that is not a permutation of `0..len` (spec 05 rule P1).
pub(crate) fn check_permutation(order: &[usize], len: usize) -> Result<()> {
    if order.len() != len {
        return Err(Error::Callback(format!(
            "placer returned {} positions for {len} items; expected a permutation",
            order.len()
        )));
    }
    let mut seen = vec![false; len];
    for &pos in order {
        match seen.get_mut(pos) {
            Some(slot) if !*slot => *slot = true,
            _ => {
                return Err(Error::Callback(format!(
                    "placer result is not a permutation of 0..{len} (position {pos})"
                )))
            }
        }
    }
    Ok(())
}
