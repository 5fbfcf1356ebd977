//! ContextItem: one candidate piece of context (spec 01 §1).

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Error, Result};
use crate::hash::hash_bytes;

use crate::model::shared_store::SharedStore;
use crate::model::store::{ItemStrings, Tags, TextPacker, TextStore};
use crate::model::variant::{self, Variant};
use crate::model::{ContextKind, ContextSource};
use crate::tokenizer::Encoding;

/// One candidate piece of context. Immutable once built; its identity is its position in the
/// caller's input (decision D15 in docs/decisions.md), never its content.
///
/// ```
/// use ctxpack::{ContextItem, ContextKind, ErrorCode};
///
/// let item = ContextItem::builder("Refund policy: 30 days.", 12)
///     .kind(ContextKind::new("Document")?)
///     .tags(["billing"])
///     .priority(5)
///     .timestamp(1_700_000_000_000_000_000) // nanoseconds since the Unix epoch, UTC
///     .build()?;
/// assert_eq!(item.tokens(), 12);
/// assert_eq!(item.kind().as_str(), "Document");
/// assert_eq!(item.kind(), &ContextKind::new("document")?); // ASCII case-insensitive
/// assert_eq!(item.priority(), Some(5));
/// assert!(!item.pinned());
///
/// // Invalid input is an error, never a panic.
/// let err = ContextItem::new("", 1).unwrap_err();
/// assert_eq!(err.code(), ErrorCode::EmptyContent);
/// # Ok::<(), ctxpack::Error>(())
/// ```
///
/// Stored compactly (128 bytes on 64-bit targets, aligned to 64: two cache lines, the
/// fields the scorers read in the first): every pipeline stage walks the items, so fewer
/// bytes per item means fewer cache lines per pass. The content, tags and group
/// key live in a text store shared with the other items pushed in the same batch (one
/// buffer, `docs/design.md`, "Item storage"), so cloning an item or dropping a batch
/// does not copy or free strings one by one. Optional numbers are a value and a flag bit
/// (the value is 0 when absent, so equality is unchanged), and the rarely set fields
/// (metadata, the variants) share one box that exists only when one of them is set.
#[derive(Clone)]
#[repr(C, align(64))]
pub struct ContextItem {
    // The first cache line holds every field a scorer reads (the composite scorers walk
    // the items once per scorer), the second what Classify, Deduplicate and the
    // accessors read once per run.
    /// The shared strings; `None` only while a batch is being packed (never seen outside
    /// the function packing it), when every string reads as empty.
    store: Option<SharedStore>,
    timestamp: i64,
    priority: i64,
    future_relevance_hint: f64,
    kind: ContextKind,
    /// Index of the item's first tag in the store's span table; the group key, when
    /// [`HAS_GROUP`] is set, follows the tags.
    first_string: u32,
    tag_count: u32,
    /// [`PINNED`] and the `HAS_…` bits of the optional fields.
    flags: u8,
    tokens: i64,
    /// `hash_bytes(content)`, computed once when the item is built (while the content is
    /// still in the cache), so Deduplicate does not read every content again.
    content_hash: u64,
    /// Byte offsets of the content in the store.
    content: (usize, usize),
    source: ContextSource,
    /// Metadata and variants: `None` when both are empty, never `Some` of an empty
    /// [`Extra`]. Boxed on purpose: 8 bytes in the item for fields most items leave
    /// empty.
    extra: Option<Box<Extra>>,
    original_tokens: i64,
}

const PINNED: u8 = 1;
const HAS_PRIORITY: u8 = 2;
const HAS_TIMESTAMP: u8 = 4;
const HAS_HINT: u8 = 8;
const HAS_ORIGINAL_TOKENS: u8 = 16;
/// Set exactly when the item has a group key, so that "is this item grouped?" never
/// reads the store.
const HAS_GROUP: u8 = 32;
/// Set exactly when the item has variants (the variant extension), for the same reason.
const HAS_VARIANTS: u8 = 64;

/// The fields of an item that most items leave empty.
#[derive(Debug, Clone, PartialEq, Default)]
struct Extra {
    metadata: BTreeMap<String, String>,
    /// Alternative forms, richest first as given (`docs/variants.md`).
    variants: Box<[Variant]>,
}

/// The map `metadata()` returns for an item without metadata.
static NO_METADATA: BTreeMap<String, String> = BTreeMap::new();

