//! The one-shot run's columnar path: the caller's descriptors read straight into the
//! columns of a columnar run (`pipeline/columnar.rs`), without building items, copying a
//! string or allocating per item. `ctxpack_pipeline_run_descs` tries it first and takes
//! the general path (items built as a push builds them) whenever it declines.

use crate::cancel;
use crate::ffi::items::{ctxpack_item_desc, ctxpack_metadata_entry, in_place};
use crate::ffi::strings::{array, ctxpack_str, to_str, to_str_hashed, to_str_with_head};
use crate::model::{ContextKind, ContextSource};
use crate::pipeline::{
    ColumnPlan, Columns, KindName, PerItemField, TagSum, HAS_PRIORITY, HAS_TIMESTAMP, PINNED,
    SCORERS_MAX,
};
use crate::scorer::TagScorer;

/// The descriptors read between two looks at the run's cancellation token (a cancelled
/// run declines: the general path reports it).
const CANCEL_CHECK_ITEMS: usize = 1 << 16;

/// Reads `count` descriptors into `columns` (emptied first): the columns `plan` reads.
/// `None` when some descriptor needs the general path:
///
/// * one the columnar run does not take: a group key, variants, or an encoding (the
///   library would count its tokens);
/// * one that is invalid: the general path then reports it with its own message;
/// * an array that is not read in place (another `struct_size`, or misaligned), columns
///   that cannot be allocated, or a run cancelled (the thread's cancellation token, seen
///   every 65 536 descriptors).
///
/// Every value read is the one the general path's items would hold, so the run over the
/// columns is the run over those items.
///
/// # Safety
/// `descs` is NULL or holds `count` descriptors (the caller's contract).
pub(super) unsafe fn read_columns(
    plan: &ColumnPlan<'_>,
    descs: *const ctxpack_item_desc,
    count: usize,
    columns: &mut Columns,
) -> Option<()> {
    columns.clear();
    if count == 0 {
        return Some(());
    }
    // A count whose descriptors could not fit the address space is the general path's
    // error to report.
    if count > isize::MAX as usize / size_of::<ctxpack_item_desc>() {
        return None;
    }
    // SAFETY: `descs` holds `count` descriptors (their bytes fit the address space, checked
    // above); `in_place` accepts the array (not NULL, aligned, element 0 of this library's
    // size), so it is `count` elements of this type.
    let descs = unsafe {
        in_place(descs, 0)?;
        std::slice::from_raw_parts(descs, count)
    };
    let fields = plan.per_item();
    let width = fields.len();
    let Columns {
        tokens,
        flags,
        timestamps,
        priorities,
        field_scores,
        hashes,
    } = columns;
    // Each column is written in place, then given its length once every row is written.
    let tokens_out = spare(tokens, count)?;
    let flags_out = spare(flags, count)?;
    let scores_out = spare(field_scores, count.checked_mul(width)?)?;
    let (read_timestamps, read_priorities, read_contents) = (
        plan.reads_timestamps(),
        plan.reads_priorities(),
        plan.reads_contents(),
    );
    let mut timestamps_out = optional_spare(read_timestamps, timestamps, count)?;
    let mut priorities_out = optional_spare(read_priorities, priorities, count)?;
    let mut hashes_out = optional_spare(read_contents, hashes, count)?;
    let mut tags = TagReader::new(plan);
    let (mut kinds, mut sources) = (Memo::new(), Memo::new());
    for (i, d) in descs.iter().enumerate() {
        if i % CANCEL_CHECK_ITEMS == 0 {
            cancel::check("").ok()?;
        }
        if d.struct_size != size_of::<ctxpack_item_desc>()
            || (d.group.len | d.encoding.len | d.variant_count) != 0
        {
            return None;
        }
        let bits = flag_bits(d)?;
        // SAFETY (the strings): valid for their lengths by the caller's contract. The hash
        // is only for Deduplicate.
        let content = match &mut hashes_out {
            Some(out) => {
                let (content, hash) = unsafe { to_str_hashed(&d.content, "content") }.ok()?;
                out[i].write(hash);
                content
            }
            None => unsafe { to_str(&d.content, "content") }.ok()?,
        };
        if content.is_empty() {
            return None;
        }
        // SAFETY: as for the content.
        let kind = kinds.get_or_read(&d.kind, |s| unsafe { read_kind(s) })?;
        // SAFETY: as for the content.
        sources.get_or_read(&d.source, |s| unsafe { read_source(s) })?;
        // SAFETY: the arrays and their strings are valid by the caller's contract.
        let tag_sums = unsafe { tags.sum(d.tags, d.tag_count) }?;
        if d.metadata_count != 0 {
            // SAFETY: as for the tags.
            unsafe { check_metadata(d.metadata, d.metadata_count) }?;
        }
        let hint = (bits & HAS_HINT != 0).then_some(d.future_relevance_hint);
        let row = &mut scores_out[i * width..][..width];
        for ((out, field), sum) in row.iter_mut().zip(fields).zip(tag_sums) {
            out.write(field.score(kind, hint, *sum));
        }
        tokens_out[i].write(d.tokens);
        flags_out[i].write(bits & (PINNED | HAS_TIMESTAMP | HAS_PRIORITY));
        if let Some(out) = &mut timestamps_out {
            out[i].write(d.timestamp_ns);
        }
        if let Some(out) = &mut priorities_out {
            out[i].write(d.priority);
        }
    }
    // SAFETY: the loop wrote every one of the first `count` values of each column (and
    // `count * width` scores) into capacity `spare` reserved.
    unsafe {
        tokens.set_len(count);
        flags.set_len(count);
        field_scores.set_len(count * width);
        for (column, read) in [(timestamps, read_timestamps), (priorities, read_priorities)] {
            if read {
                column.set_len(count);
            }
        }
        if read_contents {
            hashes.set_len(count);
        }
    }
    Some(())
}

