//! Library-neutral descriptions of inputs (items, scorers, slicers, placers, budgets) and their
//! random generators. `both.rs` turns each description into the ctxpack value and the cupel value.
//!
//! Generated values stay where ctxpack and the crate are specified to agree: timestamps and
//! durations in whole milliseconds with ages under ~100 days (decision D14 in docs/decisions.md vs
//! the crate's ms truncation), tag weights that are multiples of 1/4 (so the crate's hash-order
//! weight sum is exact), distinct kinds in every kind-keyed configuration (decision D10), finite
//! configuration values (decision D9).

use ctxpack::OverflowStrategy;

use crate::rng::Rng;

/// The decay clock of every case: 2024-06-10T06:13:20Z, in milliseconds since the epoch.
pub const NOW_MS: i64 = 1_718_000_000_000;

const DAY_MS: i64 = 86_400_000;

/// Kinds, with ASCII case variants and a non-ASCII pair that must not fold together.
pub const KINDS: &[&str] = &[
    "Message",
    "message",
    "MESSAGE",
    "Document",
    "document",
    "ToolOutput",
    "toolOutput",
    "Memory",
    "SystemPrompt",
    "Custom",
    "CUSTOM",
    "Ünïcode",
    "ünïcode",
];

const SOURCES: &[&str] = &["Chat", "Tool", "Rag", "rag"];

/// Tags, with case variants, an empty string, a leading space and a non-ASCII pair.
const TAGS: &[&str] = &[
    "a",
    "A",
    "b",
    "B",
    "c",
    "",
    "important",
    "Important",
    "É",
    "é",
    " a",
];

/// Values of `cupel:trust`, including every parse edge case of spec 03 §2.9.
const TRUST_VALUES: &[&str] = &[
    "0.5",
    "0.85",
    "1.5",
    "-0.1",
    "0",
    "0.0",
    "1.0",
    "1",
    "NaN",
    "nan",
    "inf",
    "+Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "1e-400",
    "-0",
    " 0.5",
    "0.5 ",
    "",
    ".5",
    "5.",
    "+.5",
    "e5",
    "0x1p3",
    "1,5",
    "high",
    "1e-3",
    "2E-1",
    "+0.25",
];

const META_KEYS: &[&str] = &["cupel:priority", "Cupel:priority", "k"];
const META_VALUES: &[&str] = &["high", "High", "low", "1.0", "1", ""];

/// One candidate item, described independently of either library.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemSpec {
    /// Position in its list; written into the item's metadata to map cupel output back.
    pub id: usize,
    /// Content (unique unless the profile asks for duplicates).
    pub content: String,
    /// Tokens (may be zero or negative, depending on the profile).
    pub tokens: i64,
    /// Kind spelling (`None`: the default kind).
    pub kind: Option<&'static str>,
    /// Source spelling (`None`: the default source).
    pub source: Option<&'static str>,
    /// Priority.
    pub priority: Option<i64>,
    /// Tags, duplicates kept.
    pub tags: Vec<&'static str>,
    /// Metadata entries with distinct keys.
    pub metadata: Vec<(&'static str, String)>,
    /// Timestamp in whole milliseconds since the epoch.
    pub timestamp_ms: Option<i64>,
    /// Future-relevance hint.
    pub hint: Option<f64>,
    /// Pinned flag.
    pub pinned: bool,
    /// A score, used only where a test feeds scored items straight to a slicer or placer.
    pub score: f64,
}

impl ItemSpec {
    /// The kind spelling the item ends up with.
    pub fn kind_str(&self) -> &'static str {
        self.kind.unwrap_or("Message")
    }
}

/// Shape of a generated item list.
#[derive(Debug, Clone, Copy)]
pub struct ItemProfile {
    /// Largest list length.
    pub max_len: usize,
    /// Largest positive token count.
    pub max_tokens: i64,
    /// Probability of a zero-token item.
    pub zero_tokens: f64,
    /// Probability of a negative-token item.
    pub negative_tokens: f64,
    /// Probability of a pinned item.
    pub pinned: f64,
    /// Largest token count of a pinned item.
    pub max_pinned_tokens: i64,
    /// Probability that an item reuses an earlier item's content.
    pub duplicate_content: f64,
}

