//! Item variants (an extension of the specification, `docs/variants.md`): cheaper
//! alternative forms of an item, and which of an item's forms are worth choosing.
//!
//! An item's **forms** are numbered: form 0 is the item itself (its content and tokens,
//! quality 1), form `f >= 1` is its `f`-th variant. Everything the engine does with forms
//! goes through these numbers and the item's index-based accessors
//! ([`ContextItem::form_tokens`] and the like), never through the variant values.

use std::fmt;

use crate::error::{Error, Result};
use crate::model::ContextItem;

/// A cheaper alternative form of an item — a summary, an excerpt, a stub — used **instead
/// of** the item when the selection prefers it, never in addition.
///
/// Its value in a selection is the item's score times its `quality`, a number in (0, 1]
/// saying how much of the full item's worth the form keeps (the full form has quality 1).
/// Built through [`crate::ContextItemBuilder::variant`], which validates it together with
/// its item.
#[derive(Clone, PartialEq)]
pub struct Variant {
    content: Box<str>,
    tokens: i64,
    quality: f64,
}

impl Variant {
    /// An unvalidated variant; [`check`] validates it with its item.
    pub(crate) fn unchecked(content: String, tokens: i64, quality: f64) -> Variant {
        Variant {
            content: content.into_boxed_str(),
            tokens,
            quality,
        }
    }

    /// The text sent instead of the item's content (non-empty UTF-8).
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Tokens of the content (>= 0).
    pub fn tokens(&self) -> i64 {
        self.tokens
    }

    /// The share of the item's value the form keeps, in (0, 1].
    pub fn quality(&self) -> f64 {
        self.quality
    }
}

impl fmt::Debug for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Variant")
            .field("content", &self.content())
            .field("tokens", &self.tokens)
            .field("quality", &self.quality)
            .finish()
    }
}

/// How a variant field is wrong — `(field, problem)` — without naming the item (the
/// caller adds that).
pub(crate) fn variant_problem(v: &Variant) -> Option<(&'static str, String)> {
    if v.content.is_empty() {
        return Some(("content", "must not be empty".into()));
    }
    if v.tokens < 0 {
        return Some(("tokens", format!("must be >= 0, got {}", v.tokens)));
    }
    // NaN fails the range test too.
    if !(v.quality > 0.0 && v.quality <= 1.0) {
        return Some(("quality", format!("must be in (0, 1], got {}", v.quality)));
    }
    None
}

/// Validates the variants of the item whose content is `content`: the first bad one fails
/// with [`Error::InvalidArgument`] naming the item (the start of its content), the form
/// number and the field, e.g. `item "Tool result …", form 2: quality must be in (0, 1],
/// got NaN`.
pub(crate) fn check(content: &str, variants: &[Variant]) -> Result<()> {
    if variants.len() >= u32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "item {}: at most {} variants, got {}",
            describe(content),
            u32::MAX - 1,
            variants.len()
        )));
    }
    for (i, v) in variants.iter().enumerate() {
        if let Some((field, problem)) = variant_problem(v) {
            return Err(Error::InvalidArgument(format!(
                "item {}, form {}: {field} {problem}",
                describe(content),
                i + 1
            )));
        }
    }
    Ok(())
}

/// The start of an item's content, quoted, for error messages.
fn describe(content: &str) -> String {
    const WIDTH: usize = 40;
    match content.char_indices().nth(WIDTH) {
        None => format!("{content:?}"),
        Some((end, _)) => format!("{:?}", format!("{}…", &content[..end])),
    }
}

/// A form of an item that no selection needs, and the form that makes it so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrunedForm {
    /// Input position of the item.
    pub index: usize,
    /// The pruned form (>= 1: the full form is never pruned).
    pub form: usize,
    /// A form with no more tokens and at least the same quality.
    pub dominated_by: usize,
}