/// [`spare`] when the plan reads the column, `Some(None)` when it does not.
fn optional_spare<T>(
    read: bool,
    v: &mut Vec<T>,
    n: usize,
) -> Option<Option<&mut [std::mem::MaybeUninit<T>]>> {
    match read {
        true => spare(v, n).map(Some),
        false => Some(None),
    }
}

/// The room for `n` values of the empty column `v` (reserved when it has less), to be
/// written before [`Vec::set_len`] gives it that length; `None` when it cannot be
/// allocated.
fn spare<T>(v: &mut Vec<T>, n: usize) -> Option<&mut [std::mem::MaybeUninit<T>]> {
    v.try_reserve_exact(n).ok()?;
    v.spare_capacity_mut().get_mut(..n)
}

/// [`flag_bits`]: the item has a future-relevance hint (not a column's flag).
const HAS_HINT: u8 = 8;

/// Where a descriptor's five flag bytes and its three reserved bytes are: eight
/// consecutive bytes (checked at compile time).
const FLAG_BYTES_AT: usize = std::mem::offset_of!(ctxpack_item_desc, pinned);
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(ctxpack_item_desc, has_priority) == FLAG_BYTES_AT + 1);
    assert!(offset_of!(ctxpack_item_desc, has_timestamp) == FLAG_BYTES_AT + 2);
    assert!(offset_of!(ctxpack_item_desc, has_future_relevance_hint) == FLAG_BYTES_AT + 3);
    assert!(offset_of!(ctxpack_item_desc, has_original_tokens) == FLAG_BYTES_AT + 4);
    assert!(offset_of!(ctxpack_item_desc, reserved) == FLAG_BYTES_AT + 5);
};

