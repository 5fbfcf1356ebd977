//! The item list handle and the item descriptor.

use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::alloc;
use crate::ffi::handles::{self, HandleType};
use crate::ffi::status::{ctxpack_error, ctxpack_status, guard, named, FfiError, FfiResult};
use crate::ffi::strings::{array, ctxpack_str, to_str, to_str_hashed};
use crate::ffi::versioned::{self, flag, reserved, Versioned};
use crate::model::{
    check_variants, drop_items, ContextItem, ContextKind, ContextSource, ItemValues, TextPacker,
    Variant,
};
use crate::tokenizer::Encoding;

/// A list of items, in the order a pipeline run identifies them: the indices in results
/// and reports are positions in this list. The library copies every item pushed.
///
/// A run works on the list as it was when the run started (a snapshot; the list is
/// copy-on-write), so pushing to, clearing or freeing the list while runs use it — from
/// another thread or from one of the run's own callbacks — changes only later runs. A
/// result keeps the items it reports on.
pub struct ctxpack_items {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_items {
    // The current version, shared with the runs and traced results that took it
    // (copy-on-write on push).
    type Value = Mutex<Arc<ItemVec>>;
    const TAG: u32 = u32::from_be_bytes(*b"CPIT");
    const NAME: &'static str = "ctxpack_items";
}

/// The items of a list version or of a one-shot run. Dropping it gives the items' store
/// references back a store at a time ([`drop_items`]) instead of one atomic
/// decrement per item; otherwise it is the vector it wraps.
#[derive(Clone, Default)]
pub(crate) struct ItemVec(Vec<ContextItem>);

impl Deref for ItemVec {
    type Target = Vec<ContextItem>;
    fn deref(&self) -> &Vec<ContextItem> {
        &self.0
    }
}

impl DerefMut for ItemVec {
    fn deref_mut(&mut self) -> &mut Vec<ContextItem> {
        &mut self.0
    }
}

impl AsRef<[ContextItem]> for ItemVec {
    fn as_ref(&self) -> &[ContextItem] {
        &self.0
    }
}

impl From<Vec<ContextItem>> for ItemVec {
    fn from(items: Vec<ContextItem>) -> Self {
        Self(items)
    }
}

impl Drop for ItemVec {
    fn drop(&mut self) {
        drop_items(&mut self.0);
    }
}

/// Locks the list's current version.
fn lock(list: &Mutex<Arc<ItemVec>>) -> MutexGuard<'_, Arc<ItemVec>> {
    // A panic while the lock was held is caught at the boundary; the list is still whole.
    list.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The list's current version, for a run: later pushes and clears make a new version and
/// leave this one alone.
///
/// # Safety
/// `items` is NULL or a handle.
pub(crate) unsafe fn snapshot(items: *const ctxpack_items, what: &str) -> FfiResult<Arc<ItemVec>> {
    // SAFETY: forwarded from the caller; the list is only locked for the clone.
    Ok(lock(unsafe { handles::borrow(items, what) }?).clone())
}

/// One metadata entry of an item (a later entry with the same key replaces an earlier
/// one).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_metadata_entry {
    /// The key (exact, case-sensitive).
    pub key: ctxpack_str,
    /// The value.
    pub value: ctxpack_str,
}

