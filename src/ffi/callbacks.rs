//! Custom components: the callback types, the item views callbacks read, and the adapters
//! that make C callbacks a `Scorer`, `Slicer` or `Placer` of the core.
//!
//! Threading: a pipeline may be run from many threads at once, and every callback of its
//! components may then be called concurrently from different runs (never concurrently
//! within one run). Callbacks must therefore be thread-safe with respect to their
//! `user_data`. `destroy` is called exactly once, on whichever thread drops the last
//! reference, after every other call has returned.

use std::ffi::{c_int, c_void};
use std::fmt;

use crate::alloc;
use crate::error::{Error, Result};
use crate::ffi::items::ctxpack_metadata_entry;
use crate::ffi::status::{FfiError, FfiResult};
use crate::ffi::strings::ctxpack_str;
use crate::model::{ContextBudget, ContextItem, ScoredItem};
use crate::placer::Placer;
use crate::scorer::{caller_position, Scorer};
use crate::slicer::{SliceOutcome, Slicer};

/// Releases a callback's `user_data`. Called exactly once, when the last reference to
/// the component that owns it is dropped. It is not called when the constructor fails:
/// the caller then still owns `user_data`.
pub type ctxpack_destroy_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// How a callback reports failure: it returns non-zero and may point `message` at a UTF-8
/// string (no NUL needed) that stays valid until the callback returns; the library copies
/// it immediately. The library zero-initialises the struct before every call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_callback_error {
    /// The failure message (optional; invalid UTF-8 is replaced, not rejected).
    pub message: ctxpack_str,
}

/// A read-only view of one item, as callbacks see it. Everything it points to is owned by
/// the library and valid only during the callback; every string is also NUL-terminated. Views are passed as a contiguous
/// array; this layout is frozen for the 0.x ABI (new item fields would come with new
/// accessors, not new view fields).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_item_view {
    /// The text.
    pub content: ctxpack_str,
    /// Caller-counted tokens.
    pub tokens: i64,
    /// The kind (the default, `Message`, when none was given).
    pub kind: ctxpack_str,
    /// The source (the default, `Chat`, when none was given).
    pub source: ctxpack_str,
    /// Priority, meaningful when `has_priority`.
    pub priority: i64,
    /// Whether the item has a priority.
    pub has_priority: bool,
    /// `tag_count` tags.
    pub tags: *const ctxpack_str,
    /// Number of tags.
    pub tag_count: usize,
    /// `metadata_count` entries, sorted by key (bytewise).
    pub metadata: *const ctxpack_metadata_entry,
    /// Number of metadata entries.
    pub metadata_count: usize,
    /// Nanoseconds since the Unix epoch (UTC), meaningful when `has_timestamp`.
    pub timestamp_ns: i64,
    /// Whether the item has a timestamp.
    pub has_timestamp: bool,
    /// Future-relevance hint, meaningful when `has_future_relevance_hint`.
    pub future_relevance_hint: f64,
    /// Whether the item has a hint.
    pub has_future_relevance_hint: bool,
    /// Whether the item is pinned.
    pub pinned: bool,
    /// Original token count, meaningful when `has_original_tokens`.
    pub original_tokens: i64,
    /// Whether the item has an original token count.
    pub has_original_tokens: bool,
}

/// Batch scorer: writes one score per item into `out_scores[0..count]` (pre-filled with
/// NaN). Every score must be finite, or the run fails with `CTXPACK_CALLBACK` naming the
/// item. Return 0 on success, non-zero on failure (optionally filling `error`).
pub type ctxpack_score_all_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        items: *const ctxpack_item_view,
        count: usize,
        out_scores: *mut f64,
        error: *mut ctxpack_callback_error,
    ) -> c_int,
>;

/// Per-item scorer: writes the score of `items[index]`, computed against all `count`
/// items, into `*out_score`. Called once per item, in order, within one run. Same return
/// and finiteness rules as `ctxpack_score_all_fn`.
pub type ctxpack_score_item_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        items: *const ctxpack_item_view,
        count: usize,
        index: usize,
        out_score: *mut f64,
        error: *mut ctxpack_callback_error,
    ) -> c_int,
>;