/// The forms of `item` worth choosing, richest first, appended to `kept` as form numbers;
/// `pruned(form, dominated_by)` is called for each of the others, in form order.
///
/// Form `f` is **dominated** by form `g` when `g` has no more tokens and at least the
/// same quality, and is strictly better in one of the two or comes first (`g < f`). A
/// dominated variant is pruned; the full form (0) never is. The kept forms have strictly
/// decreasing tokens and non-increasing quality (strictly decreasing after the full form).
pub(crate) fn kept_forms(
    item: &ContextItem,
    kept: &mut Vec<u32>,
    pruned: impl FnMut(usize, usize),
) {
    kept_forms_with(item, kept, &mut PruneScratch::default(), pruned)
}

/// Buffers [`kept_forms_with`] reuses from one item to the next.
#[derive(Default)]
pub(crate) struct PruneScratch {
    order: Vec<u32>,
    dominated: Vec<(usize, usize)>,
}

/// [`kept_forms`] with buffers kept by the caller, so that pruning many items allocates
/// only while the buffers grow.
pub(crate) fn kept_forms_with(
    item: &ContextItem,
    kept: &mut Vec<u32>,
    scratch: &mut PruneScratch,
    mut pruned: impl FnMut(usize, usize),
) {
    let n = item.form_count();
    if n == 1 {
        kept.push(0);
        return;
    }
    // Sweep by (tokens ascending, quality descending, form ascending): a form is kept when
    // its quality beats every form before it, each of which has no more tokens. The order
    // is total (form numbers are distinct), so an unstable sort is deterministic.
    let order = &mut scratch.order;
    order.clear();
    order.extend(0..n as u32);
    order.sort_unstable_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        item.form_tokens(a)
            .cmp(&item.form_tokens(b))
            .then(item.form_quality(b).total_cmp(&item.form_quality(a)))
            .then(a.cmp(&b))
    });
    let start = kept.len();
    let mut best: Option<usize> = None; // the highest quality so far (first to reach it)
    let dominated = &mut scratch.dominated;
    dominated.clear();
    for &f in order.iter() {
        let f = f as usize;
        match best {
            Some(b) if f != 0 && item.form_quality(b) >= item.form_quality(f) => {
                dominated.push((f, b))
            }
            _ => {
                kept.push(f as u32);
                if best.is_none_or(|b| item.form_quality(f) > item.form_quality(b)) {
                    best = Some(f);
                }
            }
        }
    }
    kept[start..].reverse(); // richest (most tokens) first
    dominated.sort_unstable();
    for &(f, by) in dominated.iter() {
        pruned(f, by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(tokens: i64, variants: &[(i64, f64)]) -> ContextItem {
        let mut b = ContextItem::builder("full", tokens);
        for (i, &(t, q)) in variants.iter().enumerate() {
            b = b.variant(format!("v{}", i + 1), t, q);
        }
        b.build().unwrap()
    }

    fn prune(item: &ContextItem) -> (Vec<u32>, Vec<(usize, usize)>) {
        let mut kept = Vec::new();
        let mut pruned = Vec::new();
        kept_forms(item, &mut kept, |f, by| pruned.push((f, by)));
        (kept, pruned)
    }

    #[test]
    fn dominated_variants_are_pruned_richest_first_kept() {
        // v1 larger than the full form, v2 a good summary, v3 worse and larger than v2,
        // v4 the smallest stub.
        let it = item(100, &[(150, 0.9), (20, 0.6), (30, 0.5), (0, 0.1)]);
        let (kept, pruned) = prune(&it);
        assert_eq!(kept, [0, 2, 4]);
        assert_eq!(pruned, [(1, 0), (3, 2)]);
    }

    #[test]
    fn ties_keep_the_earlier_form_and_the_full_form_always_stays() {
        // Equal tokens and quality: the earlier variant wins.
        let (kept, pruned) = prune(&item(100, &[(40, 0.5), (40, 0.5)]));
        assert_eq!((kept, pruned), (vec![0, 1], vec![(2, 1)]));
        // A variant as good as the full form and cheaper dominates it, but form 0 stays.
        let (kept, pruned) = prune(&item(100, &[(60, 1.0), (100, 1.0), (10, 0.2)]));
        assert_eq!(kept, [0, 1, 3]);
        assert_eq!(pruned, [(2, 1)]); // form 1: fewer tokens, the same quality
                                      // A zero-token full form leaves nothing worth keeping.
        let (kept, pruned) = prune(&item(0, &[(0, 0.5), (3, 0.9)]));
        assert_eq!((kept, pruned), (vec![0], vec![(1, 0), (2, 0)]));
        // Negative full tokens: every variant has more tokens.
        let (kept, _) = prune(&item(-5, &[(0, 0.5)]));
        assert_eq!(kept, [0]);
        let (kept, pruned) = prune(&item(7, &[]));
        assert_eq!((kept, pruned), (vec![0], vec![]));
    }

    #[test]
    fn kept_forms_decrease_in_tokens_and_quality() {
        let mut rng = crate::testutil::Rng::new(7);
        for _ in 0..2000 {
            let full = rng.range(0, 60);
            let variants: Vec<(i64, f64)> = (0..rng.below(6))
                .map(|_| (rng.range(0, 80), (1 + rng.below(10)) as f64 / 10.0))
                .collect();
            let it = item(full, &variants);
            let (kept, pruned) = prune(&it);
            assert_eq!(kept[0], 0);
            assert_eq!(kept.len() + pruned.len(), it.form_count());
            for w in kept.windows(2) {
                let (a, b) = (w[0] as usize, w[1] as usize);
                assert!(it.form_tokens(a) > it.form_tokens(b), "{variants:?}");
                assert!(it.form_quality(a) >= it.form_quality(b), "{variants:?}");
            }
            for &(f, by) in &pruned {
                assert!(it.form_tokens(by) <= it.form_tokens(f));
                assert!(it.form_quality(by) >= it.form_quality(f));
                // Brute force: nothing kept is dominated, everything pruned is.
                assert!(!kept.contains(&(f as u32)));
            }
            for &k in &kept {
                let k = k as usize;
                let dominated = (0..it.form_count()).any(|g| {
                    g != k
                        && it.form_tokens(g) <= it.form_tokens(k)
                        && it.form_quality(g) >= it.form_quality(k)
                        && (it.form_tokens(g) < it.form_tokens(k)
                            || it.form_quality(g) > it.form_quality(k)
                            || g < k)
                });
                assert!(k == 0 || !dominated, "{variants:?} kept {k}");
            }
        }
    }

    #[test]
    fn validation_names_item_form_and_field() {
        let bad = |t: i64, q: f64, c: &str| {
            ContextItem::builder("Tool result call_01 lookup_order: a long JSON body", 90)
                .variant("ok", 5, 0.5)
                .variant(c, t, q)
                .build()
                .unwrap_err()
                .to_string()
        };
        let item = "item \"Tool result call_01 lookup_order: a long…\", form 2:";
        assert_eq!(
            bad(5, f64::NAN, "s"),
            format!("invalid argument: {item} quality must be in (0, 1], got NaN")
        );
        assert_eq!(
            bad(5, 0.0, "s"),
            format!("invalid argument: {item} quality must be in (0, 1], got 0")
        );
        assert_eq!(
            bad(5, 1.5, "s"),
            format!("invalid argument: {item} quality must be in (0, 1], got 1.5")
        );
        assert_eq!(
            bad(5, -0.5, "s"),
            format!("invalid argument: {item} quality must be in (0, 1], got -0.5")
        );
        assert_eq!(
            bad(-1, 0.5, "s"),
            format!("invalid argument: {item} tokens must be >= 0, got -1")
        );
        assert_eq!(
            bad(1, 0.5, ""),
            format!("invalid argument: {item} content must not be empty")
        );
        assert!(ContextItem::builder("x", 1)
            .variant("y", 0, 1.0)
            .variant("z", 0, f64::MIN_POSITIVE)
            .build()
            .is_ok());
    }
}