impl ContextItem {
    /// Starts building an item with its two required fields.
    #[inline]
    pub fn builder(content: impl Into<String>, tokens: i64) -> ContextItemBuilder {
        ContextItemBuilder {
            fields: ItemFields {
                content: content.into(),
                tags: Vec::new(),
                group: None,
                values: ItemValues {
                    tokens,
                    ..ItemValues::default()
                },
            },
        }
    }

    /// Starts building an item whose tokens are counted by the library: `encoding`'s exact
    /// count of `content` ([`Encoding::count`]). The count is the content's own; framing a
    /// chat message adds (role markers and the like) is not included.
    ///
    /// ```
    /// # #[cfg(feature = "tokenizer")] {
    /// use ctxpack::tokenizer::Encoding;
    /// use ctxpack::ContextItem;
    ///
    /// let o200k = Encoding::by_name("o200k_base")?;
    /// let item = ContextItem::builder_counted("hello world", o200k).pinned(true).build()?;
    /// assert_eq!(item.tokens(), 2);
    /// # }
    /// # Ok::<(), ctxpack::Error>(())
    /// ```
    ///
    /// Without the `tokenizer` feature no [`Encoding`] exists, so this cannot be called;
    /// [`Encoding::by_name`] answers [`Error::Unsupported`] instead.
    pub fn builder_counted(content: impl Into<String>, encoding: &Encoding) -> ContextItemBuilder {
        let content = content.into();
        // A count never exceeds the content's length in bytes, which fits in an i64.
        let tokens = i64::try_from(encoding.count(&content)).unwrap_or(i64::MAX);
        Self::builder(content, tokens)
    }

    /// Builds an item with every other field at its default.
    pub fn new(content: impl Into<String>, tokens: i64) -> Result<Self> {
        Self::builder(content, tokens).build()
    }

    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The store's contents' buffer, empty while the item's batch is being packed.
    #[inline]
    fn text(&self) -> &str {
        self.store.as_deref().map_or("", TextStore::text)
    }
    /// The store's buffer of tags and group keys, empty while the item's batch is being
    /// packed.
    #[inline]
    fn strings(&self) -> &str {
        self.store.as_deref().map_or("", TextStore::strings)
    }
    /// The span table entries of the item's tags and group key.
    #[inline]
    fn string_spans(&self) -> &[usize] {
        let strings = self.tag_count as usize + usize::from(self.has(HAS_GROUP));
        let first = 2 * self.first_string as usize;
        self.store
            .as_deref()
            .and_then(|s| s.spans().get(first..first + 2 * strings))
            .unwrap_or(&[])
    }

