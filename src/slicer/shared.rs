//! Small helpers shared by the decorator slicers (Quota, CountQuota, CCKS).

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::model::ContextKind;
use crate::slicer::SliceOutcome;

/// Score order of the count-quota slicers: descending under `f64::total_cmp`.
pub(crate) fn score_desc(a: f64, b: f64) -> Ordering {
    b.total_cmp(&a)
}

/// Fails with `duplicate entry for kind "<k>"` when two kinds are equal under ASCII case
/// folding; `<k>` is the later spelling.
pub(crate) fn reject_duplicate_kinds<'a>(
    kinds: impl Iterator<Item = &'a ContextKind>,
) -> Result<()> {
    let mut seen = HashMap::new();
    for kind in kinds {
        if seen.insert(kind, ()).is_some() {
            return Err(Error::SlicerConfig(format!(
                "duplicate entry for kind {kind:?}"
            )));
        }
    }
    Ok(())
}

/// Appends an inner outcome whose positions index `view_positions` to `out`, translating
/// them to the outer input's positions.
pub(crate) fn append_mapped(out: &mut SliceOutcome, inner: SliceOutcome, view_positions: &[usize]) {
    out.selected
        .extend(inner.selected.iter().map(|&p| view_positions[p]));
    out.cap_excluded
        .extend(inner.cap_excluded.iter().map(|&p| view_positions[p]));
    out.shortfalls.extend(inner.shortfalls);
}
