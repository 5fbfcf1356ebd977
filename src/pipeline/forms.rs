//! The forms of one run (`docs/variants.md`): each candidate's kept forms, the form and
//! level chosen for each input position, and why a form below the full one was chosen.
//! Built only when some candidate has variants (and the pipeline uses them); every stage
//! then reads a position's tokens through [`RunForms::tokens`].

use crate::diagnostics::DowngradeCause;
use crate::error::{Error, Result};
use crate::model::{
    kept_forms_with, ContextItem, GroupValue, LevelSource, PruneScratch, PrunedForm, Units,
};

/// The forms of a run, indexed by input position.
pub(super) struct RunForms {
    /// Kept forms of input position `i`: `kept[starts[i]..starts[i + 1]]`; `[0]` for
    /// every position that is not a scoreable candidate with variants.
    starts: Vec<u32>,
    kept: Vec<u32>,
    /// The tokens and quality of each kept form (parallel to `kept`), read once while
    /// pruning so that later stages do not go back to the variants.
    kept_tokens: Vec<i64>,
    kept_quality: Vec<f64>,
    /// The form chosen for each position (0 until a slicer chooses).
    chosen: Vec<u32>,
    /// The level of each position's unit (0 until a slicer chooses).
    level: Vec<u32>,
    /// Why each position placed below its full form is there (`None` when it is not).
    cause: Vec<Option<DowngradeCause>>,
    /// The tokens left unused at Slice and after Truncate: one value per stage and run.
    slice_available: i64,
    place_available: i64,
    /// The forms pruned before slicing, in input order and form order.
    pruned: Vec<PrunedForm>,
}

impl RunForms {
    /// The forms of a run over `items` whose scoreable candidates are `scoreable` (input
    /// positions, ascending); `None` when none of them has variants.
    pub(super) fn new(items: &[ContextItem], scoreable: &[usize]) -> Result<Option<RunForms>> {
        if !scoreable.iter().any(|&i| items[i].has_variants()) {
            return Ok(None);
        }
        let n = items.len();
        let mut forms = RunForms {
            starts: Vec::with_capacity(n + 1),
            kept: Vec::with_capacity(n),
            kept_tokens: Vec::with_capacity(n),
            kept_quality: Vec::with_capacity(n),
            chosen: vec![0; n],
            level: vec![0; n],
            cause: vec![None; n],
            slice_available: 0,
            place_available: 0,
            pruned: Vec::new(),
        };
        let mut scratch = PruneScratch::default();
        forms.starts.push(0);
        let mut candidates = scoreable.iter().peekable();
        for (index, item) in items.iter().enumerate() {
            let candidate = candidates.next_if_eq(&&index).is_some();
            if candidate && item.has_variants() {
                let pruned = &mut forms.pruned;
                kept_forms_with(item, &mut forms.kept, &mut scratch, |form, dominated_by| {
                    pruned.push(PrunedForm {
                        index,
                        form,
                        dominated_by,
                    })
                });
            } else {
                forms.kept.push(0);
            }
            let start = forms.kept_tokens.len();
            for &f in &forms.kept[start..] {
                forms.kept_tokens.push(item.form_tokens(f as usize));
                forms.kept_quality.push(item.form_quality(f as usize));
            }
            let end = u32::try_from(forms.kept.len())
                .ok()
                .filter(|&e| e < u32::MAX)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "variants support at most {} kept forms in one run",
                        u32::MAX - 1
                    ))
                })?;
            forms.starts.push(end);
        }
        Ok(Some(forms))
    }

    /// The kept forms of input position `index`, richest first.
    pub(super) fn kept(&self, index: usize) -> &[u32] {
        &self.kept[self.starts[index] as usize..self.starts[index + 1] as usize]
    }

    /// The form chosen for input position `index`.
    pub(super) fn chosen(&self, index: usize) -> usize {
        self.chosen[index] as usize
    }

    /// The level chosen for input position `index`'s unit.
    pub(super) fn level(&self, index: usize) -> usize {
        self.level[index] as usize
    }

    /// The tokens of the form chosen for input position `index`.
    pub(super) fn tokens(&self, items: &[ContextItem], index: usize) -> i64 {
        items[index].form_tokens(self.chosen(index))
    }

    /// Records that input position `index` uses `form`, its unit being at `level`.
    pub(super) fn choose(&mut self, index: usize, form: usize, level: usize) {
        self.chosen[index] = form as u32;
        self.level[index] = level as u32;
    }

    /// Records the tokens left unused at Slice (`Truncated` false) or after Truncate.
    pub(super) fn set_available(&mut self, truncated: bool, available: i64) {
        match truncated {
            false => self.slice_available = available,
            true => self.place_available = available,
        }
    }

    /// Records why input position `index` is placed below its full form.
    pub(super) fn set_downgrade(&mut self, index: usize, cause: DowngradeCause) {
        self.cause[index] = Some(cause);
    }

    /// Why input position `index` is placed below its full form, if it is, with the tokens
    /// left unused at that stage.
    pub(super) fn downgrade(&self, index: usize) -> Option<(DowngradeCause, i64)> {
        self.cause[index].map(|cause| match cause {
            DowngradeCause::Truncated => (cause, self.place_available),
            _ => (cause, self.slice_available),
        })
    }

    /// The forms pruned before slicing (moved out, for the report).
    pub(super) fn take_pruned(&mut self) -> Vec<PrunedForm> {
        std::mem::take(&mut self.pruned)
    }

    /// Gives `units` — over a list whose position `p` is input position `index(p)` with
    /// score `score(p)` — their levels from the kept forms.
    pub(super) fn set_levels<I, S>(
        &self,
        units: &mut Units,
        index: I,
        score: S,
        mode: GroupValue,
    ) -> Result<()>
    where
        I: Fn(usize) -> usize,
        S: Fn(usize) -> f64,
    {
        let source = ListForms {
            forms: self,
            index,
            score,
        };
        units.set_levels(&source, mode)
    }
}

/// The kept forms of a list whose position `p` is input position `index(p)`.
struct ListForms<'f, I, S> {
    forms: &'f RunForms,
    index: I,
    score: S,
}

impl<I: Fn(usize) -> usize, S: Fn(usize) -> f64> LevelSource for ListForms<'_, I, S> {
    fn kept(&self, p: usize) -> &[u32] {
        self.forms.kept((self.index)(p))
    }
    fn tokens(&self, p: usize, k: usize) -> i64 {
        self.forms.kept_tokens[self.forms.starts[(self.index)(p)] as usize + k]
    }
    fn quality(&self, p: usize, k: usize) -> f64 {
        self.forms.kept_quality[self.forms.starts[(self.index)(p)] as usize + k]
    }
    fn score(&self, p: usize) -> f64 {
        (self.score)(p)
    }
}

/// The cause of a downgrade decided at Slice: the full level needs more than the chosen
/// level plus what is left unused, or it does not.
pub(super) fn slice_cause(full_tokens: i64, chosen_tokens: i64, available: i64) -> DowngradeCause {
    if i128::from(full_tokens) - i128::from(chosen_tokens) > i128::from(available) {
        DowngradeCause::BudgetExceeded
    } else {
        DowngradeCause::SlicerChoice
    }
}