    /// The text (non-empty UTF-8). Deduplication compares it byte for byte.
    #[inline]
    pub fn content(&self) -> &str {
        self.text()
            .get(self.content.0..self.content.1)
            .unwrap_or("")
    }
    /// Caller-counted tokens; negative items are dropped at Classify.
    pub fn tokens(&self) -> i64 {
        self.tokens
    }
    /// The item's kind (default `Message`).
    pub fn kind(&self) -> &ContextKind {
        &self.kind
    }
    /// The item's source (default `Chat`).
    pub fn source(&self) -> &ContextSource {
        &self.source
    }
    /// Optional priority; higher is more important.
    pub fn priority(&self) -> Option<i64> {
        self.has(HAS_PRIORITY).then_some(self.priority)
    }
    /// Tags in the order given, duplicates kept: a view of the item's shared storage.
    #[inline]
    pub fn tags(&self) -> Tags<'_> {
        let spans = self.string_spans();
        Tags::new(
            self.strings(),
            &spans[..spans.len().min(2 * self.tag_count as usize)],
        )
    }
    /// String-to-string metadata; only metadata scorers read it.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        self.extra.as_ref().map_or(&NO_METADATA, |e| &e.metadata)
    }
    /// The group key (non-empty), if the item belongs to a group: items with byte-equal
    /// keys are selected or dropped together (the group extension, `docs/groups.md`).
    pub fn group(&self) -> Option<&str> {
        if !self.has(HAS_GROUP) {
            return None;
        }
        match self.string_spans() {
            [.., start, end] => self.strings().get(*start..*end),
            _ => None,
        }
    }
    /// Whether the item has a group key (a flag test; the key itself is not read).
    #[inline]
    pub fn has_group(&self) -> bool {
        self.has(HAS_GROUP)
    }
    /// Whether the item has a group key or variants — an extension that Classify must
    /// look at (one flag test).
    #[inline]
    pub(crate) fn has_extension(&self) -> bool {
        self.has(HAS_GROUP | HAS_VARIANTS)
    }
    /// The item's cheaper alternative forms (the variant extension, `docs/variants.md`),
    /// in the order given; empty for most items. Variant `i` is form `i + 1`.
    pub fn variants(&self) -> &[Variant] {
        if self.has(HAS_VARIANTS) {
            self.extra.as_ref().map_or(&[], |e| &e.variants)
        } else {
            &[]
        }
    }
    /// Whether the item has variants (a flag test).
    #[inline]
    pub fn has_variants(&self) -> bool {
        self.has(HAS_VARIANTS)
    }
    /// Number of forms: 1 (the item itself) plus its variants.
    #[inline]
    pub fn form_count(&self) -> usize {
        1 + self.variants().len()
    }
    /// The content of form `form`: the item's own for 0, variant `form - 1`'s otherwise.
    /// Panics when `form >= form_count()`.
    pub fn form_content(&self, form: usize) -> &str {
        match form {
            0 => self.content(),
            f => self.variants()[f - 1].content(),
        }
    }
    /// The tokens of form `form` (the item's own for 0). Panics when `form >= form_count()`.
    #[inline]
    pub fn form_tokens(&self, form: usize) -> i64 {
        match form {
            0 => self.tokens,
            f => self.variants()[f - 1].tokens(),
        }
    }
    /// The quality of form `form`: 1.0 for the full form. Panics when
    /// `form >= form_count()`.
    #[inline]
    pub fn form_quality(&self, form: usize) -> f64 {
        match form {
            0 => 1.0,
            f => self.variants()[f - 1].quality(),
        }
    }
    /// Optional timestamp in nanoseconds since the Unix epoch, UTC (decision D14 in
    /// docs/decisions.md).
    pub fn timestamp(&self) -> Option<i64> {
        self.has(HAS_TIMESTAMP).then_some(self.timestamp)
    }
    /// Optional hint of future relevance, conventionally in [0, 1]; any f64 is accepted.
    pub fn future_relevance_hint(&self) -> Option<f64> {
        self.has(HAS_HINT).then_some(self.future_relevance_hint)
    }
    /// Pinned items bypass scoring and slicing and are always placed.
    pub fn pinned(&self) -> bool {
        self.has(PINNED)
    }
    /// Informational token count before any caller-side truncation.
    pub fn original_tokens(&self) -> Option<i64> {
        self.has(HAS_ORIGINAL_TOKENS)
            .then_some(self.original_tokens)
    }

    /// The hash of the content that Deduplicate groups by (equal contents, equal hashes).
    pub(crate) fn content_hash(&self) -> u64 {
        self.content_hash
    }

    /// An item from every field at once, in a store of its own. The caller has checked
    /// that `content` is not empty and that the group key, if any, is not empty.
    pub(crate) fn from_fields(f: ItemFields) -> Result<ContextItem> {
        debug_assert!(!f.content.is_empty());
        debug_assert!(f.group.as_deref() != Some(""));
        let (store, strings) = if f.tags.is_empty() && f.group.is_none() {
            TextPacker::content_only(f.content)
        } else {
            let strings = f.tags.len() + usize::from(f.group.is_some());
            let string_bytes = f.tags.iter().map(String::len).sum::<usize>()
                + f.group.as_deref().map_or(0, str::len);
            let mut packer = TextPacker::with_capacity(f.content.len(), strings, string_bytes)?;
            let mut item = packer.item(&f.content)?;
            for tag in &f.tags {
                packer.tag(&mut item, tag)?;
            }
            if let Some(key) = &f.group {
                packer.group(&mut item, key)?;
            }
            (packer.finish(), item)
        };
        let content = &store.text()[strings.content.0..strings.content.1];
        let hash = hash_bytes(content.as_bytes());
        let mut item = Self::packed(strings, hash, f.values);
        item.store = Some(store);
        Ok(item)
    }

    /// An item whose strings were packed (`strings`) into a store not finished yet: it
    /// reads as empty strings until [`attach`](Self::attach) gives it the store.
    /// `content_hash` is the content's [`hash_bytes`].
    #[inline(always)]
    pub(crate) fn packed(strings: ItemStrings, content_hash: u64, v: ItemValues) -> ContextItem {
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        let has_variants = !v.variants.is_empty();
        let extra = if v.metadata.is_empty() && !has_variants {
            // An empty map and an empty vector own no memory: forgetting them saves the
            // two out-of-line drop calls most items would make here.
            std::mem::forget(v.metadata);
            std::mem::forget(v.variants);
            None
        } else {
            Some(Box::new(Extra {
                metadata: v.metadata,
                variants: v.variants.into_boxed_slice(),
            }))
        };
        ContextItem {
            store: None,
            content: strings.content,
            content_hash,
            tokens: v.tokens,
            kind: v.kind,
            source: v.source,
            first_string: strings.first,
            tag_count: strings.tag_count,
            flags: flag(v.pinned, PINNED)
                | flag(v.priority.is_some(), HAS_PRIORITY)
                | flag(v.timestamp.is_some(), HAS_TIMESTAMP)
                | flag(v.future_relevance_hint.is_some(), HAS_HINT)
                | flag(v.original_tokens.is_some(), HAS_ORIGINAL_TOKENS)
                | flag(strings.has_group, HAS_GROUP)
                | flag(has_variants, HAS_VARIANTS),
            extra,
            priority: v.priority.unwrap_or(0),
            timestamp: v.timestamp.unwrap_or(0),
            original_tokens: v.original_tokens.unwrap_or(0),
            future_relevance_hint: v.future_relevance_hint.unwrap_or(0.0),
        }
    }

    /// Gives an item made by [`packed`](Self::packed) the finished store of its batch
    /// (one reference; [`SharedStore::share_with`] gives a batch's items theirs).
    #[inline]
    pub(crate) fn set_store(&mut self, store: SharedStore) {
        self.store = Some(store);
    }

    /// Takes the item's store reference out (the item then reads as empty strings), for
    /// [`drop_items`](crate::model::drop_items).
    #[inline]
    pub(crate) fn take_store(&mut self) -> Option<SharedStore> {
        self.store.take()
    }
}

