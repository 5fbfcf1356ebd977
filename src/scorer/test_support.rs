//! Shared helpers for the scorer tests: item builders, random inputs for the property
//! tests, a scorer with fixed per-position scores, and bit-exact comparison.

use crate::error::Result;
use crate::model::{ContextItem, ContextKind};
use crate::scorer::Scorer;
use crate::testutil::Rng;

/// Borrows every item, as the pipeline hands them to a scorer.
pub(crate) fn item_refs(items: &[ContextItem]) -> Vec<&ContextItem> {
    items.iter().collect()
}

/// Runs one batch pass of `scorer` over `items`.
pub(crate) fn run(scorer: &dyn Scorer, items: &[ContextItem]) -> Vec<f64> {
    try_run(scorer, items).expect("built-in scorers never fail")
}

/// Runs one batch pass and returns its result.
pub(crate) fn try_run(scorer: &dyn Scorer, items: &[ContextItem]) -> Result<Vec<f64>> {
    let refs = item_refs(items);
    // Poison the buffer so a scorer that forgets a slot is caught.
    let mut out = vec![f64::from_bits(0x7ff8_dead_beef_0001); refs.len()];
    scorer.score_all(&refs, &mut out)?;
    Ok(out)
}

/// An item with default fields and a unique content.
pub(crate) fn plain(i: usize) -> ContextItem {
    ContextItem::new(format!("item{i}"), 1).unwrap()
}

/// Items built by `f` from their position.
pub(crate) fn items_from(n: usize, f: impl Fn(usize) -> ContextItem) -> Vec<ContextItem> {
    (0..n).map(f).collect()
}

/// A random non-blank name of 1 to 40 bytes over a small alphabet, so that names of a
/// table often share their length and first or last 16 bytes, sometimes non-ASCII.
pub(crate) fn random_name(rng: &mut Rng) -> String {
    const ALPHABET: [&str; 7] = ["a", "B", "-", "é", "x", "X", "日"];
    let len = 1 + rng.below(40);
    let mut name = String::new();
    while name.len() < len {
        let piece = ALPHABET[rng.below(ALPHABET.len())];
        name.push_str(piece);
    }
    name
}

/// `name` with the case of each ASCII letter chosen at random (equal under ASCII folding).
pub(crate) fn random_ascii_case(rng: &mut Rng, name: &str) -> String {
    name.chars()
        .map(|c| {
            if rng.chance(0.5) {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// One item per key, with that priority (`None`: no priority).
pub(crate) fn prioritised(keys: &[Option<i64>]) -> Vec<ContextItem> {
    items_from(keys.len(), |i| {
        let b = ContextItem::builder(format!("item{i}"), 1);
        match keys[i] {
            Some(p) => b.priority(p).build().unwrap(),
            None => b.build().unwrap(),
        }
    })
}

/// Asserts `got` and `want` are equal bit for bit, naming the seed on failure.
///
/// Every non-NaN value must match exactly (signed zeros and infinities included). Two NaNs
/// match whatever their sign and payload: Rust leaves the sign and payload of a NaN produced
/// by arithmetic unspecified, and LLVM may commute `a + b` when both are NaN, so the same
/// expression compiled in two places can legitimately yield `0x7ff8…` in one and `0xfff8…`
/// in the other.
pub(crate) fn assert_bits_eq(seed: u64, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "seed {seed}: length differs");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
        assert!(
            same,
            "seed {seed}: item {i}: fast {g:?} ({:#018x}) vs naive {w:?} ({:#018x}); got {got:?}, want {want:?}",
            g.to_bits(),
            w.to_bits()
        );
    }
}

/// A test scorer returning `values[i]` for the item at position `i`; pure per pass.
#[derive(Debug, Clone)]
pub(crate) struct FixedScores(pub(crate) Vec<f64>);

impl Scorer for FixedScores {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        assert_eq!(
            items.len(),
            self.0.len(),
            "FixedScores sized for another list"
        );
        out.copy_from_slice(&self.0);
        Ok(())
    }
}

/// Tag spellings that exercise folding: case variants, non-ASCII letters, the empty tag
/// and whitespace (which is never trimmed).
pub(crate) const TAG_POOL: &[&str] = &[
    "a", "A", "b", "B", "ab", "aB", "", "É", "é", "x", " x", "x ",
];

/// Kinds including a case variant and an unknown kind.
const KIND_POOL: &[&str] = &[
    "Message",
    "message",
    "Document",
    "ToolOutput",
    "Memory",
    "SystemPrompt",
    "Other",
];

/// Scores with special bit patterns: signed zeros, infinities, NaN, subnormals, extremes.
pub(crate) const SPECIAL_FLOATS: &[f64] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    f64::MIN_POSITIVE,
    5e-324,
    -5e-324,
    f64::MAX,
    f64::MIN,
    0.1,
    0.2,
    0.3,
];