/// Describes one item to push. Every field of a ContextItem is here; optional fields
/// have a `has_...` flag, and the value is ignored when the flag is 0. The library
/// copies everything: the caller's memory may be reused as soon as the call returns.
///
/// Initialise it with `CTXPACK_ITEM_DESC_INIT` or `ctxpack_item_desc_init` (every field
/// zero, `struct_size` set), then fill in what you need. Flags are bytes, 0 or 1 (any
/// other value is `CTXPACK_INVALID_ARGUMENT` naming the field); `reserved` must be zero.
/// The layout has no implicit padding on 64-bit targets; fields added after the first
/// version (`group`, `encoding`) come after `reserved`, and their zero value means "not
/// used": a caller compiled against an older header, whose `struct_size` ends at
/// `reserved`, keeps today's behaviour.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_item_desc {
    /// `sizeof(ctxpack_item_desc)`.
    pub struct_size: usize,
    /// The text; must not be empty (`CTXPACK_EMPTY_CONTENT`).
    pub content: ctxpack_str,
    /// The kind; empty means `Message`; whitespace-only is `CTXPACK_EMPTY_KIND`.
    pub kind: ctxpack_str,
    /// The source; empty means `Chat`; whitespace-only is `CTXPACK_EMPTY_SOURCE`.
    pub source: ctxpack_str,
    /// `tag_count` tags (order and duplicates kept); may be NULL when `tag_count` is 0.
    pub tags: *const ctxpack_str,
    /// Number of tags.
    pub tag_count: usize,
    /// `metadata_count` key/value pairs; may be NULL when `metadata_count` is 0.
    pub metadata: *const ctxpack_metadata_entry,
    /// Number of metadata entries.
    pub metadata_count: usize,
    /// Caller-counted tokens; negative items are excluded by the run.
    pub tokens: i64,
    /// Priority (higher is more important), read when `has_priority`.
    pub priority: i64,
    /// Timestamp in nanoseconds since the Unix epoch (UTC), read when `has_timestamp`.
    pub timestamp_ns: i64,
    /// Future-relevance hint (conventionally in [0, 1]; any value is accepted), read when
    /// `has_future_relevance_hint`.
    pub future_relevance_hint: f64,
    /// Informational token count before truncation, read when `has_original_tokens`.
    pub original_tokens: i64,
    /// 1: the item is pinned (it bypasses scoring and slicing and is always placed).
    pub pinned: u8,
    /// 1: `priority` is set.
    pub has_priority: u8,
    /// 1: `timestamp_ns` is set.
    pub has_timestamp: u8,
    /// 1: `future_relevance_hint` is set.
    pub has_future_relevance_hint: u8,
    /// 1: `original_tokens` is set.
    pub has_original_tokens: u8,
    /// Must be zero.
    pub reserved: [u8; 3],
    /// The item's group key (docs/groups.md): items whose keys are equal byte for byte
    /// are selected or dropped together, and placed next to each other in input order.
    /// Empty (the zero value) means no group; invalid UTF-8 is `CTXPACK_INVALID_UTF8`
    /// naming `group`.
    pub group: ctxpack_str,
    /// The name of a built-in encoding (`"o200k_base"`, `"cl100k_base"`, any ASCII case)
    /// with which the library counts the content's tokens (docs/tokenizer.md); empty (the
    /// zero value) means `tokens` is the caller's count. When it is set, `tokens` must be
    /// 0 (`CTXPACK_INVALID_ARGUMENT` otherwise, so that a count is never silently
    /// replaced); an unknown name is `CTXPACK_INVALID_ARGUMENT` listing the known ones,
    /// and a library built without the tokenizer feature answers `CTXPACK_UNSUPPORTED`.
    pub encoding: ctxpack_str,
    /// `variant_count` cheaper alternative forms of the item (docs/variants.md), each used
    /// in the window instead of the item, never in addition; form `f >= 1` of the item is
    /// `variants[f - 1]`. May be NULL when `variant_count` is 0 (the zero value: no
    /// variants). The array's stride is `variants[0].struct_size`, and every element must
    /// carry the same value.
    pub variants: *const ctxpack_variant_desc,
    /// Number of variants.
    pub variant_count: usize,
}

/// `sizeof` the first version of `ctxpack_item_desc`, which ended at `reserved`.
const ITEM_DESC_V1_SIZE: usize = std::mem::offset_of!(ctxpack_item_desc, group);

// SAFETY: `#[repr(C)]`, `struct_size` first, and all-zero is valid (NULL pointers, zero
// numbers, false flags).
unsafe impl Versioned for ctxpack_item_desc {
    const V1_SIZE: usize = ITEM_DESC_V1_SIZE;
    const NAME: &'static str = "ctxpack_item_desc";
}

/// Describes one cheaper alternative form of an item (docs/variants.md): a summary, an
/// excerpt, a stub, used in the window **instead of** the item when the selection finds
/// that better than leaving the item out or placing it in full. The library copies
/// everything.
///
/// Initialise it with `CTXPACK_VARIANT_DESC_INIT` or `ctxpack_variant_desc_init`, then set
/// every field: the zero `quality` is invalid, so an initialised but unfilled descriptor
/// is rejected rather than used. The layout has no implicit padding on 64-bit targets;
/// fields a later version adds are appended, and their zero value means "not used".
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_variant_desc {
    /// `sizeof(ctxpack_variant_desc)`.
    pub struct_size: usize,
    /// The text sent in place of the item's; must not be empty.
    pub content: ctxpack_str,
    /// The form's tokens, counted by the caller; `>= 0` (0 is a zero-token stub). A
    /// variant with as many tokens as the item or more is accepted and pruned: the item
    /// itself is always at least as good (the report lists it among the pruned forms).
    pub tokens: i64,
    /// The share of the item's value the form keeps, in (0, 1]; NaN, 0, negatives and
    /// values above 1 are `CTXPACK_INVALID_ARGUMENT`. A form's value in the selection is
    /// the item's score times its quality.
    pub quality: f64,
}