impl ItemProfile {
    /// Scorer inputs: small lists (the crate's ScaledScorer is quadratic per pass), some
    /// repeated contents to check identity-by-position in relative scorers.
    pub const SCORING: Self = Self {
        max_len: 22,
        max_tokens: 500,
        zero_tokens: 0.1,
        negative_tokens: 0.0,
        pinned: 0.1,
        max_pinned_tokens: 100,
        duplicate_content: 0.1,
    };
    /// Slicer inputs: what a slicer can receive from the pipeline (no negative tokens,
    /// nothing pinned), unique contents.
    pub const SLICING: Self = Self {
        max_len: 36,
        max_tokens: 400,
        zero_tokens: 0.1,
        negative_tokens: 0.0,
        pinned: 0.0,
        max_pinned_tokens: 0,
        duplicate_content: 0.0,
    };
    /// Placer inputs: pinned items mixed in (they arrive with score 1.0).
    pub const PLACING: Self = Self {
        max_len: 30,
        max_tokens: 400,
        zero_tokens: 0.1,
        negative_tokens: 0.0,
        pinned: 0.15,
        max_pinned_tokens: 100,
        duplicate_content: 0.0,
    };
    /// Pipeline inputs with unique contents.
    pub const PIPELINE: Self = Self {
        max_len: 26,
        max_tokens: 400,
        zero_tokens: 0.1,
        negative_tokens: 0.08,
        pinned: 0.12,
        max_pinned_tokens: 120,
        duplicate_content: 0.0,
    };

    /// The same profile with repeated contents.
    pub fn with_duplicates(self, p: f64) -> Self {
        Self {
            duplicate_content: p,
            ..self
        }
    }

    /// One time in twenty, the same profile with up to [`LARGE_LEN`] smaller items, to reach
    /// the batch paths (tag indexes, lazy selection, knapsack shortcuts) at some scale.
    pub fn sometimes_large(self, rng: &mut Rng) -> Self {
        if rng.chance(0.05) {
            Self {
                max_len: LARGE_LEN,
                max_tokens: 120,
                ..self
            }
        } else {
            self
        }
    }
}

/// The longest generated list.
pub const LARGE_LEN: usize = 150;

/// Lists longer than this get no ScaledScorer (the crate's is quadratic per item pass).
pub const SCALED_MAX_LEN: usize = 40;

/// Largest knapsack table (candidates × discretised capacity) a case may build.
const MAX_TABLE_CELLS: i64 = 200_000;

/// A random item list. Every field is filled at random; the profile shapes tokens,
/// pinning and content reuse.
pub fn items(rng: &mut Rng, profile: &ItemProfile) -> Vec<ItemSpec> {
    let len = rng.below(profile.max_len + 1);
    let shared_times: Vec<i64> = (0..4).map(|_| random_time(rng)).collect();
    let mut out: Vec<ItemSpec> = Vec::with_capacity(len);
    for id in 0..len {
        let content = if id > 0 && rng.chance(profile.duplicate_content) {
            out[rng.below(id)].content.clone()
        } else {
            format!("item-{id}")
        };
        out.push(item(rng, profile, id, content, &shared_times));
    }
    out
}