/// A float that is special with probability `special`, otherwise a random value of a
/// random magnitude and sign.
pub(crate) fn random_float(rng: &mut Rng, special: f64) -> f64 {
    if rng.chance(special) {
        return *rng.pick(SPECIAL_FLOATS);
    }
    let scale = *rng.pick(&[1.0, 1.0, 10.0, 1e-3, 1e6, 1e300]);
    let sign = if rng.chance(0.2) { -1.0 } else { 1.0 };
    sign * rng.unit() * scale
}

/// How one random case draws its keys (timestamps or priorities): a narrow range forces
/// many ties, a wide one few, and the extremes test the ends of `i64`.
#[derive(Debug, Clone, Copy)]
struct KeyShape {
    missing: f64,
    spread: Option<i64>,
}

impl KeyShape {
    fn random(rng: &mut Rng) -> Self {
        Self {
            missing: *rng.pick(&[0.0, 0.2, 0.6, 0.95]),
            spread: *rng.pick(&[Some(2), Some(10), Some(1_000_000), None]),
        }
    }

    fn draw(self, rng: &mut Rng) -> Option<i64> {
        if rng.chance(self.missing) {
            return None;
        }
        Some(match self.spread {
            Some(s) => rng.range(-s, s),
            None if rng.chance(0.2) => *rng.pick(&[i64::MIN, i64::MAX, 0, -1, 1]),
            None => rng.next_u64() as i64,
        })
    }
}

/// Up to four tags, duplicates possible; mostly from [`TAG_POOL`], sometimes from a wide
/// pool of distinct tags so that many items share nothing.
fn random_tags(rng: &mut Rng) -> Vec<String> {
    let count = rng.below(5);
    (0..count)
        .map(|_| {
            if rng.chance(0.3) {
                format!("t{}", rng.below(40))
            } else {
                rng.pick(TAG_POOL).to_string()
            }
        })
        .collect()
}

/// A random list of up to `max_len` items with random timestamps, priorities, tags, kinds
/// and hints (the distributions vary per call so ties and gaps both occur).
pub(crate) fn random_items(rng: &mut Rng, max_len: usize) -> Vec<ContextItem> {
    let n = rng.below(max_len + 1);
    let timestamps = KeyShape::random(rng);
    let priorities = KeyShape::random(rng);
    let no_tags = *rng.pick(&[0.0, 0.3, 0.8]);
    (0..n)
        .map(|i| {
            let mut b = ContextItem::builder(format!("item{i}"), 1)
                .kind(ContextKind::new(*rng.pick(KIND_POOL)).unwrap())
                .future_relevance_hint(random_float(rng, 0.3));
            if !rng.chance(no_tags) {
                b = b.tags(random_tags(rng));
            }
            if let Some(t) = timestamps.draw(rng) {
                b = b.timestamp(t);
            }
            if let Some(p) = priorities.draw(rng) {
                b = b.priority(p);
            }
            b.build().unwrap()
        })
        .collect()
}