// SAFETY: `#[repr(C)]`, `struct_size` first, and all-zero is valid (empty string, zero
// numbers).
unsafe impl Versioned for ctxpack_variant_desc {
    const V1_SIZE: usize = std::mem::size_of::<ctxpack_variant_desc>();
    const NAME: &'static str = "ctxpack_variant_desc";
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_variant_desc) == size`: every byte
/// zero and `struct_size = size`. Fill in the fields after it. (C and C++ can write
/// `ctxpack_variant_desc x = CTXPACK_VARIANT_DESC_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_variant_desc_init(
    out: *mut ctxpack_variant_desc,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_item_desc) == size`: every byte
/// zero and `struct_size = size`. Fill in the fields after it. (C and C++ can write
/// `ctxpack_item_desc x = CTXPACK_ITEM_DESC_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_item_desc_init(
    out: *mut ctxpack_item_desc,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Reads a string that is one element of an array argument. The name of the element
/// (`tags[3]`) is formatted only when the string is invalid.
///
/// # Safety
/// As for [`to_str`].
#[inline(always)]
unsafe fn element_str<'a>(s: &ctxpack_str, name: impl FnOnce() -> String) -> FfiResult<&'a str> {
    // SAFETY: forwarded from the caller.
    named(|what| unsafe { to_str(s, what) }, name)
}

/// A kind or source as the constructors take it: short ones borrowed (the constructor
/// copies them, or points to a static well-known name), long ones copied here with a
/// fallible allocation.
#[inline(always)]
fn copy_if_long<'a>(s: &'a str, what: &str) -> FfiResult<std::borrow::Cow<'a, str>> {
    const SHORT: usize = 256;
    Ok(if s.len() <= SHORT {
        std::borrow::Cow::Borrowed(s)
    } else {
        std::borrow::Cow::Owned(alloc::copy_str(s, what)?)
    })
}

/// Converts a descriptor into an item with a text store of its own (copying every
/// string): [`pack_item`] and [`TextPacker::finish`].
///
/// # Safety
/// The descriptor's pointers are valid for their lengths.
pub(crate) unsafe fn to_item(d: &ctxpack_item_desc) -> FfiResult<ContextItem> {
    let mut packer = TextPacker::new();
    // SAFETY: forwarded from the caller.
    let mut item = unsafe { pack_item(&mut packer, d) }?;
    item.set_store(packer.finish());
    Ok(item)
}

/// Converts a descriptor into an item whose strings (content, tags, group key) are
/// copied into `packer`, checking every argument. The item reads its strings once it is
/// given the finished store (`ContextItem::set_store`, `SharedStore::share_with`). On
/// failure `packer` is left as it was.
///
/// # Safety
/// The descriptor's pointers are valid for their lengths.
pub(crate) unsafe fn pack_item(
    packer: &mut TextPacker,
    d: &ctxpack_item_desc,
) -> FfiResult<ContextItem> {
    let mut slot = MaybeUninit::uninit();
    // SAFETY: forwarded from the caller.
    unsafe { pack_item_into(packer, d, &mut slot) }?;
    // SAFETY: `pack_item_into` succeeded, so it wrote the item.
    Ok(unsafe { slot.assume_init() })
}

/// [`pack_item`] writing the item into `slot` (on success; on failure `slot` is left
/// uninitialised): a push writes each item straight into the list's spare room rather
/// than moving it there.
///
/// # Safety
/// The descriptor's pointers are valid for their lengths.
unsafe fn pack_item_into(
    packer: &mut TextPacker,
    d: &ctxpack_item_desc,
    slot: &mut MaybeUninit<ContextItem>,
) -> FfiResult<()> {
    let mark = packer.mark();
    // SAFETY: forwarded from the caller.
    let done = unsafe { pack_checked(packer, d, slot) };
    if done.is_err() {
        packer.rollback(mark);
    }
    done
}