/// Every field of a [`ContextItem`] except its strings.
#[derive(Debug, Clone, Default)]
pub(crate) struct ItemValues {
    pub tokens: i64,
    pub kind: ContextKind,
    pub source: ContextSource,
    pub metadata: BTreeMap<String, String>,
    pub priority: Option<i64>,
    pub timestamp: Option<i64>,
    pub future_relevance_hint: Option<f64>,
    pub pinned: bool,
    pub original_tokens: Option<i64>,
    /// The item's variants, already checked ([`variant::check`]).
    pub variants: Vec<Variant>,
}

/// Every field of a [`ContextItem`], for [`ContextItem::from_fields`].
#[derive(Debug, Clone)]
pub(crate) struct ItemFields {
    pub content: String,
    pub tags: Vec<String>,
    /// A non-empty group key (the caller checks that it is not empty).
    pub group: Option<Box<str>>,
    pub values: ItemValues,
}

impl PartialEq for ContextItem {
    /// Field by field: strings by their text (not by where they are stored), a NaN hint
    /// unequal to itself.
    fn eq(&self, other: &Self) -> bool {
        self.flags == other.flags
            && self.tokens == other.tokens
            && self.priority == other.priority
            && self.timestamp == other.timestamp
            && self.original_tokens == other.original_tokens
            && self.future_relevance_hint == other.future_relevance_hint
            && self.content_hash == other.content_hash
            && self.content() == other.content()
            && self.kind == other.kind
            && self.source == other.source
            && self.tags() == other.tags()
            && self.group() == other.group()
            && self.extra == other.extra
    }
}

impl fmt::Debug for ContextItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ContextItem");
        d.field("content", &self.content())
            .field("tokens", &self.tokens)
            .field("kind", &self.kind)
            .field("source", &self.source)
            .field("priority", &self.priority())
            .field("tags", &self.tags())
            .field("metadata", self.metadata())
            .field("timestamp", &self.timestamp())
            .field("future_relevance_hint", &self.future_relevance_hint())
            .field("pinned", &self.pinned())
            .field("original_tokens", &self.original_tokens())
            .field("group", &self.group());
        if self.has_variants() {
            d.field("variants", &self.variants());
        }
        d.finish()
    }
}

/// Builder for [`ContextItem`]; `build` checks that the content is non-empty.
#[derive(Debug, Clone)]
pub struct ContextItemBuilder {
    fields: ItemFields,
}

