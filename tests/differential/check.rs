//! Comparisons shared by the groups. Each returns `Err(description)` on a mismatch.

use std::cmp::Ordering;
use std::fmt::Debug;

/// Score tolerance (the conformance vectors' `score_epsilon`).
pub const EPS: f64 = 1e-9;

/// True when two scores agree within [`EPS`] (or are both NaN).
pub fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= EPS
}

/// Fails with `what: expected …, got …` unless the two values are equal.
pub fn same<T: PartialEq + Debug>(what: &str, want: &T, got: &T) -> Result<(), String> {
    if want == got {
        Ok(())
    } else {
        Err(format!("{what}: expected {want:?}, got {got:?}"))
    }
}

/// Compares two score lists: every score within [`EPS`], and the same ordering under the
/// total order the pipeline sorts by. Walking `want` in its stable descending order,
/// `got` must never increase, and two neighbours must tie in `got` exactly when they tie
/// in `want` (a broken or invented tie changes dedup, sort and placer tie-breaks).
pub fn scores(want: &[f64], got: &[f64]) -> Result<(), String> {
    same("score count", &want.len(), &got.len())?;
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if !close(*w, *g) {
            return Err(format!("score of item {i}: expected {w:?}, got {g:?}"));
        }
    }
    let mut order: Vec<usize> = (0..want.len()).collect();
    order.sort_by(|&a, &b| want[b].total_cmp(&want[a]));
    for pair in order.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let want_tie = want[a].total_cmp(&want[b]) == Ordering::Equal;
        let got_cmp = got[a].total_cmp(&got[b]);
        if want_tie != (got_cmp == Ordering::Equal) || got_cmp == Ordering::Less {
            return Err(format!(
                "score order of items {a} and {b}: expected {:?} vs {:?} ({}), got {:?} vs {:?}",
                want[a],
                want[b],
                if want_tie { "a tie" } else { "descending" },
                got[a],
                got[b]
            ));
        }
    }
    Ok(())
}