/// [`pack_item_into`] without the rollback: every argument is read and checked in the
/// documented order, the strings copied as they are checked, and the item written to
/// `slot` once all of them passed.
///
/// # Safety
/// The descriptor's pointers are valid for their lengths.
unsafe fn pack_checked(
    packer: &mut TextPacker,
    d: &ctxpack_item_desc,
    slot: &mut MaybeUninit<ContextItem>,
) -> FfiResult<()> {
    let pinned = flag(d.pinned, "desc.pinned")?;
    let has_priority = flag(d.has_priority, "desc.has_priority")?;
    let has_timestamp = flag(d.has_timestamp, "desc.has_timestamp")?;
    let has_hint = flag(
        d.has_future_relevance_hint,
        "desc.has_future_relevance_hint",
    )?;
    let has_original = flag(d.has_original_tokens, "desc.has_original_tokens")?;
    reserved(&d.reserved, "desc.reserved")?;
    // SAFETY (whole body): the descriptor's pointers are valid by the caller's contract.
    unsafe {
        let (content, content_hash) = to_str_hashed(&d.content, "content")?;
        let kind = to_str(&d.kind, "kind")?;
        let kind = if kind.is_empty() {
            ContextKind::default()
        } else if let Some(known) = ContextKind::well_known(kind) {
            known
        } else {
            ContextKind::new(copy_if_long(kind, "kind")?)?
        };
        let source = to_str(&d.source, "source")?;
        let source = if source.is_empty() {
            ContextSource::default()
        } else if let Some(known) = ContextSource::well_known(source) {
            known
        } else {
            ContextSource::new(copy_if_long(source, "source")?)?
        };
        let mut strings = packer.item(content)?;
        let tags = array(d.tags, d.tag_count, "tags")?;
        packer.reserve_tags(tags.len())?;
        for (i, t) in tags.iter().enumerate() {
            packer.tag(&mut strings, element_str(t, || format!("tags[{i}]"))?)?;
        }
        let mut metadata = BTreeMap::new();
        for (i, e) in array(d.metadata, d.metadata_count, "metadata")?
            .iter()
            .enumerate()
        {
            let key = element_str(&e.key, || format!("metadata[{i}].key"))?;
            let value = element_str(&e.value, || format!("metadata[{i}].value"))?;
            metadata.insert(
                alloc::copy_str(key, "a metadata key")?,
                alloc::copy_str(value, "a metadata value")?,
            );
        }
        let group = to_str(&d.group, "group")?;
        if !group.is_empty() {
            packer.group(&mut strings, group)?;
        }
        if content.is_empty() {
            return Err(crate::Error::EmptyContent.into());
        }
        // Most items have no encoding: the caller counted (the checks below only
        // matter with one).
        let (encoding, tokens) = if d.encoding.len == 0 {
            (None, d.tokens)
        } else {
            let encoding = item_encoding(d)?;
            (encoding, counted_tokens(d, content, encoding)?)
        };
        // Most items have no variants: the empty list is made here, in place, rather
        // than returned through memory by a call.
        let variants = match d.variant_count {
            0 => Vec::new(),
            count => read_checked_variants(d.variants, count, encoding, content)?,
        };
        let values = ItemValues {
            tokens,
            kind,
            source,
            metadata,
            priority: has_priority.then_some(d.priority),
            timestamp: has_timestamp.then_some(d.timestamp_ns),
            future_relevance_hint: has_hint.then_some(d.future_relevance_hint),
            pinned,
            original_tokens: has_original.then_some(d.original_tokens),
            variants,
        };
        slot.write(ContextItem::packed(strings, content_hash, values));
        Ok(())
    }
}

/// The encoding the item names, or `None` when `encoding` is empty (the caller counted).
///
/// # Safety
/// `d.encoding` is valid for its length.
unsafe fn item_encoding(d: &ctxpack_item_desc) -> FfiResult<Option<&'static Encoding>> {
    // SAFETY: forwarded from the caller.
    let name = unsafe { to_str(&d.encoding, "encoding") }?;
    if name.is_empty() {
        return Ok(None);
    }
    Ok(Some(Encoding::by_name(name)?))
}

/// A count the caller gave (`what` names it) or, with an encoding, the library's count of
/// `content` (then the caller's count must be 0, so that a count is never silently
/// replaced).
fn counted(given: i64, content: &str, encoding: Option<&Encoding>, what: &str) -> FfiResult<i64> {
    let Some(encoding) = encoding else {
        return Ok(given);
    };
    if given != 0 {
        return Err(FfiError::invalid(format!(
            "{what} is {given} but desc.encoding is set: the library counts the tokens, so tokens must be 0"
        )));
    }
    Ok(i64::try_from(encoding.count(content)).unwrap_or(i64::MAX))
}

/// The item's tokens: the caller's `tokens` when `encoding` is empty, otherwise the
/// content's count in that encoding (then `tokens` must be 0).
fn counted_tokens(
    d: &ctxpack_item_desc,
    content: &str,
    encoding: Option<&Encoding>,
) -> FfiResult<i64> {
    counted(d.tokens, content, encoding, "desc.tokens")
}