/// Slicer: receives the sorted items (score descending) with their `scores` and the
/// effective budget, writes the chosen positions (indices into `items`, each at most
/// once, any order) into `out_positions` (capacity `count`) and their number into
/// `*out_count`. Anything else fails the run with `CTXPACK_CALLBACK`.
pub type ctxpack_slice_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        items: *const ctxpack_item_view,
        scores: *const f64,
        count: usize,
        target_tokens: i64,
        max_tokens: i64,
        out_positions: *mut usize,
        out_count: *mut usize,
        error: *mut ctxpack_callback_error,
    ) -> c_int,
>;

/// Placer: writes a permutation of `0..count` into `out_order` (capacity `count`):
/// `out_order[k]` is the position in `items` placed k-th. Anything that is not a
/// permutation fails the run with `CTXPACK_CALLBACK`.
pub type ctxpack_place_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        items: *const ctxpack_item_view,
        scores: *const f64,
        count: usize,
        out_order: *mut usize,
        error: *mut ctxpack_callback_error,
    ) -> c_int,
>;

/// Overflow observer of one run (see `ctxpack_run_options`): called synchronously, on the
/// calling thread, when a Proceed run goes over `target_tokens`, with every merged item
/// as an index into the caller's item list (pinned first, then sliced). The array is
/// valid only during the call.
pub type ctxpack_overflow_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        tokens_over_budget: i64,
        items: *const usize,
        count: usize,
    ),
>;

/// A callback's `user_data` and its destructor, run exactly once on drop.
pub(crate) struct UserData {
    ptr: *mut c_void,
    destroy: ctxpack_destroy_fn,
}

// SAFETY: the documented contract makes callbacks (and so their user_data) usable from
// any thread and concurrently; the library only passes the pointer back.
unsafe impl Send for UserData {}
// SAFETY: as above.
unsafe impl Sync for UserData {}

impl UserData {
    pub(crate) fn new(ptr: *mut c_void, destroy: ctxpack_destroy_fn) -> Self {
        Self { ptr, destroy }
    }
}

impl Drop for UserData {
    fn drop(&mut self) {
        if let Some(destroy) = self.destroy {
            // SAFETY: the caller's destructor, called once with its own pointer.
            unsafe { destroy(self.ptr) };
        }
    }
}

/// Checks that a required callback is not NULL.
pub(crate) fn required<F>(f: Option<F>, what: &str) -> FfiResult<F> {
    f.ok_or_else(|| FfiError::null(what))
}

/// Views of a list of items, plus what they point into: every string, NUL-terminated, in
/// one arena, and the flat tag and metadata arrays.
struct Views {
    views: Vec<ctxpack_item_view>,
    _text: Vec<u8>,
    _tags: Vec<ctxpack_str>,
    _metadata: Vec<ctxpack_metadata_entry>,
}

/// Appends `s` and a NUL to `arena` (which has room: it never reallocates, so the
/// returned string stays valid) and returns it as a `ctxpack_str`.
fn terminated(arena: &mut Vec<u8>, s: &str) -> ctxpack_str {
    debug_assert!(arena.capacity() - arena.len() > s.len());
    let start = arena.len();
    arena.extend_from_slice(s.as_bytes());
    arena.push(0);
    ctxpack_str {
        ptr: arena.as_ptr().wrapping_add(start).cast(),
        len: s.len(),
    }
}