impl ContextItemBuilder {
    /// Sets the kind.
    #[inline]
    pub fn kind(mut self, kind: ContextKind) -> Self {
        self.fields.values.kind = kind;
        self
    }
    /// Sets the source.
    #[inline]
    pub fn source(mut self, source: ContextSource) -> Self {
        self.fields.values.source = source;
        self
    }
    /// Sets the priority.
    #[inline]
    pub fn priority(mut self, priority: i64) -> Self {
        self.fields.values.priority = Some(priority);
        self
    }
    /// Replaces the tags.
    #[inline]
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.fields.tags = tags.into_iter().map(Into::into).collect();
        self
    }
    /// Adds one metadata entry (a later value for the same key replaces the earlier one).
    #[inline]
    pub fn metadata_entry(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.fields.values.metadata.insert(key.into(), value.into());
        self
    }
    /// Replaces the metadata map.
    #[inline]
    pub fn metadata(mut self, metadata: BTreeMap<String, String>) -> Self {
        self.fields.values.metadata = metadata;
        self
    }
    /// Puts the item in the group named `key`: items whose keys are equal byte for byte
    /// are selected together or not at all, and placed next to each other in input order
    /// (`docs/groups.md`). The key must not be empty (checked by `build`).
    ///
    /// A tool call and its result stay together:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ctxpack::placer::ChronologicalPlacer;
    /// use ctxpack::scorer::ReflexiveScorer;
    /// use ctxpack::slicer::GreedySlice;
    /// use ctxpack::{ContextBudget, ContextItem, Pipeline};
    ///
    /// let item = |c: &str, t, s| ContextItem::builder(c, t).future_relevance_hint(s);
    /// let items = [
    ///     item("user: weather in Oslo?", 10, 0.9).timestamp(1).build()?,
    ///     item("call get_weather(Oslo)", 20, 0.8).group("c1").timestamp(2).build()?,
    ///     item("doc: Oslo guide", 30, 0.5).timestamp(3).build()?,
    ///     item("result: 4 °C, rain", 40, 0.1).group("c1").timestamp(4).build()?,
    /// ];
    /// let pipeline = Pipeline::builder()
    ///     .scorer(Arc::new(ReflexiveScorer::new()))
    ///     .slicer(Arc::new(GreedySlice::new()))
    ///     .placer(Arc::new(ChronologicalPlacer::new()))
    ///     .build()?;
    /// // 80 tokens: the call (60 with its result) does not fit; without the key greedy would
    /// // take the call alone (density 0.04) and drop its result.
    /// assert_eq!(pipeline.run(&items, &ContextBudget::new(80, 80)?)?.indices, [0, 2]);
    /// // 100 tokens: everything, the group at its earliest timestamp, members together.
    /// assert_eq!(pipeline.run(&items, &ContextBudget::new(100, 100)?)?.indices, [0, 1, 3, 2]);
    /// # Ok::<(), ctxpack::Error>(())
    /// ```
    #[inline]
    pub fn group(mut self, key: impl Into<String>) -> Self {
        self.fields.group = Some(key.into().into_boxed_str());
        self
    }
    /// Removes the group key, if any.
    #[inline]
    pub fn no_group(mut self) -> Self {
        self.fields.group = None;
        self
    }
    /// Adds a cheaper alternative form (the variant extension, `docs/variants.md`): used
    /// instead of the item when the selection prefers it, worth the item's score times
    /// `quality`. Variants are numbered in the order added (the first is form 1; the item
    /// itself is form 0). `build` checks every variant: non-empty content, `tokens >= 0`,
    /// `quality` in (0, 1].
    ///
    /// A long tool output kept as its summary instead of being dropped:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ctxpack::placer::ChronologicalPlacer;
    /// use ctxpack::scorer::ReflexiveScorer;
    /// use ctxpack::slicer::GreedySlice;
    /// use ctxpack::{ContextBudget, ContextItem, Pipeline};
    ///
    /// let items = [
    ///     ContextItem::builder("user: why did the build fail?", 10)
    ///         .future_relevance_hint(0.9)
    ///         .build()?,
    ///     ContextItem::builder("<9 000 tokens of test log>", 9000)
    ///         .future_relevance_hint(0.8)
    ///         .variant("3 tests fail in tests/test_currency.py: rounding off by one cent", 20, 0.6)
    ///         .build()?,
    /// ];
    /// let pipeline = Pipeline::builder()
    ///     .scorer(Arc::new(ReflexiveScorer::new()))
    ///     .slicer(Arc::new(GreedySlice::new()))
    ///     .placer(Arc::new(ChronologicalPlacer::new()))
    ///     .build()?;
    /// let selection = pipeline.run(&items, &ContextBudget::new(1000, 1000)?)?;
    /// assert_eq!(selection.indices, [0, 1]);
    /// assert_eq!(selection.forms, [0, 1]); // the log is sent as its summary
    /// assert_eq!(selection.content(&items, 1), items[1].variants()[0].content());
    /// # Ok::<(), ctxpack::Error>(())
    /// ```
    #[inline]
    pub fn variant(mut self, content: impl Into<String>, tokens: i64, quality: f64) -> Self {
        self.fields
            .values
            .variants
            .push(Variant::unchecked(content.into(), tokens, quality));
        self
    }
    /// Adds a variant whose tokens `encoding` counts (`docs/tokenizer.md`).
    pub fn variant_counted(
        self,
        encoding: &crate::tokenizer::Encoding,
        content: impl Into<String>,
        quality: f64,
    ) -> Self {
        let content = content.into();
        let tokens = i64::try_from(encoding.count(&content)).unwrap_or(i64::MAX);
        self.variant(content, tokens, quality)
    }
    /// Removes every variant.
    #[inline]
    pub fn no_variants(mut self) -> Self {
        self.fields.values.variants = Vec::new();
        self
    }
    /// The content set so far (for the helpers that derive variants from it).
    pub(crate) fn content(&self) -> &str {
        &self.fields.content
    }
    /// The tokens set so far.
    pub(crate) fn tokens(&self) -> i64 {
        self.fields.values.tokens
    }
    /// Sets the timestamp (nanoseconds since the Unix epoch, UTC).
    #[inline]
    pub fn timestamp(mut self, unix_nanos: i64) -> Self {
        self.fields.values.timestamp = Some(unix_nanos);
        self
    }
    /// Sets the future-relevance hint.
    #[inline]
    pub fn future_relevance_hint(mut self, hint: f64) -> Self {
        self.fields.values.future_relevance_hint = Some(hint);
        self
    }
    /// Sets the pinned flag.
    #[inline]
    pub fn pinned(mut self, pinned: bool) -> Self {
        self.fields.values.pinned = pinned;
        self
    }
    /// Sets the original token count.
    #[inline]
    pub fn original_tokens(mut self, tokens: i64) -> Self {
        self.fields.values.original_tokens = Some(tokens);
        self
    }
    /// Finishes the item; empty content fails with [`Error::EmptyContent`], an empty group
    /// key or an invalid variant with [`Error::InvalidArgument`] (the message names the
    /// item by the start of its content, the form and the field).
    #[inline]
    pub fn build(self) -> Result<ContextItem> {
        let f = &self.fields;
        if f.content.is_empty() {
            return Err(Error::EmptyContent);
        }
        if f.group.as_deref() == Some("") {
            return Err(Error::InvalidArgument("group key must not be empty".into()));
        }
        if !f.values.variants.is_empty() {
            variant::check(&f.content, &f.values.variants)?;
        }
        ContextItem::from_fields(self.fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_setters() {
        let item = ContextItem::new("hello", 5).unwrap();
        assert_eq!(item.kind().as_str(), "Message");
        assert_eq!(item.source().as_str(), "Chat");
        assert!(item.tags().is_empty() && item.metadata().is_empty());
        assert!(!item.pinned());
        assert_eq!(item.priority(), None);

        let item = ContextItem::builder("x", -3)
            .kind(ContextKind::new("Document").unwrap())
            .priority(7)
            .tags(["a", "a", ""])
            .metadata_entry("cupel:trust", "0.5")
            .timestamp(1_000)
            .future_relevance_hint(f64::NAN)
            .pinned(true)
            .original_tokens(10)
            .build()
            .unwrap();
        assert_eq!(item.tokens(), -3);
        assert_eq!(item.tags(), ["a", "a", ""]);
        assert_eq!(item.metadata()["cupel:trust"], "0.5");
        assert_eq!(item.timestamp(), Some(1_000));
        assert!(item.future_relevance_hint().unwrap().is_nan());
        assert!(item.pinned());
        assert_eq!(item.original_tokens(), Some(10));
    }

    #[test]
    fn compact_layout_keeps_equality_and_defaults() {
        #[cfg(target_pointer_width = "64")]
        assert_eq!(std::mem::size_of::<ContextItem>(), 128);
        assert_eq!(std::mem::align_of::<ContextItem>(), 64);
        let plain = ContextItem::new("x", 1).unwrap();
        assert_eq!(plain, ContextItem::new("x", 1).unwrap());
        assert_ne!(
            plain,
            ContextItem::builder("x", 1).priority(0).build().unwrap()
        );
        assert_ne!(
            plain,
            ContextItem::builder("x", 1).timestamp(0).build().unwrap()
        );
        assert_eq!(
            plain,
            ContextItem::builder("x", 1)
                .metadata(BTreeMap::new())
                .pinned(true)
                .pinned(false)
                .build()
                .unwrap()
        );
        let nan = ContextItem::builder("x", 1)
            .future_relevance_hint(f64::NAN)
            .build()
            .unwrap();
        assert_ne!(
            nan,
            nan.clone(),
            "a NaN hint is unequal, as Option<f64> was"
        );
        assert_eq!(
            format!("{plain:?}"),
            "ContextItem { content: \"x\", tokens: 1, kind: \"Message\", source: \"Chat\", \
             priority: None, tags: [], metadata: {}, timestamp: None, \
             future_relevance_hint: None, pinned: false, original_tokens: None, group: None }"
        );
    }

    #[test]
    fn from_fields_equals_the_builder() {
        let mut metadata = BTreeMap::new();
        metadata.insert("k".to_string(), "v".to_string());
        let fields = ItemFields {
            content: "text".into(),
            tags: vec!["a".into(), "A".into()],
            group: Some("g".into()),
            values: ItemValues {
                tokens: 7,
                kind: ContextKind::new("Memory").unwrap(),
                source: ContextSource::new("rag").unwrap(),
                metadata: metadata.clone(),
                priority: Some(-3),
                timestamp: None,
                future_relevance_hint: Some(0.25),
                pinned: true,
                original_tokens: Some(0),
                variants: vec![Variant::unchecked("t".into(), 2, 0.5)],
            },
        };
        let built = ContextItem::builder("text", 7)
            .kind(ContextKind::new("Memory").unwrap())
            .source(ContextSource::new("rag").unwrap())
            .tags(["a", "A"])
            .metadata(metadata)
            .priority(-3)
            .future_relevance_hint(0.25)
            .pinned(true)
            .original_tokens(0)
            .group("g")
            .variant("t", 2, 0.5)
            .build()
            .unwrap();
        assert_eq!(ContextItem::from_fields(fields).unwrap(), built);
        let bare = ItemFields {
            content: "x".into(),
            tags: Vec::new(),
            group: None,
            values: ItemValues {
                tokens: 1,
                timestamp: Some(5),
                ..ItemValues::default()
            },
        };
        let built = ContextItem::builder("x", 1).timestamp(5).build().unwrap();
        assert_eq!(ContextItem::from_fields(bare).unwrap(), built);
    }

    /// Several items packed into one store read back every field, and share the store.
    #[test]
    fn items_packed_into_one_store_read_back_every_field() {
        let mut packer = TextPacker::new();
        let mut a = packer.item("first item").unwrap();
        packer.tag(&mut a, "red").unwrap();
        packer.tag(&mut a, "").unwrap();
        packer.tag(&mut a, "Red").unwrap();
        packer.group(&mut a, "call_1").unwrap();
        let b = packer.item("second").unwrap();
        let mut c = packer.item("third, grouped").unwrap();
        packer.group(&mut c, "call_1").unwrap();
        let mut metadata = BTreeMap::new();
        metadata.insert("cupel:trust".to_string(), "0.5".to_string());
        let values = ItemValues {
            tokens: 4,
            metadata,
            priority: Some(2),
            variants: vec![Variant::unchecked("short".into(), 1, 0.5)],
            ..ItemValues::default()
        };
        let mut items = [
            ContextItem::packed(a, hash_bytes(b"first item"), values),
            ContextItem::packed(b, hash_bytes(b"second"), ItemValues::default()),
            ContextItem::packed(c, hash_bytes(b"third, grouped"), ItemValues::default()),
        ];
        // Before the store is attached every string reads as empty (never a panic).
        assert_eq!((items[0].content(), items[0].tags().len()), ("", 0));
        assert_eq!(items[0].group(), None);
        let store = packer.finish();
        store.clone().share_with(&mut items);
        assert_eq!(store.ref_count(), 4);
        let expected = ContextItem::builder("first item", 4)
            .tags(["red", "", "Red"])
            .group("call_1")
            .metadata_entry("cupel:trust", "0.5")
            .priority(2)
            .variant("short", 1, 0.5)
            .build()
            .unwrap();
        assert_eq!(items[0], expected);
        assert_eq!(items[0].tags(), ["red", "", "Red"]);
        assert_eq!(items[0].group(), Some("call_1"));
        assert_eq!(items[0].metadata()["cupel:trust"], "0.5");
        assert_eq!(items[0].variants()[0].content(), "short");
        assert_eq!(items[1], ContextItem::new("second", 0).unwrap());
        assert!(items[1].tags().is_empty() && items[1].group().is_none());
        assert_eq!(items[2].content(), "third, grouped");
        assert_eq!(
            (items[2].tags().len(), items[2].group()),
            (0, Some("call_1"))
        );
        // A clone shares the store; dropping the items leaves only the local handle.
        let copy = items[2].clone();
        assert_eq!(store.ref_count(), 5);
        drop(items);
        assert_eq!(copy.content(), "third, grouped");
        assert_eq!(store.ref_count(), 2);
    }

    /// Equality compares text, not where it is stored.
    #[test]
    fn equality_ignores_the_store() {
        let mut packer = TextPacker::new();
        packer.item("padding before").unwrap();
        let mut strings = packer.item("x").unwrap();
        packer.tag(&mut strings, "t").unwrap();
        let mut packed = ContextItem::packed(
            strings,
            hash_bytes(b"x"),
            ItemValues {
                tokens: 1,
                ..ItemValues::default()
            },
        );
        packed.set_store(packer.finish());
        let built = ContextItem::builder("x", 1).tags(["t"]).build().unwrap();
        assert_eq!(packed, built);
        assert_ne!(
            packed,
            ContextItem::builder("x", 1).tags(["T"]).build().unwrap()
        );
        assert_ne!(packed, ContextItem::builder("x", 1).build().unwrap());
        assert_ne!(
            packed,
            ContextItem::builder("x", 1)
                .tags(["t"])
                .group("t")
                .build()
                .unwrap()
        );
    }

    #[test]
    fn content_hash_follows_the_content() {
        let a = ContextItem::new("same text", 1).unwrap();
        let b = ContextItem::builder(String::from("same text"), 9)
            .pinned(true)
            .build()
            .unwrap();
        let c = ContextItem::new("other text", 1).unwrap();
        assert_eq!(a.content_hash(), b.content_hash());
        assert_eq!(a.content_hash(), hash_bytes(b"same text"));
        assert_ne!(a.content_hash(), c.content_hash());
        assert_eq!(a.clone().content_hash(), a.content_hash());
        assert!(!format!("{a:?}").contains("hash"));
    }

    #[test]
    fn group_keys_and_metadata_are_independent() {
        let plain = ContextItem::new("x", 1).unwrap();
        assert_eq!((plain.group(), plain.has_group()), (None, false));
        let grouped = ContextItem::builder("x", 1)
            .group("call_1")
            .build()
            .unwrap();
        assert_eq!(grouped.group(), Some("call_1"));
        assert!(grouped.has_group() && grouped.metadata().is_empty());
        assert_ne!(plain, grouped);
        let both = ContextItem::builder("x", 1)
            .group("g")
            .metadata_entry("k", "v")
            .metadata(BTreeMap::new())
            .build()
            .unwrap();
        assert_eq!((both.group(), both.metadata().len()), (Some("g"), 0));
        // Removing the only extra field leaves an item equal to one that never had it.
        let removed = ContextItem::builder("x", 1)
            .group("g")
            .no_group()
            .build()
            .unwrap();
        assert_eq!(removed, plain);
        let meta_only = ContextItem::builder("x", 1)
            .metadata_entry("k", "v")
            .group("g")
            .no_group()
            .build()
            .unwrap();
        assert_eq!(
            meta_only,
            ContextItem::builder("x", 1)
                .metadata_entry("k", "v")
                .build()
                .unwrap()
        );
        // Keys are compared byte for byte: no case folding, no trimming.
        let upper = ContextItem::builder("x", 1).group("G").build().unwrap();
        assert_ne!(upper.group(), both.group());
        let err = ContextItem::builder("x", 1).group("").build().unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::InvalidArgument);
        assert_eq!(
            err.to_string(),
            "invalid argument: group key must not be empty"
        );
        assert!(format!("{grouped:?}").ends_with("group: Some(\"call_1\") }"));
    }

    #[test]
    fn whitespace_content_is_accepted_empty_is_not() {
        assert!(ContextItem::new("  ", 1).is_ok());
        assert_eq!(ContextItem::new("", 1).unwrap_err(), Error::EmptyContent);
    }
}