/// Copies the caller's `count` (> 0) variant descriptors and checks them with the
/// item's `content` ([`check_variants`]); with the item's encoding, their tokens are
/// counted with it too.
///
/// # Safety
/// `descs` is NULL or valid for `count` descriptors of its `struct_size` each.
#[inline(never)]
unsafe fn read_checked_variants(
    descs: *const ctxpack_variant_desc,
    count: usize,
    encoding: Option<&Encoding>,
    content: &str,
) -> FfiResult<Vec<Variant>> {
    // SAFETY: forwarded from the caller.
    let variants = unsafe { read_some_variants(descs, count, encoding) }?;
    check_variants(content, &variants)?;
    Ok(variants)
}

/// Copies the caller's variant descriptors (`count` > 0).
///
/// # Safety
/// As for [`read_checked_variants`].
#[inline(always)]
unsafe fn read_some_variants(
    descs: *const ctxpack_variant_desc,
    count: usize,
    encoding: Option<&Encoding>,
) -> FfiResult<Vec<Variant>> {
    if descs.is_null() {
        return Err(FfiError::new(
            ctxpack_status::CTXPACK_NULL_ARGUMENT,
            format!("variants is NULL but its length is {count}"),
        ));
    }
    let mut variants = alloc::vec_with_capacity(count, "variants")?;
    for i in 0..count {
        // SAFETY (both calls): forwarded from the caller.
        let v = unsafe { versioned::read_element(descs, i, "variants") }?;
        let content = unsafe { element_str(&v.content, || format!("variants[{i}].content")) }?;
        let tokens = counted(
            v.tokens,
            content,
            encoding,
            &format!("variants[{i}].tokens"),
        )?;
        variants.push(Variant::unchecked(
            alloc::copy_str(content, "a variant's content")?,
            tokens,
            v.quality,
        ));
    }
    Ok(variants)
}

/// Reads descriptor `index` of an array and packs it into `slot` ([`pack_item_into`]).
///
/// # Safety
/// `descs` holds more than `index` descriptors.
unsafe fn read_item_into(
    packer: &mut TextPacker,
    descs: *const ctxpack_item_desc,
    index: usize,
    slot: &mut MaybeUninit<ContextItem>,
) -> FfiResult<()> {
    let copied;
    // SAFETY: forwarded from the caller.
    let desc = match unsafe { in_place(descs, index) } {
        Some(desc) => desc,
        None => {
            // SAFETY: forwarded from the caller.
            copied = unsafe { versioned::read_element(descs, index, "descs") }?;
            &copied
        }
    };
    // SAFETY: forwarded from the caller.
    unsafe { pack_item_into(packer, desc, slot) }
}

/// Converts the array `descs` of `count` descriptors into items for a one-shot run
/// (`ctxpack_pipeline_run_descs`): the conversion and checks of `ctxpack_items_push_many`,
/// whose error messages start with `item <index>:` in the same way.
///
/// # Safety
/// `descs` is NULL or holds `count` descriptors (the caller's contract).
pub(crate) unsafe fn items_from_descs(
    descs: *const ctxpack_item_desc,
    count: usize,
) -> FfiResult<ItemVec> {
    let mut items = alloc::vec_with_capacity(count, "items").map_err(|_| {
        alloc::out_of_memory_bytes(
            count as u128 * std::mem::size_of::<ContextItem>() as u128,
            &format!("{count} items"),
        )
    })?;
    // SAFETY: forwarded from the caller.
    unsafe { append_packed(&mut items, descs, count) }?;
    Ok(ItemVec(items))
}

/// Descriptor `index` read where it lies, without copying it, in the common case that
/// needs no conversion: an aligned array whose stride is this library's
/// `sizeof(ctxpack_item_desc)` and whose element carries that `struct_size`. `None`
/// otherwise, and `versioned::read_element` does the checked copy (and reports errors).
///
/// # Safety
/// `descs` is NULL or holds more than `index` descriptors.
pub(super) unsafe fn in_place<'a>(
    descs: *const ctxpack_item_desc,
    index: usize,
) -> Option<&'a ctxpack_item_desc> {
    const SIZE: usize = std::mem::size_of::<ctxpack_item_desc>();
    if descs.is_null() || descs as usize % std::mem::align_of::<ctxpack_item_desc>() != 0 {
        return None;
    }
    // SAFETY: the array holds more than `index` elements; with this stride (checked
    // below through element 0's `struct_size`) element `index` is `descs.add(index)`.
    unsafe {
        if (*descs).struct_size != SIZE {
            return None;
        }
        let element = &*descs.add(index);
        (element.struct_size == SIZE).then_some(element)
    }
}