impl Views {
    /// Builds views of `items`, copying every string with a NUL terminator (the one rule
    /// for every string the library hands out). The allocations are fallible: the text
    /// is as large as the caller's items.
    fn new<'a>(items: impl Iterator<Item = &'a ContextItem> + Clone) -> Result<Self> {
        let (mut bytes, mut tag_count, mut meta_count, mut count) = (0usize, 0, 0, 0);
        for it in items.clone() {
            count += 1;
            bytes += it.content().len() + it.kind().as_str().len() + it.source().as_str().len();
            bytes += 3;
            tag_count += it.tags().len();
            bytes += it.tags().iter().map(|t| t.len() + 1).sum::<usize>();
            meta_count += it.metadata().len();
            bytes += it
                .metadata()
                .iter()
                .map(|(k, v)| k.len() + v.len() + 2)
                .sum::<usize>();
        }
        let mut text = alloc::vec_with_capacity::<u8>(bytes, "the item views' text")?;
        let mut tags = alloc::vec_with_capacity(tag_count, "the item views' tags")?;
        let mut metadata = alloc::vec_with_capacity(meta_count, "the item views' metadata")?;
        let mut views = alloc::vec_with_capacity(count, "the item views")?;
        for it in items {
            // `tags` and `metadata` have their final capacity: pointers into them stay valid.
            let (tag_at, meta_at) = (tags.len(), metadata.len());
            for t in it.tags() {
                tags.push(terminated(&mut text, t));
            }
            for (k, v) in it.metadata() {
                let key = terminated(&mut text, k);
                let value = terminated(&mut text, v);
                metadata.push(ctxpack_metadata_entry { key, value });
            }
            views.push(ctxpack_item_view {
                content: terminated(&mut text, it.content()),
                tokens: it.tokens(),
                kind: terminated(&mut text, it.kind().as_str()),
                source: terminated(&mut text, it.source().as_str()),
                priority: it.priority().unwrap_or(0),
                has_priority: it.priority().is_some(),
                tags: tags.as_ptr().wrapping_add(tag_at),
                tag_count: it.tags().len(),
                metadata: metadata.as_ptr().wrapping_add(meta_at),
                metadata_count: it.metadata().len(),
                timestamp_ns: it.timestamp().unwrap_or(0),
                has_timestamp: it.timestamp().is_some(),
                future_relevance_hint: it.future_relevance_hint().unwrap_or(0.0),
                has_future_relevance_hint: it.future_relevance_hint().is_some(),
                pinned: it.pinned(),
                original_tokens: it.original_tokens().unwrap_or(0),
                has_original_tokens: it.original_tokens().is_some(),
            });
        }
        Ok(Self {
            views,
            _text: text,
            _tags: tags,
            _metadata: metadata,
        })
    }

    fn ptr(&self) -> *const ctxpack_item_view {
        self.views.as_ptr()
    }
}

/// Calls a callback with a fresh `ctxpack_callback_error` and turns a non-zero return
/// into `Error::Callback` carrying the callback's message.
fn call(what: &str, f: impl FnOnce(*mut ctxpack_callback_error) -> c_int) -> Result<()> {
    let mut error = ctxpack_callback_error {
        message: ctxpack_str {
            ptr: std::ptr::null(),
            len: 0,
        },
    };
    let rc = f(&mut error);
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: the callback's contract: `message` is valid until it returned, which is now;
    // it is copied before anything else happens.
    let message = unsafe { error.message.to_str_lossy() };
    Err(Error::Callback(if message.is_empty() {
        format!("{what} returned {rc}")
    } else {
        format!("{what}: {message}")
    }))
}

fn describe(item: &ContextItem) -> String {
    let content = item.content();
    match content.char_indices().nth(40) {
        Some((cut, _)) => format!("{:?}...", &content[..cut]),
        None => format!("{content:?}"),
    }
}

/// The two shapes of a custom scorer.
#[derive(Clone, Copy)]
pub(crate) enum ScoreFn {
    /// One call per run.
    Batch(
        unsafe extern "C" fn(
            *mut c_void,
            *const ctxpack_item_view,
            usize,
            *mut f64,
            *mut ctxpack_callback_error,
        ) -> c_int,
    ),
    /// One call per item.
    PerItem(
        unsafe extern "C" fn(
            *mut c_void,
            *const ctxpack_item_view,
            usize,
            usize,
            *mut f64,
            *mut ctxpack_callback_error,
        ) -> c_int,
    ),
}

/// A scorer implemented by C callbacks.
pub(crate) struct CustomScorer {
    pub(crate) score: ScoreFn,
    pub(crate) user: UserData,
}

impl fmt::Debug for CustomScorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CustomScorer(C callback)")
    }
}