/// One random item.
fn item(
    rng: &mut Rng,
    profile: &ItemProfile,
    id: usize,
    content: String,
    shared_times: &[i64],
) -> ItemSpec {
    let pinned = rng.chance(profile.pinned);
    let tokens = if rng.chance(profile.negative_tokens) {
        rng.range(-50, -1)
    } else if rng.chance(profile.zero_tokens) {
        0
    } else if pinned {
        rng.range(0, profile.max_pinned_tokens)
    } else {
        rng.range(1, profile.max_tokens)
    };
    ItemSpec {
        id,
        content,
        tokens,
        kind: rng.chance(0.85).then(|| *rng.pick(KINDS)),
        source: rng.chance(0.3).then(|| *rng.pick(SOURCES)),
        priority: rng.chance(0.75).then(|| priority(rng)),
        tags: (0..rng.below(4)).map(|_| *rng.pick(TAGS)).collect(),
        metadata: metadata(rng),
        timestamp_ms: rng.chance(0.75).then(|| {
            if rng.chance(0.4) {
                *rng.pick(shared_times)
            } else {
                random_time(rng)
            }
        }),
        hint: rng.chance(0.7).then(|| hint(rng)),
        pinned,
        score: 0.0,
    }
}

/// A timestamp between two days in the future and 99 days in the past, in whole ms.
fn random_time(rng: &mut Rng) -> i64 {
    NOW_MS - rng.range(-2 * DAY_MS, 99 * DAY_MS)
}

fn priority(rng: &mut Rng) -> i64 {
    if rng.chance(0.9) {
        rng.range(-3, 5)
    } else {
        *rng.pick(&[i64::MIN, i64::MAX, 1_000_000])
    }
}

fn hint(rng: &mut Rng) -> f64 {
    if rng.chance(0.5) {
        rng.unit()
    } else {
        *rng.pick(&[
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            0.5,
            1.0,
            1.7,
            -0.3,
        ])
    }
}

fn metadata(rng: &mut Rng) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if rng.chance(0.5) {
        let value = if rng.chance(0.7) {
            rng.pick(TRUST_VALUES).to_string()
        } else {
            format!("{:.*}", rng.below(6), rng.unit() * 1.4 - 0.2)
        };
        out.push(("cupel:trust", value));
    }
    if rng.chance(0.4) {
        out.push((*rng.pick(META_KEYS), rng.pick(META_VALUES).to_string()));
    }
    out
}

/// A score as the pipeline could produce it: many exact ties, zeros of both signs,
/// negative values (DecayScorer Step windows), values above 1, and values that exercise
/// the knapsack's f64 scaling (0.57, 0.29, below 1e-4).
pub fn score(rng: &mut Rng) -> f64 {
    match rng.below(4) {
        0 => rng.below(21) as f64 / 20.0,
        1 => rng.unit(),
        2 => *rng.pick(&[
            0.0,
            -0.0,
            -0.25,
            1.0,
            1.5,
            2.0,
            0.57,
            0.29,
            5e-5,
            0.123_456_789,
        ]),
        _ => rng.below(5) as f64 / 4.0,
    }
}

/// Sorts scored items the way the Sort stage does: score descending by total order,
/// stable; then renumbers ids to the new positions.
pub fn sort_by_score(items: &mut [ItemSpec]) {
    items.sort_by(|a, b| b.score.total_cmp(&a.score));
    renumber(items);
}

/// Makes every id equal to its position again (after sorting or removing items).
pub fn renumber(items: &mut [ItemSpec]) {
    for (pos, item) in items.iter_mut().enumerate() {
        item.id = pos;
    }
}

// ---------------------------------------------------------------------------------------
// Scorers
// ---------------------------------------------------------------------------------------

/// A decay curve; durations in whole milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub enum CurveSpec {
    /// Half-life.
    Exponential(i64),
    /// Window length.
    Window(i64),
    /// (max age, score) in list order.
    Step(Vec<(i64, f64)>),
}