/// Creates an empty item list.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_items_new(
    out: *mut *mut ctxpack_items,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(Mutex::new(Arc::default())))
}

/// Appends one item, copied from `desc`. On failure the list is unchanged.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_items_push(
    items: *mut ctxpack_items,
    desc: *const ctxpack_item_desc,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: pointers are NULL or valid by the caller's contract.
    guard(out_error, || unsafe {
        let list = handles::borrow(items, "items")?;
        let item = to_item(&versioned::read(desc, "desc")?)?;
        let mut current = lock(list);
        let list = Arc::make_mut(&mut current);
        alloc::grow(list, 1, "items")?;
        list.push(item);
        Ok(())
    })
}

/// Appends `count` items, copied from the array `descs` (its stride is
/// `descs[0].struct_size`; every element must carry the same `struct_size`). All or
/// nothing: when one descriptor is invalid, nothing is appended and the error message
/// starts with `item <index>:`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_items_push_many(
    items: *mut ctxpack_items,
    descs: *const ctxpack_item_desc,
    count: usize,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: pointers are NULL or valid by the caller's contract.
    guard(out_error, || unsafe {
        let mut current = lock(handles::borrow(items, "items")?);
        let list = Arc::make_mut(&mut current);
        // Items go straight into the list; a failure truncates it back and gives back the
        // room reserved for them (all or nothing).
        let (start, capacity) = (list.len(), list.capacity());
        let what = || format!("{} items", start as u128 + count as u128);
        alloc::reserve(list, count, "items").map_err(|_| {
            alloc::out_of_memory_bytes(
                (start as u128 + count as u128) * std::mem::size_of::<ContextItem>() as u128,
                &what(),
            )
        })?;
        append_packed(list, descs, count).inspect_err(|_| list.shrink_to(capacity))
    })
}

/// Converts `count` descriptors and appends the items to `list` (whose room is reserved),
/// their strings packed into shared stores of about [`STORE_BYTES`] each; the items receive
/// their store once it is complete. All or nothing: on a failure `list` is truncated back
/// to its length before the call and the error names the item's position.
///
/// # Safety
/// `descs` is NULL or valid for `count` descriptors (each for its `struct_size`).
unsafe fn append_packed(
    list: &mut Vec<ContextItem>,
    descs: *const ctxpack_item_desc,
    count: usize,
) -> FfiResult<()> {
    let start = list.len();
    // A first guess (one short tag per item); later stores are sized like the one before.
    let mut packer = new_store_packer(count.min(256), count.min(256) * 8)?;
    let mut first_unattached = start;
    for i in 0..count {
        if list.len() == list.capacity() {
            // Not reached when the caller reserved the room, as documented.
            if let Err(e) = alloc::grow(list, 1, "items") {
                list.truncate(start);
                return Err(e.into());
            }
        }
        let slot = &mut list.spare_capacity_mut()[0];
        // SAFETY: forwarded from the caller; `i < count`.
        match unsafe { read_item_into(&mut packer, descs, i, slot) } {
            // SAFETY: the item was written to the first spare slot.
            Ok(()) => unsafe { list.set_len(list.len() + 1) },
            Err(e) => {
                list.truncate(start);
                return Err(e.context(format_args!("item {i}")));
            }
        }
        if packer.holds(STORE_BYTES - STORE_SLACK) {
            // The next store is sized like this one: a batch is usually uniform.
            let spans = packer.span_entries() + packer.span_entries() / 16;
            let bytes = packer.string_bytes() + packer.string_bytes() / 16;
            let next = match new_store_packer(spans / 2, bytes) {
                Ok(next) => next,
                Err(e) => {
                    list.truncate(start);
                    return Err(e);
                }
            };
            let full = std::mem::replace(&mut packer, next);
            attach(&mut list[first_unattached..], full);
            first_unattached = list.len();
        }
    }
    attach(&mut list[first_unattached..], packer);
    Ok(())
}

/// The text bytes a batch packs into one store before starting the next: under the
/// allocator's threshold for separate memory maps, so that a push reuses the heap memory
/// a freed list gave back instead of faulting in fresh pages.
const STORE_BYTES: usize = 64 * 1024;

/// Room left at the end of a store for the next item's strings: a store is finished when
/// less than this is left.
const STORE_SLACK: usize = 2 * 1024;