impl Scorer for CustomScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        self.score_all_at(items, &[], out)
    }

    fn score_all_at(
        &self,
        items: &[&ContextItem],
        positions: &[usize],
        out: &mut [f64],
    ) -> Result<()> {
        let views = Views::new(items.iter().copied())?;
        let n = items.len();
        out.fill(f64::NAN);
        let ud = self.user.ptr;
        match self.score {
            // SAFETY: views and `out` hold `n` elements and live across the call.
            ScoreFn::Batch(f) => call("custom scorer", |e| unsafe {
                f(ud, views.ptr(), n, out.as_mut_ptr(), e)
            })?,
            ScoreFn::PerItem(f) => {
                for (i, slot) in out.iter_mut().enumerate() {
                    crate::cancel::check("while scoring")?;
                    // SAFETY: as above; `slot` is a valid `double *`.
                    call("custom scorer", |e| unsafe {
                        f(ud, views.ptr(), n, i, slot, e)
                    })?;
                }
            }
        }
        match out.iter().position(|s| !s.is_finite()) {
            None => Ok(()),
            Some(i) => Err(Error::Callback(format!(
                "custom scorer returned {} for the item at position {} ({}); scores must be finite",
                out[i],
                caller_position(positions, i),
                describe(items[i])
            ))),
        }
    }
}

/// A slicer implemented by a C callback.
pub(crate) struct CustomSlicer {
    pub(crate) slice: unsafe extern "C" fn(
        *mut c_void,
        *const ctxpack_item_view,
        *const f64,
        usize,
        i64,
        i64,
        *mut usize,
        *mut usize,
        *mut ctxpack_callback_error,
    ) -> c_int,
    pub(crate) user: UserData,
}

impl fmt::Debug for CustomSlicer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CustomSlicer(C callback)")
    }
}

/// Checks that `positions` are distinct indices below `n`; the error is a message. (A
/// position the callback left unwritten holds `SIZE_MAX`, out of range like any other.)
fn check_positions(positions: &[usize], n: usize) -> std::result::Result<(), String> {
    let mut seen = vec![false; n];
    for &p in positions {
        match seen.get_mut(p) {
            None => return Err(format!("returned position {p}, but there are {n} items")),
            Some(true) => return Err(format!("returned position {p} twice")),
            Some(s) => *s = true,
        }
    }
    Ok(())
}

impl Slicer for CustomSlicer {
    fn slice(&self, items: &[ScoredItem<'_>], budget: &ContextBudget) -> Result<SliceOutcome> {
        let views = Views::new(items.iter().map(|s| s.item))?;
        let scores: Vec<f64> = items.iter().map(|s| s.score).collect();
        let n = items.len();
        let mut positions = alloc::filled(n, usize::MAX, "the slicer's positions")?;
        let mut count = 0usize;
        // SAFETY: views, scores and positions hold `n` elements and live across the call.
        call("custom slicer", |e| unsafe {
            (self.slice)(
                self.user.ptr,
                views.ptr(),
                scores.as_ptr(),
                n,
                budget.target_tokens(),
                budget.max_tokens(),
                positions.as_mut_ptr(),
                &mut count,
                e,
            )
        })?;
        if count > n {
            return Err(Error::Callback(format!(
                "custom slicer returned {count} positions, but there are {n} items"
            )));
        }
        positions.truncate(count);
        check_positions(&positions, n)
            .map_err(|m| Error::Callback(format!("custom slicer {m}")))?;
        Ok(SliceOutcome {
            selected: positions,
            ..SliceOutcome::default()
        })
    }
}

/// A placer implemented by a C callback.
pub(crate) struct CustomPlacer {
    pub(crate) place: unsafe extern "C" fn(
        *mut c_void,
        *const ctxpack_item_view,
        *const f64,
        usize,
        *mut usize,
        *mut ctxpack_callback_error,
    ) -> c_int,
    pub(crate) user: UserData,
}

impl fmt::Debug for CustomPlacer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CustomPlacer(C callback)")
    }
}

impl Placer for CustomPlacer {
    fn place(&self, items: &[ScoredItem<'_>]) -> Result<Vec<usize>> {
        let views = Views::new(items.iter().map(|s| s.item))?;
        let scores: Vec<f64> = items.iter().map(|s| s.score).collect();
        let n = items.len();
        let mut order = alloc::filled(n, usize::MAX, "the placer's order")?;
        // SAFETY: views, scores and order hold `n` elements and live across the call.
        call("custom placer", |e| unsafe {
            (self.place)(
                self.user.ptr,
                views.ptr(),
                scores.as_ptr(),
                n,
                order.as_mut_ptr(),
                e,
            )
        })?;
        check_positions(&order, n).map_err(|m| {
            Error::Callback(format!(
                "custom placer {m}; a placer must return a permutation of 0..{n}"
            ))
        })?;
        Ok(order)
    }
}