/// The descriptor's flags as [`PINNED`], [`HAS_TIMESTAMP`], [`HAS_PRIORITY`] and
/// [`HAS_HINT`] bits, or `None` when a flag byte is neither 0 nor 1 or a reserved byte is
/// not zero: the five flag bytes and the three reserved ones are read and checked as one
/// word.
#[inline(always)]
fn flag_bits(d: &ctxpack_item_desc) -> Option<u8> {
    // SAFETY: the eight bytes from `pinned` on are fields of `d` (see `FLAG_BYTES_AT`),
    // initialised `u8`s.
    let bytes = unsafe {
        std::ptr::from_ref(d)
            .cast::<u8>()
            .add(FLAG_BYTES_AT)
            .cast::<[u8; 8]>()
            .read()
    };
    let word = u64::from_le_bytes(bytes);
    if word & !0x01_01_01_01_01 != 0 {
        return None;
    }
    let bit = |byte: u32, to: u8| if (word >> (8 * byte)) & 1 != 0 { to } else { 0 };
    Some(bit(0, PINNED) | bit(1, HAS_PRIORITY) | bit(2, HAS_TIMESTAMP) | bit(3, HAS_HINT))
}

/// What a kind string reads as: the well-known kind it spells, or a custom spelling;
/// `None` when it is invalid (not UTF-8, or blank).
///
/// # Safety
/// As for [`to_str`].
#[inline]
unsafe fn read_kind<'a>(s: &ctxpack_str) -> Option<KindName<'a>> {
    // SAFETY: forwarded from the caller.
    let name = unsafe { to_str(s, "kind") }.ok()?;
    let known = match name {
        "" => ContextKind::default().known_index(),
        name => ContextKind::well_known(name).and_then(|kind| kind.known_index()),
    };
    match known {
        Some(index) => Some(KindName::Known(index)),
        None if ContextKind::accepts(name) => Some(KindName::Custom(name)),
        None => None,
    }
}

/// `Some` when a source string is valid (UTF-8 and empty, or not blank).
///
/// # Safety
/// As for [`to_str`].
#[inline]
unsafe fn read_source(s: &ctxpack_str) -> Option<()> {
    // SAFETY: forwarded from the caller.
    match unsafe { to_str(s, "source") }.ok()? {
        "" => Some(()),
        name if ContextSource::well_known(name).is_some() || ContextSource::accepts(name) => {
            Some(())
        }
        _ => None,
    }
}

/// Slots of a [`Memo`]: a power of two.
const MEMO_SLOTS: usize = 8;

/// What the last strings read at a few addresses gave, so that a string the caller shares
/// between items (most hosts pass each kind, source or tag as one constant) is read once:
/// during the call the caller's strings do not change, so the same address and length
/// are the same bytes. A string at a new address costs one probe and one store.
struct Memo<V: Copy> {
    /// (address, length, value); an empty slot has a length no string has.
    slots: [(usize, usize, V); MEMO_SLOTS],
}

impl<V: Copy + Default> Memo<V> {
    fn new() -> Self {
        Self {
            slots: [(0, usize::MAX, V::default()); MEMO_SLOTS],
        }
    }

    /// The value `read` gives for `s`, from the memo when `s` was read before; `None`
    /// (not remembered) when `read` refuses it.
    #[inline(always)]
    fn get_or_read(
        &mut self,
        s: &ctxpack_str,
        read: impl FnOnce(&ctxpack_str) -> Option<V>,
    ) -> Option<V> {
        if s.len > isize::MAX as usize {
            // No string is this long (`read` refuses it), and an empty slot's length is.
            return read(s);
        }
        let address = s.ptr as usize;
        let slot = &mut self.slots[(address >> 4 ^ address >> 10 ^ s.len) % MEMO_SLOTS];
        if slot.0 == address && slot.1 == s.len {
            return Some(slot.2);
        }
        let value = read(s)?;
        *slot = (address, s.len, value);
        Some(value)
    }
}