/// A packer with room for one store's text and `strings` tags and group keys of
/// `string_bytes` bytes in all.
fn new_store_packer(strings: usize, string_bytes: usize) -> FfiResult<TextPacker> {
    Ok(TextPacker::with_capacity(
        STORE_BYTES,
        strings,
        string_bytes,
    )?)
}

/// Finishes `packer` and gives its store to `items` (the items packed into it).
fn attach(items: &mut [ContextItem], packer: TextPacker) {
    if items.is_empty() {
        return;
    }
    packer.finish().share_with(items);
}

/// Stores the number of items in `*out_len`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_items_len(
    items: *const ctxpack_items,
    out_len: *mut usize,
) -> ctxpack_status {
    // SAFETY: pointers are NULL or valid by the caller's contract.
    guard(std::ptr::null_mut(), || unsafe {
        let len = lock(handles::borrow(items, "items")?).len();
        handles::write_out(out_len, len, "out_len")
    })
}

/// Removes every item and releases the list's storage.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_items_clear(items: *mut ctxpack_items) -> ctxpack_status {
    // SAFETY: `items` is NULL or a handle.
    guard(std::ptr::null_mut(), || unsafe {
        *lock(handles::borrow(items, "items")?) = Arc::default();
        Ok(())
    })
}

/// Frees an item list (results made from it, and runs using it, are not affected). NULL
/// is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_items_free(items: *mut ctxpack_items) {
    // SAFETY: `items` is NULL or a handle.
    unsafe { handles::release(items) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::status::ctxpack_error_free;

    fn s(text: &'static str) -> ctxpack_str {
        ctxpack_str {
            ptr: text.as_ptr().cast(),
            len: text.len(),
        }
    }

    fn desc(content: &'static str) -> ctxpack_item_desc {
        // SAFETY: all-zero is a valid descriptor.
        let mut d: ctxpack_item_desc = unsafe { std::mem::zeroed() };
        d.struct_size = std::mem::size_of::<ctxpack_item_desc>();
        d.content = s(content);
        d
    }

    fn new_list() -> *mut ctxpack_items {
        let mut items = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        let status = unsafe { ctxpack_items_new(&mut items, std::ptr::null_mut()) };
        assert_eq!(status, ctxpack_status::CTXPACK_OK);
        items
    }

    fn push_many(items: *mut ctxpack_items, descs: &[ctxpack_item_desc]) -> ctxpack_status {
        let mut err = std::ptr::null_mut();
        // SAFETY: live handle, valid array.
        unsafe {
            let status = ctxpack_items_push_many(items, descs.as_ptr(), descs.len(), &mut err);
            ctxpack_error_free(err);
            status
        }
    }

    fn contents(items: *mut ctxpack_items) -> Vec<String> {
        // SAFETY: live handle.
        let list = unsafe { snapshot(items, "items") }.unwrap();
        list.iter().map(|i| i.content().to_owned()).collect()
    }

    /// Every field of a batch comes back from the shared store, across store boundaries
    /// (the batch's text is several stores long).
    #[test]
    fn a_batch_reads_back_every_field_across_stores() {
        let tags = [s("red"), s(""), s("Blue")];
        let meta = [ctxpack_metadata_entry {
            key: s("k"),
            value: s("v"),
        }];
        let variant = ctxpack_variant_desc {
            struct_size: std::mem::size_of::<ctxpack_variant_desc>(),
            content: s("short"),
            tokens: 1,
            quality: 0.5,
        };
        let long: &'static str = Box::leak("long text ".repeat(1000).into_boxed_str());
        let mut descs = Vec::new();
        for i in 0..40 {
            let mut d = desc(if i % 2 == 0 { long } else { "short text" });
            d.tokens = i;
            d.tags = tags.as_ptr();
            d.tag_count = (i % 4) as usize;
            if i % 3 == 0 {
                d.group = s("g");
            }
            if i % 5 == 0 {
                d.metadata = meta.as_ptr();
                d.metadata_count = 1;
                d.variants = &variant;
                d.variant_count = 1;
            }
            descs.push(d);
        }
        let items = new_list();
        assert_eq!(push_many(items, &descs), ctxpack_status::CTXPACK_OK);
        // SAFETY: live handle.
        let list = unsafe { snapshot(items, "items") }.unwrap();
        assert_eq!(list.len(), 40);
        for (i, item) in list.iter().enumerate() {
            let tag_count = i % 4;
            let mut expected =
                ContextItem::builder(if i % 2 == 0 { long } else { "short text" }, i as i64)
                    .tags(["red", "", "Blue"][..tag_count].iter().copied());
            if i % 3 == 0 {
                expected = expected.group("g");
            }
            if i % 5 == 0 {
                expected = expected.metadata_entry("k", "v").variant("short", 1, 0.5);
            }
            assert_eq!(item, &expected.build().unwrap(), "item {i}");
        }
        // SAFETY: live handle.
        unsafe { ctxpack_items_free(items) };
    }

    /// A batch whose later item is invalid appends nothing, and the list still takes the
    /// next batch.
    #[test]
    fn a_failed_batch_leaves_the_list_unchanged() {
        let items = new_list();
        assert_eq!(
            push_many(items, &[desc("kept")]),
            ctxpack_status::CTXPACK_OK
        );
        let mut bad = desc("bad");
        bad.pinned = 2;
        let failing = [desc("a"), desc("b"), bad];
        assert_eq!(
            push_many(items, &failing),
            ctxpack_status::CTXPACK_INVALID_ARGUMENT
        );
        assert_eq!(
            push_many(items, &[desc("c"), desc("")]),
            ctxpack_status::CTXPACK_EMPTY_CONTENT
        );
        assert_eq!(contents(items), ["kept"]);
        assert_eq!(
            push_many(items, &[desc("next")]),
            ctxpack_status::CTXPACK_OK
        );
        assert_eq!(contents(items), ["kept", "next"]);
        // SAFETY: live handle.
        unsafe { ctxpack_items_free(items) };
    }

    /// A snapshot taken by a run keeps its items while the list is pushed to, cleared and
    /// freed; clear then push starts a new list.
    #[test]
    fn a_snapshot_survives_push_clear_and_free() {
        let items = new_list();
        assert_eq!(
            push_many(items, &[desc("one"), desc("two")]),
            ctxpack_status::CTXPACK_OK
        );
        // SAFETY: live handle.
        let held = unsafe { snapshot(items, "items") }.unwrap();
        assert_eq!(
            push_many(items, &[desc("three")]),
            ctxpack_status::CTXPACK_OK
        );
        assert_eq!(contents(items), ["one", "two", "three"]);
        // SAFETY: live handle.
        assert_eq!(
            unsafe { ctxpack_items_clear(items) },
            ctxpack_status::CTXPACK_OK
        );
        assert!(contents(items).is_empty());
        assert_eq!(
            push_many(items, &[desc("four")]),
            ctxpack_status::CTXPACK_OK
        );
        assert_eq!(contents(items), ["four"]);
        // SAFETY: live handle, not used afterwards.
        unsafe { ctxpack_items_free(items) };
        let held: Vec<&str> = held.iter().map(ContextItem::content).collect();
        assert_eq!(held, ["one", "two"]);
    }

    /// Pushes one descriptor with `encoding` set and returns the status and the item.
    fn push_counted(encoding: &'static str) -> (ctxpack_status, Option<ContextItem>) {
        // SAFETY: a zeroed descriptor is valid; every pointer is live.
        unsafe {
            let mut d: ctxpack_item_desc = std::mem::zeroed();
            d.struct_size = std::mem::size_of::<ctxpack_item_desc>();
            d.content = s("hello world");
            d.encoding = s(encoding);
            d.group = s("g");
            let mut items = std::ptr::null_mut();
            ctxpack_items_new(&mut items, std::ptr::null_mut());
            let mut err = std::ptr::null_mut();
            let status = ctxpack_items_push(items, &d, &mut err);
            ctxpack_error_free(err);
            let item = snapshot(items, "items").unwrap().first().cloned();
            ctxpack_items_free(items);
            (status, item)
        }
    }

    /// The library counts the content with the named encoding and keeps the group key.
    #[cfg(feature = "tokenizer")]
    #[test]
    fn an_encoding_counts_the_content() {
        let (status, item) = push_counted("cl100k_base");
        assert_eq!(status, ctxpack_status::CTXPACK_OK);
        let item = item.unwrap();
        let expected = Encoding::by_name("cl100k_base")
            .unwrap()
            .count("hello world");
        assert_eq!(item.tokens(), i64::try_from(expected).unwrap());
        assert_eq!(item.group(), Some("g"));
    }

    /// Without the tokenizer feature an item that names an encoding is unsupported.
    #[cfg(not(feature = "tokenizer"))]
    #[test]
    fn an_encoding_is_unsupported_without_the_feature() {
        let (status, item) = push_counted("o200k_base");
        assert_eq!(status, ctxpack_status::CTXPACK_UNSUPPORTED);
        assert!(item.is_none());
    }
}