/// A scorer configuration, possibly nested.
#[derive(Debug, Clone, PartialEq)]
pub enum ScorerSpec {
    /// RecencyScorer.
    Recency,
    /// PriorityScorer.
    Priority,
    /// FrequencyScorer.
    Frequency,
    /// ReflexiveScorer.
    Reflexive,
    /// KindScorer: `None` for the default table, else a custom table of distinct kinds.
    Kind(Option<Vec<(&'static str, f64)>>),
    /// TagScorer with distinct tags.
    Tag(Vec<(&'static str, f64)>),
    /// MetadataTrustScorer with its default score.
    MetadataTrust(f64),
    /// MetadataKeyScorer.
    MetadataKey {
        /// Metadata key.
        key: &'static str,
        /// Value that triggers the boost.
        value: &'static str,
        /// Boost (> 0).
        boost: f64,
    },
    /// DecayScorer against the fixed clock [`NOW_MS`].
    Decay {
        /// The curve.
        curve: CurveSpec,
        /// Score of items without a timestamp.
        null_score: f64,
    },
    /// ScaledScorer.
    Scaled(Box<ScorerSpec>),
    /// CompositeScorer with (child, weight) entries.
    Composite(Vec<(ScorerSpec, f64)>),
}

impl ScorerSpec {
    /// True when a ScaledScorer occurs anywhere in the configuration.
    pub fn has_scaled(&self) -> bool {
        match self {
            ScorerSpec::Scaled(_) => true,
            ScorerSpec::Composite(children) => children.iter().any(|(c, _)| c.has_scaled()),
            _ => false,
        }
    }
}

/// A random scorer for a list of `len` items: no ScaledScorer on long lists.
pub fn scorer_for(rng: &mut Rng, len: usize) -> ScorerSpec {
    loop {
        let spec = scorer(rng, 0);
        if len <= SCALED_MAX_LEN || !spec.has_scaled() {
            return spec;
        }
    }
}

/// A random scorer: a leaf, or (above `max_depth`) possibly a Composite or Scaled one.
pub fn scorer(rng: &mut Rng, depth: usize) -> ScorerSpec {
    const MAX_DEPTH: usize = 2;
    let choices = if depth >= MAX_DEPTH { 10 } else { 13 };
    match rng.below(choices) {
        0 => ScorerSpec::Recency,
        1 => ScorerSpec::Priority,
        2 => ScorerSpec::Frequency,
        3 => ScorerSpec::Reflexive,
        4 => ScorerSpec::Kind(rng.chance(0.6).then(|| kind_weights(rng))),
        5 => ScorerSpec::Tag(tag_weights(rng)),
        6 => ScorerSpec::MetadataTrust(unit_config(rng)),
        7 => metadata_key(rng),
        8 | 9 => decay(rng),
        10 | 11 => ScorerSpec::Composite(
            (0..rng.range(1, 4))
                .map(|_| (scorer(rng, depth + 1), composite_weight(rng)))
                .collect(),
        ),
        _ => ScorerSpec::Scaled(Box::new(scaled_inner(rng, depth + 1))),
    }
}

/// Scaled is most interesting over relative scorers, whose output range varies per list.
fn scaled_inner(rng: &mut Rng, depth: usize) -> ScorerSpec {
    match rng.below(5) {
        0 => ScorerSpec::Recency,
        1 => ScorerSpec::Priority,
        2 => ScorerSpec::Frequency,
        _ => scorer(rng, depth),
    }
}

fn kind_weights(rng: &mut Rng) -> Vec<(&'static str, f64)> {
    distinct_kinds(rng, 5)
        .into_iter()
        .map(|k| {
            let u = rng.unit();
            (k, *rng.pick(&[0.0, -0.0, 0.2, 0.5, 1.0, 3.0, 0.1 + u]))
        })
        .collect()
}

fn tag_weights(rng: &mut Rng) -> Vec<(&'static str, f64)> {
    let mut tags: Vec<&'static str> = Vec::new();
    for _ in 0..rng.below(6) {
        let t = *rng.pick(TAGS);
        if !tags.contains(&t) {
            tags.push(t);
        }
    }
    tags.into_iter()
        .map(|t| (t, rng.below(13) as f64 / 4.0))
        .collect()
}

fn metadata_key(rng: &mut Rng) -> ScorerSpec {
    let key = *rng.pick(META_KEYS);
    let value = *rng.pick(META_VALUES);
    let u = rng.unit();
    let boost = *rng.pick(&[0.5, 1.0, 1.5, 2.0, 1e-3, 0.01 + 3.0 * u]);
    ScorerSpec::MetadataKey { key, value, boost }
}

fn decay(rng: &mut Rng) -> ScorerSpec {
    let duration = |rng: &mut Rng| {
        if rng.chance(0.2) {
            *rng.pick(&[1, 1000, 3_600_000, DAY_MS])
        } else {
            rng.range(1, 60 * DAY_MS)
        }
    };
    let curve = match rng.below(3) {
        0 => CurveSpec::Exponential(duration(rng)),
        1 => CurveSpec::Window(duration(rng)),
        _ => CurveSpec::Step(
            (0..rng.range(1, 4))
                .map(|_| {
                    let u = rng.unit();
                    (
                        duration(rng),
                        *rng.pick(&[0.9, 0.5, 0.1, 0.0, 1.0, 1.5, -0.25, u]),
                    )
                })
                .collect(),
        ),
    };
    ScorerSpec::Decay {
        curve,
        null_score: unit_config(rng),
    }
}

/// A configuration value in [0, 1] (MetadataTrust default, Decay null score).
fn unit_config(rng: &mut Rng) -> f64 {
    let u = rng.unit();
    *rng.pick(&[0.0, 0.5, 1.0, u])
}

fn composite_weight(rng: &mut Rng) -> f64 {
    let u = rng.unit();
    *rng.pick(&[
        1.0,
        2.0,
        0.5,
        3.0,
        0.1,
        0.2,
        0.3,
        1e-3,
        7.25,
        1e-6 + 10.0 * u,
    ])
}

/// Up to `max` kinds from [`KINDS`], distinct under ASCII case folding.
fn distinct_kinds(rng: &mut Rng, max: usize) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for _ in 0..rng.below(max + 1) {
        let k = *rng.pick(KINDS);
        if !kinds.iter().any(|have| have.eq_ignore_ascii_case(k)) {
            kinds.push(k);
        }
    }
    kinds
}

// ---------------------------------------------------------------------------------------
// Slicers and placers
// ---------------------------------------------------------------------------------------

/// One count quota entry: (kind, require, cap).
pub type CountEntry = (&'static str, usize, usize);

/// A slicer configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum SlicerSpec {
    /// GreedySlice.
    Greedy,
    /// KnapsackSlice with a bucket size.
    Knapsack(i64),
    /// QuotaSlice with (kind, require %, cap %) entries over Greedy or Knapsack.
    Quota(Vec<(&'static str, f64, f64)>, Box<SlicerSpec>),
    /// CountQuotaSlice over GreedySlice; `true` = ScarcityBehavior::Throw.
    CountQuota(Vec<CountEntry>, bool),
    /// CountConstrainedKnapsackSlice with a bucket size; `true` = Throw.
    Ccks(Vec<CountEntry>, i64, bool),
}

impl SlicerSpec {
    /// The count-quota entries and scarcity flag, for the two count-quota slicers.
    pub fn count_entries(&self) -> Option<(&[CountEntry], bool)> {
        match self {
            SlicerSpec::CountQuota(entries, throw) | SlicerSpec::Ccks(entries, _, throw) => {
                Some((entries, *throw))
            }
            _ => None,
        }
    }
}

/// A random slicer; `count_bias` raises the share of the count-quota slicers.
pub fn slicer(rng: &mut Rng, count_bias: bool) -> SlicerSpec {
    let pick = if count_bias {
        rng.below(8)
    } else {
        rng.below(5)
    };
    match pick {
        0 => SlicerSpec::Greedy,
        1 => SlicerSpec::Knapsack(bucket(rng)),
        2 => {
            let inner = if rng.chance(0.5) {
                SlicerSpec::Greedy
            } else {
                SlicerSpec::Knapsack(bucket(rng))
            };
            SlicerSpec::Quota(quota_entries(rng), Box::new(inner))
        }
        3 | 5 | 6 => SlicerSpec::CountQuota(count_entries(rng), rng.chance(0.25)),
        _ => SlicerSpec::Ccks(count_entries(rng), bucket(rng), rng.chance(0.25)),
    }
}

/// Raises knapsack bucket sizes until every table of `n` candidates and capacity
/// `target / bucket` stays under [`MAX_TABLE_CELLS`].
pub fn fit_tables(slicer: &mut SlicerSpec, n: usize, target: i64) {
    let fit = |bucket: &mut i64| *bucket = (*bucket).max(n as i64 * target / MAX_TABLE_CELLS + 1);
    match slicer {
        SlicerSpec::Knapsack(bucket) | SlicerSpec::Ccks(_, bucket, _) => fit(bucket),
        SlicerSpec::Quota(_, inner) => fit_tables(inner, n, target),
        SlicerSpec::Greedy | SlicerSpec::CountQuota(..) => {}
    }
}

fn bucket(rng: &mut Rng) -> i64 {
    *rng.pick(&[1, 2, 3, 7, 10, 25, 50, 100, 100, 150])
}

/// Valid percentage entries: require <= cap, sum of requires <= 100, distinct kinds.
fn quota_entries(rng: &mut Rng) -> Vec<(&'static str, f64, f64)> {
    let mut total = 0.0;
    distinct_kinds(rng, 3)
        .into_iter()
        .map(|k| {
            let (u, v) = (rng.unit(), rng.unit());
            let cap = *rng.pick(&[0.0, 10.0, 25.0, 29.0, 33.3, 50.0, 57.0, 100.0, 100.0 * u]);
            let mut require = *rng.pick(&[0.0, cap, cap * v]);
            if total + require > 100.0 {
                require = 0.0;
            }
            total += require;
            (k, require, cap)
        })
        .collect()
}

/// Valid count entries: require <= cap, zero cap only with zero require, distinct kinds.
fn count_entries(rng: &mut Rng) -> Vec<CountEntry> {
    distinct_kinds(rng, 3)
        .into_iter()
        .map(|k| {
            let cap = rng.below(5);
            (k, rng.below(cap + 1), cap)
        })
        .collect()
}

/// A placer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacerSpec {
    /// ChronologicalPlacer.
    Chronological,
    /// UShapedPlacer.
    UShaped,
}

/// A random placer.
pub fn placer(rng: &mut Rng) -> PlacerSpec {
    if rng.chance(0.5) {
        PlacerSpec::Chronological
    } else {
        PlacerSpec::UShaped
    }
}

// ---------------------------------------------------------------------------------------
// Budgets and pipelines
// ---------------------------------------------------------------------------------------

/// A budget, every field valid.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetSpec {
    /// max_tokens.
    pub max: i64,
    /// target_tokens (<= max).
    pub target: i64,
    /// output_reserve (<= max).
    pub reserve: i64,
    /// Reserved slots with distinct kinds.
    pub slots: Vec<(&'static str, i64)>,
    /// Safety margin in percent.
    pub margin: f64,
}

impl BudgetSpec {
    /// A budget with no reserve, slots or margin (what a slicer receives).
    pub fn plain(max: i64, target: i64) -> Self {
        Self {
            max,
            target,
            reserve: 0,
            slots: Vec::new(),
            margin: 0.0,
        }
    }
}

/// The budget a slicer receives: targets around the candidates' total, small ones, and
/// zero; `max` at or above the target.
pub fn slice_budget(rng: &mut Rng, items: &[ItemSpec]) -> BudgetSpec {
    let total: i64 = items.iter().map(|i| i.tokens.max(0)).sum();
    let target = match rng.below(4) {
        0 => rng.range(0, total),
        1 => rng.range(0, 60),
        2 => total + rng.range(0, 100),
        _ => rng.range(total / 4, (total / 4) * 3 + 1),
    };
    BudgetSpec::plain(target + rng.range(0, 300) * rng.below(2) as i64, target)
}

/// A whole pipeline configuration and its input.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineSpec {
    /// The candidates.
    pub items: Vec<ItemSpec>,
    /// The budget.
    pub budget: BudgetSpec,
    /// The scorer.
    pub scorer: ScorerSpec,
    /// The slicer.
    pub slicer: SlicerSpec,
    /// The placer.
    pub placer: PlacerSpec,
    /// Deduplication on or off.
    pub dedup: bool,
    /// Overflow strategy.
    pub overflow: OverflowStrategy,
}

/// A random pipeline. `plain` keeps to inputs on which the crate's own pipeline is defined
/// like ctxpack's (no repeated contents reaching the slicer, no reserved slots, no safety
/// margin).
pub fn pipeline(rng: &mut Rng, plain: bool) -> PipelineSpec {
    let dedup = rng.chance(0.7);
    let profile = if (dedup || !plain) && rng.chance(0.4) {
        ItemProfile::PIPELINE.with_duplicates(0.25)
    } else {
        ItemProfile::PIPELINE
    };
    let profile = profile.sometimes_large(rng);
    let items = items(rng, &profile);
    let mut slicer = slicer(rng, true);
    let has_duplicates = items
        .iter()
        .any(|a| items.iter().any(|b| a.id != b.id && a.content == b.content));
    if let (SlicerSpec::Ccks(entries, _, throw), false, true) = (&slicer, dedup, has_duplicates) {
        // The crate's CCKS re-sorts by a content-keyed score map (04 §7.2 rule 3); ctxpack
        // goes by position. They differ only on repeated contents reaching the slicer.
        slicer = SlicerSpec::CountQuota(entries.clone(), *throw);
    }
    let budget = pipeline_budget(rng, &items, plain);
    fit_tables(&mut slicer, items.len(), budget.max);
    PipelineSpec {
        budget,
        scorer: scorer_for(rng, items.len()),
        items,
        slicer,
        placer: placer(rng),
        dedup,
        overflow: *rng.pick(&[
            OverflowStrategy::Throw,
            OverflowStrategy::Truncate,
            OverflowStrategy::Proceed,
        ]),
    }
}

/// A budget for a pipeline run: targets below, around and above the pinned and candidate
/// totals; sometimes a reserve, reserved slots, a margin; rarely pinned items over budget.
fn pipeline_budget(rng: &mut Rng, items: &[ItemSpec], plain: bool) -> BudgetSpec {
    let pinned: i64 = items
        .iter()
        .filter(|i| i.pinned && i.tokens >= 0)
        .map(|i| i.tokens)
        .sum();
    let rest: i64 = items
        .iter()
        .filter(|i| !i.pinned && i.tokens > 0)
        .map(|i| i.tokens)
        .sum();
    let target = match rng.below(6) {
        0 | 1 => rng.range(0, pinned + rest),
        2 => rng.range(0, pinned),
        3 => pinned + rest + rng.range(0, 50),
        4 => rng.range(0, 100),
        // A little room above the pinned items: count-quota commits overshoot it.
        _ => pinned + rng.range(0, 300),
    };
    let mut max = target
        + if rng.chance(0.3) {
            0
        } else {
            rng.range(0, 500)
        };
    let reserve = if rng.chance(0.5) {
        0
    } else {
        rng.range(0, max.min(200))
    };
    if pinned > max - reserve && rng.chance(0.9) {
        max = pinned + reserve + rng.range(0, 100);
    }
    let (slots, margin) = if plain {
        (Vec::new(), 0.0)
    } else {
        // ctxpack rejects slots that do not fit the target and the room left by the
        // reserve (they could never be honoured); two slots of at most half of that fit.
        let room = target.min(max - reserve) / 2;
        let slots = if rng.chance(0.15) {
            distinct_kinds(rng, 2)
                .into_iter()
                .map(|k| (k, rng.range(0, room.min(200))))
                .collect()
        } else {
            Vec::new()
        };
        let margin = if rng.chance(0.15) {
            let u = rng.unit();
            *rng.pick(&[5.0, 10.0, 12.5, 33.3, 99.0, 100.0, 100.0 * u])
        } else {
            0.0
        };
        (slots, margin)
    };
    BudgetSpec {
        max,
        target,
        reserve,
        slots,
        margin,
    }
}