/// Checks an item's tags and sums them up for the plan's Tag scorers: the [`TagSum`]
/// of every per-item scorer (the entries of the others are left as they are).
struct TagReader<'p> {
    /// The plan's per-item scorers.
    fields: &'p [PerItemField<'p>],
    /// The positions of the Tag scorers among them.
    positions: &'p [usize],
    /// The one Tag scorer and its position, when there is exactly one (most plans).
    single: Option<(usize, &'p TagScorer)>,
    /// The last item's sums, one per per-item scorer.
    sums: [TagSum; SCORERS_MAX],
    /// With a single Tag scorer: the weight each tag string read before matched.
    memo: Memo<Option<f64>>,
}

impl<'p> TagReader<'p> {
    fn new(plan: &'p ColumnPlan<'p>) -> Self {
        let (fields, positions) = (plan.per_item(), plan.tag_positions());
        let single = match positions {
            &[k] => match fields[k] {
                PerItemField::Tag(scorer) => Some((k, scorer)),
                _ => None,
            },
            _ => None,
        };
        Self {
            fields,
            positions,
            single,
            sums: [TagSum::default(); SCORERS_MAX],
            memo: Memo::new(),
        }
    }

    /// Checks the item's `count` tags at `tags` and returns the sums of the per-item
    /// scorers: for a Tag scorer, the tag count and the sum of the weights it gives the
    /// tags, added in tag order from 0.0 as `TagScorer` adds them. `None` when the array
    /// or a tag is invalid.
    ///
    /// # Safety
    /// `tags` is NULL or holds `count` strings, each valid for its length.
    #[inline(always)]
    unsafe fn sum(&mut self, tags: *const ctxpack_str, count: usize) -> Option<&[TagSum]> {
        for &k in self.positions {
            self.sums[k] = TagSum {
                count,
                matched: 0.0,
            };
        }
        // SAFETY: forwarded from the caller.
        let tags = unsafe { array(tags, count, "tags") }.ok()?;
        if let Some((k, scorer)) = self.single {
            for t in tags {
                // SAFETY: forwarded from the caller.
                let read = |t: &ctxpack_str| unsafe { read_tag(t, scorer) };
                if let Some(weight) = self.memo.get_or_read(t, read)? {
                    self.sums[k].matched += weight;
                }
            }
        } else {
            for t in tags {
                // SAFETY: forwarded from the caller.
                let (tag, head) = unsafe { to_str_with_head(t, "tag") }.ok()?;
                for &k in self.positions {
                    if let PerItemField::Tag(scorer) = self.fields[k] {
                        if let Some(weight) = scorer.weight_with_head(tag.as_bytes(), head) {
                            self.sums[k].matched += weight;
                        }
                    }
                }
            }
        }
        Some(&self.sums)
    }
}

/// Checks one tag: the weight `scorer` gives it (`Some(None)` when it has none), or
/// `None` when it is invalid.
///
/// # Safety
/// As for [`to_str`].
#[inline(always)]
unsafe fn read_tag(t: &ctxpack_str, scorer: &TagScorer) -> Option<Option<f64>> {
    // SAFETY: forwarded from the caller.
    let (tag, head) = unsafe { to_str_with_head(t, "tag") }.ok()?;
    Some(scorer.weight_with_head(tag.as_bytes(), head))
}

/// Checks the item's `count` metadata entries at `metadata` (no scorer of a columnar run
/// reads them): `None` when the array or a key or value is invalid.
///
/// # Safety
/// `metadata` is NULL or holds `count` entries, their strings valid for their lengths.
#[inline]
unsafe fn check_metadata(metadata: *const ctxpack_metadata_entry, count: usize) -> Option<()> {
    // SAFETY: forwarded from the caller.
    for e in unsafe { array(metadata, count, "metadata") }.ok()? {
        // SAFETY: forwarded from the caller.
        unsafe { to_str(&e.key, "key").and(to_str(&e.value, "value")) }.ok()?;
    }
    Some(())
}

