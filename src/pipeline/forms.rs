//! The forms of one run (`docs/variants.md`): each candidate's kept forms, the form and
//! level chosen for each input position, and why a form below the full one was chosen.
//! Built only when some candidate has variants (and the pipeline uses them); every stage
//! then reads a position's tokens through [`RunForms::tokens`].

use crate::diagnostics::DowngradeCause;
use crate::error::{Error, Result};
use crate::model::{kept_forms, ContextItem, GroupValue, LevelInputs, PrunedForm, Units};

/// The forms of a run, indexed by input position.
pub(super) struct RunForms {
    /// Kept forms of input position `i`: `kept[starts[i]..starts[i + 1]]`; `[0]` for
    /// every position that is not a scoreable candidate with variants.
    starts: Vec<u32>,
    kept: Vec<u32>,
    /// The form chosen for each position (0 until a slicer chooses).
    chosen: Vec<u32>,
    /// The level of each position's unit (0 until a slicer chooses).
    level: Vec<u32>,
    /// Why each position placed below its full form is there, with the tokens left at
    /// that moment.
    downgrade: Vec<Option<(DowngradeCause, i64)>>,
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
            chosen: vec![0; n],
            level: vec![0; n],
            downgrade: vec![None; n],
            pruned: Vec::new(),
        };
        forms.starts.push(0);
        let mut candidates = scoreable.iter().peekable();
        for (index, item) in items.iter().enumerate() {
            let candidate = candidates.next_if_eq(&&index).is_some();
            if candidate && item.has_variants() {
                let pruned = &mut forms.pruned;
                kept_forms(item, &mut forms.kept, |form, dominated_by| {
                    pruned.push(PrunedForm {
                        index,
                        form,
                        dominated_by,
                    })
                });
            } else {
                forms.kept.push(0);
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

    /// Records why input position `index` is placed below its full form.
    pub(super) fn set_downgrade(&mut self, index: usize, cause: DowngradeCause, available: i64) {
        self.downgrade[index] = Some((cause, available));
    }

    /// Why input position `index` is placed below its full form, if it is.
    pub(super) fn downgrade(&self, index: usize) -> Option<(DowngradeCause, i64)> {
        self.downgrade[index]
    }

    /// The forms pruned before slicing (moved out, for the report).
    pub(super) fn take_pruned(&mut self) -> Vec<PrunedForm> {
        std::mem::take(&mut self.pruned)
    }

    /// Gives `units` — over a list whose position `p` is input position `index(p)` with
    /// score `score(p)` — their levels from the kept forms.
    pub(super) fn set_levels(
        &self,
        units: &mut Units,
        items: &[ContextItem],
        index: impl Fn(usize) -> usize,
        score: impl Fn(usize) -> f64,
        mode: GroupValue,
    ) -> Result<()> {
        let index = &index;
        units.set_levels(&LevelInputs {
            kept: |p: usize| self.kept(index(p)),
            item: |p: usize| &items[index(p)],
            score,
            mode,
        })
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