/// The content of descriptor `index`, which [`read_columns`] accepted: for the run's
/// content comparisons, which happen only between items whose hashes match. (Read again
/// rather than kept in a column; "" should the caller have changed it meanwhile.)
///
/// # Safety
/// As for [`read_columns`], and the descriptors are unchanged since it read them.
pub(super) unsafe fn content<'a>(descs: *const ctxpack_item_desc, index: usize) -> &'a str {
    // SAFETY: forwarded from the caller; `read_columns` read this descriptor in place.
    unsafe { in_place(descs, index).and_then(|d| to_str(&d.content, "content").ok()) }.unwrap_or("")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ffi::items::items_from_descs;
    use crate::model::{ContextBudget, OverflowStrategy};
    use crate::pipeline::{ColumnarScratch, Pipeline};
    use crate::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
    use crate::scorer::{
        CompositeScorer, FrequencyScorer, KindScorer, PriorityScorer, RecencyScorer,
        ReflexiveScorer, Scorer, TagScorer,
    };
    use crate::slicer::{GreedySlice, KnapsackSlice, Slicer};
    use crate::testutil::Rng;

    const TAGS: [&str; 6] = ["a", "b", "plan", "Plan", "a-tag-longer-than-16", "é"];
    const KINDS: [&str; 9] = [
        "",
        "Message",
        "ToolOutput",
        "Document",
        "Memory",
        "SystemPrompt",
        "message",
        "Custom",
        " ",
    ];
    const SOURCES: [&str; 6] = ["", "Chat", "Tool", "Rag", "web", "\t"];
    const WORDS: [&str; 5] = ["alpha", "beta", "gamma", "delta", "é"];

    /// A generated input: descriptors and the strings they point to.
    struct Input {
        descs: Vec<ctxpack_item_desc>,
        _contents: Vec<String>,
        _tags: Vec<Vec<ctxpack_str>>,
        _metadata: Vec<Vec<ctxpack_metadata_entry>>,
    }

    fn s(text: &str) -> ctxpack_str {
        ctxpack_str {
            ptr: text.as_ptr().cast(),
            len: text.len(),
        }
    }

    /// `n` descriptors with every field the columnar run reads varied: duplicate and
    /// non-ASCII contents, negative, zero and huge token counts, pinned items, ties and
    /// gaps in timestamps and priorities, hints outside [0, 1] and not finite, custom and
    /// invalid kinds and sources, tags with case variants, metadata; now and then an
    /// invalid descriptor or one the columnar run declines (a group key).
    fn input(rng: &mut Rng, n: usize) -> Input {
        let mut contents: Vec<String> = Vec::with_capacity(n);
        for i in 0..n {
            let text = match rng.below(8) {
                0 if i > 0 => contents[rng.below(i)].clone(),
                1 if rng.chance(0.05) => String::new(),
                _ => (0..1 + rng.below(4))
                    .map(|_| *rng.pick(&WORDS))
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            contents.push(text);
        }
        let tags: Vec<Vec<ctxpack_str>> = (0..n)
            .map(|_| {
                (0..rng.below(4))
                    .map(|_| s(TAGS[rng.below(TAGS.len())]))
                    .collect()
            })
            .collect();
        let metadata: Vec<Vec<ctxpack_metadata_entry>> = (0..n)
            .map(|_| match rng.chance(0.2) {
                true => vec![ctxpack_metadata_entry {
                    key: s("origin"),
                    value: s("test"),
                }],
                false => Vec::new(),
            })
            .collect();
        let odd = rng.chance(0.1);
        // A third of the inputs are a transcript: timestamps in input order (several items
        // to a timestamp), which the placer orders without sorting.
        let transcript = rng.chance(0.3);
        // Token counts that are powers of two make equal densities of different scores
        // (a score and its double over a count and its double), whose order the greedy
        // fill takes from Sort's.
        let coarse = rng.chance(0.3);
        let descs = (0..n)
            .map(|i| {
                // SAFETY: all-zero is a valid descriptor.
                let mut d: ctxpack_item_desc = unsafe { std::mem::zeroed() };
                d.struct_size = std::mem::size_of::<ctxpack_item_desc>();
                d.content = s(&contents[i]);
                d.tokens = match rng.below(20) {
                    0 => -rng.range(1, 5),
                    1 => 0,
                    2 if rng.chance(0.1) => i64::MAX / 2,
                    _ if coarse => 1 << rng.below(4),
                    _ => rng.range(1, 60),
                };
                d.kind = s(KINDS[rng.below(if odd { 9 } else { 8 })]);
                d.source = s(SOURCES[rng.below(if odd { 6 } else { 5 })]);
                d.tags = if tags[i].is_empty() {
                    std::ptr::null()
                } else {
                    tags[i].as_ptr()
                };
                d.tag_count = tags[i].len();
                d.metadata = if metadata[i].is_empty() {
                    std::ptr::null()
                } else {
                    metadata[i].as_ptr()
                };
                d.metadata_count = metadata[i].len();
                d.pinned = u8::from(rng.chance(0.1));
                d.has_priority = u8::from(rng.chance(0.8));
                d.priority = match rng.chance(0.1) {
                    true => rng.range(-1_000_000, 1_000_000),
                    false => rng.range(-2, 10),
                };
                d.has_timestamp = u8::from(rng.chance(0.85));
                d.timestamp_ns = match rng.chance(0.2) && !transcript {
                    true => rng.range(-100, 100),
                    false => i as i64 / 3,
                };
                d.has_future_relevance_hint = u8::from(rng.chance(0.8));
                d.future_relevance_hint = match rng.below(12) {
                    0 => f64::NAN,
                    1 => f64::INFINITY,
                    2 => -0.5,
                    3 => 1.5,
                    _ => rng.unit(),
                };
                d.has_original_tokens = u8::from(rng.chance(0.1));
                if odd && rng.chance(0.05) {
                    d.has_priority = 2; // invalid: the general path reports it
                }
                if odd && rng.chance(0.05) {
                    d.group = s("call-1"); // declined: groups need the general path
                }
                d
            })
            .collect();
        Input {
            descs,
            _contents: contents,
            _tags: tags,
            _metadata: metadata,
        }
    }

    fn leaf(rng: &mut Rng) -> Arc<dyn Scorer> {
        match rng.below(7) {
            0 => Arc::new(RecencyScorer::new()),
            1 => Arc::new(PriorityScorer::new()),
            2 => Arc::new(KindScorer::new()),
            3 => {
                let kinds = ["Message", "custom", "Memory"];
                let weights = kinds
                    .iter()
                    .map(|k| (crate::ContextKind::new(*k).unwrap(), rng.unit() * 2.0))
                    .collect();
                Arc::new(KindScorer::with_weights(weights).unwrap())
            }
            4 => {
                let mut weights = Vec::new();
                for tag in ["a", "plan", "a-tag-longer-than-16", "é", "unused"] {
                    if rng.chance(0.7) {
                        let w = if rng.chance(0.2) { 0.0 } else { rng.unit() };
                        weights.push((tag.to_string(), w));
                    }
                }
                Arc::new(TagScorer::new(weights).unwrap())
            }
            5 => Arc::new(ReflexiveScorer::new()),
            _ if rng.chance(0.3) => Arc::new(FrequencyScorer::new()),
            _ => Arc::new(ReflexiveScorer::new()),
        }
    }

    fn pipeline(rng: &mut Rng) -> Pipeline {
        let scorer = match rng.chance(0.3) {
            true => leaf(rng),
            false => {
                let children = (0..1 + rng.below(6))
                    .map(|_| (leaf(rng), 0.1 + rng.unit() * 3.0))
                    .collect();
                Arc::new(CompositeScorer::new(children).unwrap())
            }
        };
        let slicer: Arc<dyn Slicer> = match rng.chance(0.05) {
            true => Arc::new(KnapsackSlice::new(5).unwrap()),
            false => Arc::new(GreedySlice::new()),
        };
        let placer: Arc<dyn Placer> = match rng.chance(0.5) {
            true => Arc::new(ChronologicalPlacer::new()),
            false => Arc::new(UShapedPlacer::new()),
        };
        let strategy = *rng.pick(&[
            OverflowStrategy::Throw,
            OverflowStrategy::Truncate,
            OverflowStrategy::Proceed,
        ]);
        Pipeline::builder()
            .scorer(scorer)
            .slicer(slicer)
            .placer(placer)
            .deduplication(rng.chance(0.8))
            .pinned_first(rng.chance(0.3))
            .overflow_strategy(strategy)
            .build()
            .unwrap()
    }

    fn budget(rng: &mut Rng, descs: &[ctxpack_item_desc]) -> ContextBudget {
        let total: i64 = descs.iter().map(|d| d.tokens.clamp(0, 1000)).sum();
        let max = rng.range(0, 2 * total + 1);
        let target = rng.range(0, max);
        let reserve = rng.range(0, max - target);
        let slots = match rng.chance(0.2) {
            true => {
                let kind = crate::ContextKind::new(*rng.pick(&["Memory", "Custom"])).unwrap();
                vec![(kind, rng.range(0, target.min(max - reserve).min(30)))]
            }
            false => Vec::new(),
        };
        let margin = if rng.chance(0.2) {
            rng.unit() * 30.0
        } else {
            0.0
        };
        ContextBudget::with_all(max, target, reserve, slots, margin).unwrap()
    }

    /// A cancelled token declines the columnar run (while the descriptors are read, and
    /// between the stages); a live one changes nothing.
    #[test]
    fn a_cancelled_run_declines() {
        let mut rng = Rng::new(7);
        let input = input(&mut rng, 40);
        let weights = vec![("a".to_string(), 1.0), ("plan".to_string(), 0.5)];
        let children: Vec<(Arc<dyn Scorer>, f64)> = vec![
            (Arc::new(RecencyScorer::new()), 2.0),
            (Arc::new(TagScorer::new(weights).unwrap()), 1.0),
        ];
        let pipeline = Pipeline::builder()
            .scorer(Arc::new(CompositeScorer::new(children).unwrap()))
            .slicer(Arc::new(GreedySlice::new()))
            .placer(Arc::new(ChronologicalPlacer::new()))
            .overflow_strategy(OverflowStrategy::Proceed)
            .build()
            .unwrap();
        let budget = ContextBudget::new(10_000, 10_000).unwrap();
        let plan = pipeline.column_plan().unwrap();
        let (descs, count) = (input.descs.as_ptr(), input.descs.len());
        let content_of = |i: usize| unsafe { content(descs, i) };
        let token = crate::CancelToken::new();
        let _scope = crate::cancel::Scope::enter(&token);
        // SAFETY: the descriptors and their strings live in `input`.
        let ColumnarScratch {
            mut columns,
            mut stages,
        } = ColumnarScratch::default();
        unsafe { read_columns(&plan, descs, count, &mut columns) }.unwrap();
        assert!(plan
            .run(&columns, content_of, &budget, &mut stages)
            .is_some());
        token.cancel();
        assert!(plan
            .run(&columns, content_of, &budget, &mut stages)
            .is_none());
        // SAFETY: as above.
        assert!(unsafe { read_columns(&plan, descs, count, &mut columns) }.is_none());
    }

    /// A count of descriptors no memory holds declines before any is read past the first
    /// (the general path reports it): one whose bytes exceed the address space, and one
    /// whose columns cannot be allocated.
    #[test]
    fn an_impossible_count_declines() {
        let mut rng = Rng::new(3);
        let input = input(&mut rng, 1);
        let pipeline = Pipeline::builder()
            .scorer(Arc::new(RecencyScorer::new()))
            .slicer(Arc::new(GreedySlice::new()))
            .placer(Arc::new(ChronologicalPlacer::new()))
            .build()
            .unwrap();
        let plan = pipeline.column_plan().unwrap();
        let mut columns = Columns::default();
        let fits = isize::MAX as usize / size_of::<ctxpack_item_desc>();
        for count in [usize::MAX, fits + 1, fits] {
            // SAFETY: a contract the caller breaks: the call must not read past element 0
            // (it fails to allocate the columns, or refuses the count, first).
            let read = unsafe { read_columns(&plan, input.descs.as_ptr(), count, &mut columns) };
            assert!(read.is_none(), "count {count}");
        }
    }

    /// Runs `plan` over the descriptors in `scratch`: the selection, or `None` where the
    /// columnar path declines.
    ///
    /// # Safety
    /// `descs` holds `count` descriptors.
    unsafe fn run_columnar(
        plan: &ColumnPlan<'_>,
        descs: *const ctxpack_item_desc,
        count: usize,
        budget: &ContextBudget,
        scratch: &mut ColumnarScratch,
    ) -> Option<crate::pipeline::Selection> {
        // SAFETY: forwarded from the caller.
        unsafe { read_columns(plan, descs, count, &mut scratch.columns) }?;
        let content_of = |i: usize| unsafe { content(descs, i) };
        plan.run(&scratch.columns, content_of, budget, &mut scratch.stages)?;
        Some(scratch.stages.take_selection())
    }

    /// The one-shot run's columnar path gives exactly the general path's selection on
    /// every input it takes, declines only where it must, and takes most inputs; with
    /// fresh buffers, and with buffers every earlier case used (as a reused result's).
    #[test]
    fn columnar_runs_equal_the_general_path() {
        let (mut taken, mut declined_eligible) = (0, 0);
        let mut reused = ColumnarScratch::default();
        for seed in 0..3000u64 {
            let mut rng = Rng::new(seed);
            let n = match seed % 10 {
                0 => rng.below(3),
                9 => 300 + rng.below(300),
                _ => rng.below(60),
            };
            let input = input(&mut rng, n);
            let pipeline = pipeline(&mut rng);
            let budget = budget(&mut rng, &input.descs);
            let (descs, count) = (input.descs.as_ptr(), input.descs.len());
            // SAFETY: the descriptors and their strings live in `input`.
            let general = unsafe { items_from_descs(descs, count) }
                .map_err(|e| e.message)
                .and_then(|items| pipeline.run(&items, &budget).map_err(|e| e.to_string()));
            let Some(plan) = pipeline.column_plan() else {
                continue;
            };
            // SAFETY (both): as above.
            let fresh = &mut ColumnarScratch::for_one_run();
            let columnar = unsafe { run_columnar(&plan, descs, count, &budget, fresh) };
            let again = unsafe { run_columnar(&plan, descs, count, &budget, &mut reused) };
            assert_eq!(again, columnar, "seed {seed}: reused buffers");
            match (&columnar, &general) {
                (Some(c), Ok(g)) => {
                    taken += 1;
                    assert_eq!(c.indices, g.indices, "seed {seed}");
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&c.scores), bits(&g.scores), "seed {seed}");
                    assert_eq!(c.reasons, g.reasons, "seed {seed}");
                    assert!(c.forms.is_empty() && g.forms.is_empty(), "seed {seed}");
                    assert!(c.overflow.is_none() && g.overflow.is_none(), "seed {seed}");
                }
                (Some(_), Err(e)) => {
                    panic!("seed {seed}: columnar ran, the general path failed: {e}")
                }
                (None, Ok(g)) => {
                    let group = input.descs.iter().any(|d| d.group.len != 0);
                    // Declining a run that succeeds is right only for an input it does not
                    // take, or a merged list over the target (Proceed's event, or
                    // Truncate's drops).
                    let over = g.overflow.is_some()
                        || pipeline.overflow_strategy() == OverflowStrategy::Truncate;
                    assert!(group || over, "seed {seed}: declined a run it could make");
                    declined_eligible += usize::from(!group);
                }
                (None, Err(_)) => {}
            }
        }
        // About half the pipelines or inputs are ones it does not take, or runs that fail.
        assert!(taken > 1200, "the columnar path ran {taken} times");
        assert!(
            declined_eligible < taken / 5,
            "declined {declined_eligible} times"
        );
    }
}
