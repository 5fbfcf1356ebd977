//! Custom components for the C ABI target: `extern "C"` callbacks whose behaviour is
//! scripted by fuzz bytes.
//!
//! Each custom scorer, slicer or placer gets a boxed [`Script`] as `user_data`. A call
//! reads every field of every item view it receives (so AddressSanitizer checks the views
//! are valid), then, as the script says, succeeds with scores / positions / an order —
//! valid or not (NaN, out-of-range, duplicates, a count above the capacity, …) — or fails
//! with a message (possibly invalid UTF-8, possibly a NULL pointer), and may call back
//! into the library first. [`LIVE`] counts scripts not yet destroyed, so the target can
//! check that `destroy` runs exactly once per component, and never while one of the
//! component's callbacks is running.
//!
//! A callback may also be hostile: the target [`arm`]s the handles the running call uses
//! (its pipeline, budget, component, item list), and a callback frees one of them, or
//! clears or pushes to the item list. The call must go on with what it started with. A
//! handle the call holds (everything but the item list, which it takes as a snapshot) is
//! used again right after it was freed: the library must report it as a freed handle.
//! The target then drops the freed handles from its session ([`disarm`]).

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::mem::size_of;
use std::ptr;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use ctxpack::ffi::{
    ctxpack_budget, ctxpack_budget_free, ctxpack_callback_error, ctxpack_error, ctxpack_error_free,
    ctxpack_error_message, ctxpack_item_desc, ctxpack_item_desc_init, ctxpack_item_view,
    ctxpack_items, ctxpack_items_clear, ctxpack_items_free, ctxpack_items_len, ctxpack_items_new,
    ctxpack_items_push, ctxpack_pipeline, ctxpack_pipeline_free, ctxpack_pipeline_new,
    ctxpack_pipeline_policy_json, ctxpack_pipeline_release_memory, ctxpack_placer,
    ctxpack_placer_free, ctxpack_scorer, ctxpack_scorer_free, ctxpack_scorer_new_recency,
    ctxpack_scorer_new_scaled, ctxpack_scorer_score, ctxpack_slicer, ctxpack_slicer_free,
    ctxpack_slicer_new_quota, ctxpack_status, ctxpack_str,
};

use crate::reader::ByteReader;

/// Scripts created and not yet destroyed (by the library or, after a failed constructor,
/// by the target).
pub static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Message bytes of a failing callback: valid, invalid UTF-8, empty.
const MESSAGES: [&[u8]; 3] = [b"callback says no", b"bad \xff\xfe utf-8", b""];

/// The behaviour of one custom component.
pub struct Script {
    bytes: Vec<u8>,
    calls: Cell<usize>,
    /// Callbacks of this component currently running (`destroy` must not run then).
    running: Cell<usize>,
}

/// Marks a callback of a script as running while it lives.
struct Running<'a>(&'a Script);

/// How many component callbacks have run (a run during which none ran is deterministic,
/// so the target may compare it with another run of the same input).
pub static CALLS: AtomicUsize = AtomicUsize::new(0);

impl<'a> Running<'a> {
    fn enter(script: &'a Script) -> Self {
        CALLS.fetch_add(1, Ordering::Relaxed);
        script.running.set(script.running.get() + 1);
        Self(script)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.set(self.0.running.get() - 1);
    }
}

/// A handle a hostile callback may free or change while the call that runs it is in
/// progress, and whether that call holds its own reference to it.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// An item list (taken by the call as a snapshot: not held).
    Items(*mut ctxpack_items),
    /// A budget.
    Budget(*mut ctxpack_budget, bool),
    /// A pipeline.
    Pipeline(*mut ctxpack_pipeline, bool),
    /// A scorer.
    Scorer(*mut ctxpack_scorer, bool),
    /// A slicer.
    Slicer(*mut ctxpack_slicer, bool),
    /// A placer.
    Placer(*mut ctxpack_placer, bool),
}

thread_local! {
    /// The handles of the running call that callbacks may still act on.
    static ARMED: RefCell<Vec<Target>> = const { RefCell::new(Vec::new()) };
    /// The handles callbacks freed during the running call.
    static FREED: RefCell<Vec<*mut c_void>> = const { RefCell::new(Vec::new()) };
}

/// Makes `targets` available to hostile callbacks until [`disarm`].
pub fn arm(targets: Vec<Target>) {
    ARMED.with(|a| *a.borrow_mut() = targets);
    FREED.with(|f| f.borrow_mut().clear());
}

/// Ends the running call's hostility; returns the handles callbacks freed.
pub fn disarm() -> Vec<*mut c_void> {
    ARMED.with(|a| a.borrow_mut().clear());
    FREED.with(|f| std::mem::take(&mut *f.borrow_mut()))
}

/// Asserts that a call on a handle freed while held was refused as a freed handle.
///
/// # Safety
/// `error` is NULL or a live error object, freed here.
unsafe fn assert_reported_freed(what: &str, status: ctxpack_status, error: *mut ctxpack_error) {
    assert_eq!(
        status,
        ctxpack_status::CTXPACK_WRONG_HANDLE_TYPE,
        "{what} freed during the call was not reported"
    );
    // SAFETY: forwarded from the caller.
    unsafe {
        let m = ctxpack_error_message(error);
        let text = std::slice::from_raw_parts(m.ptr.cast::<u8>(), m.len);
        assert!(
            std::str::from_utf8(text).is_ok_and(|t| t.contains("freed handle")),
            "{what} freed during the call: {:?}",
            String::from_utf8_lossy(text)
        );
        ctxpack_error_free(error);
    }
}

/// Frees or changes one armed handle, as `r` says.
fn hostile(r: &mut ByteReader<'_>) {
    let Some(target) = ARMED.with(|a| {
        let mut a = a.borrow_mut();
        (!a.is_empty()).then(|| {
            let i = r.below(a.len());
            a.swap_remove(i)
        })
    }) else {
        return;
    };
    let freed = |p: *mut c_void| FREED.with(|f| f.borrow_mut().push(p));
    let mut error = ptr::null_mut();
    // SAFETY: every target is a live handle of its kind, used by the running call; a
    // held one stays allocated after its free, so using it again is safe (and must be
    // reported); an item list is not used again once freed.
    unsafe {
        match target {
            Target::Items(items) => match r.u8() % 4 {
                0 => {
                    ctxpack_items_free(items);
                    freed(items.cast());
                }
                1 => {
                    assert_eq!(ctxpack_items_clear(items), ctxpack_status::CTXPACK_OK);
                    let mut len = usize::MAX;
                    assert_eq!(
                        ctxpack_items_len(items, &mut len),
                        ctxpack_status::CTXPACK_OK
                    );
                    assert_eq!(len, 0, "a cleared list is not empty");
                    ARMED.with(|a| a.borrow_mut().push(target));
                }
                _ => {
                    push_one(items);
                    ARMED.with(|a| a.borrow_mut().push(target));
                }
            },
            Target::Budget(b, held) => {
                ctxpack_budget_free(b);
                freed(b.cast());
                if held {
                    ctxpack_budget_free(b); // a second free of a held handle is a no-op
                }
            }
            Target::Pipeline(p, held) => {
                // The memory a pipeline keeps for its one-shot runs may be released at any
                // time, a running one-shot run's included; every other time the pipeline
                // is also freed.
                let status = ctxpack_pipeline_release_memory(p);
                assert_eq!(status, ctxpack_status::CTXPACK_OK, "release_memory");
                if r.one_in(2) {
                    ARMED.with(|a| a.borrow_mut().push(target));
                    return;
                }
                ctxpack_pipeline_free(p);
                freed(p.cast());
                if held {
                    let mut out = ptr::null_mut();
                    let status = ctxpack_pipeline_policy_json(p, 0, &mut out, &mut error);
                    assert_reported_freed("a pipeline", status, error);
                }
            }
            Target::Scorer(s, held) => {
                ctxpack_scorer_free(s);
                freed(s.cast());
                if held {
                    let mut out = ptr::null_mut();
                    let status = ctxpack_scorer_new_scaled(s, &mut out, &mut error);
                    assert_reported_freed("a scorer", status, error);
                }
            }
            Target::Slicer(s, held) => {
                ctxpack_slicer_free(s);
                freed(s.cast());
                if held {
                    let mut out = ptr::null_mut();
                    let status = ctxpack_slicer_new_quota(ptr::null(), 0, s, &mut out, &mut error);
                    assert_reported_freed("a slicer", status, error);
                }
            }
            Target::Placer(p, held) => {
                ctxpack_placer_free(p);
                freed(p.cast());
                if held {
                    let mut out = ptr::null_mut();
                    let status = ctxpack_pipeline_new(
                        ptr::null(),
                        ptr::null(),
                        p,
                        ptr::null(),
                        &mut out,
                        &mut error,
                    );
                    assert_reported_freed("a placer", status, error);
                }
            }
        }
    }
}

/// Pushes one small item (a descriptor set up by `ctxpack_item_desc_init`).
///
/// # Safety
/// `items` is a live item list.
unsafe fn push_one(items: *mut ctxpack_items) {
    let content = "pushed by a callback";
    let mut desc = std::mem::MaybeUninit::<ctxpack_item_desc>::uninit();
    // SAFETY: a writable descriptor of its own size; a live list.
    unsafe {
        let size = size_of::<ctxpack_item_desc>();
        assert_eq!(
            ctxpack_item_desc_init(desc.as_mut_ptr(), size),
            ctxpack_status::CTXPACK_OK
        );
        let mut desc = desc.assume_init();
        desc.content = ctxpack_str {
            ptr: content.as_ptr().cast(),
            len: content.len(),
        };
        desc.tokens = 3;
        assert_eq!(
            ctxpack_items_push(items, &desc, ptr::null_mut()),
            ctxpack_status::CTXPACK_OK
        );
    }
}

impl Script {
    /// A new script of up to 32 input bytes, boxed as `user_data`.
    pub fn new_user_data(r: &mut ByteReader<'_>) -> *mut c_void {
        LIVE.fetch_add(1, Ordering::SeqCst);
        let script = Script {
            bytes: r.bytes(32).to_vec(),
            calls: Cell::new(0),
            running: Cell::new(0),
        };
        Box::into_raw(Box::new(script)).cast()
    }

    /// A reader for this call: the script bytes starting at a per-call offset, so
    /// repeated calls behave differently.
    fn reader(&self) -> ByteReader<'_> {
        let n = self.calls.get();
        self.calls.set(n + 1);
        let start = if self.bytes.is_empty() {
            0
        } else {
            n % self.bytes.len()
        };
        ByteReader::new(&self.bytes[start..])
    }
}

/// Recovers the script of a callback.
///
/// # Safety
/// `user_data` came from [`Script::new_user_data`] and was not destroyed.
unsafe fn script<'a>(user_data: *mut c_void) -> &'a Script {
    // SAFETY: forwarded from the caller.
    unsafe { &*user_data.cast::<Script>() }
}

/// The destructor handed to the library (and used by the target after a failed
/// constructor, which leaves `user_data` with the caller).
///
/// # Safety
/// `user_data` came from [`Script::new_user_data`] and is destroyed only once.
pub unsafe extern "C" fn destroy(user_data: *mut c_void) {
    // SAFETY: forwarded from the caller; a second call would be a double free that
    // AddressSanitizer reports.
    let script = unsafe { Box::from_raw(user_data.cast::<Script>()) };
    assert_eq!(
        script.running.get(),
        0,
        "destroy ran while one of the component's callbacks was running"
    );
    drop(script);
    LIVE.fetch_sub(1, Ordering::SeqCst);
}

/// Reads a string the library passed in.
///
/// # Safety
/// As for any view string: `ptr` valid for `len` bytes.
unsafe fn touch_str(s: &ctxpack_str) -> usize {
    if s.len == 0 {
        return 0;
    }
    assert!(
        !s.ptr.is_null(),
        "a non-empty view string with a NULL pointer"
    );
    // SAFETY: the library's contract for views: `len` bytes and a NUL.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len + 1) };
    assert_eq!(
        bytes[s.len], 0,
        "a view string without a NUL after its length"
    );
    let bytes = &bytes[..s.len];
    assert!(
        std::str::from_utf8(bytes).is_ok(),
        "a view string is not UTF-8"
    );
    bytes.len()
}

/// Reads `count` elements at `p` (nothing when `count` is 0).
///
/// # Safety
/// `p` valid for `count` elements when `count > 0`.
unsafe fn elements<'a, T>(p: *const T, count: usize) -> &'a [T] {
    if count == 0 {
        return &[];
    }
    assert!(!p.is_null(), "a non-empty array with a NULL pointer");
    // SAFETY: forwarded from the caller.
    unsafe { std::slice::from_raw_parts(p, count) }
}

/// The `count` writable elements at `p` (nothing when `count` is 0).
///
/// # Safety
/// `p` valid for `count` writable elements when `count > 0`.
unsafe fn elements_mut<'a, T>(p: *mut T, count: usize) -> &'a mut [T] {
    if count == 0 {
        return &mut [];
    }
    assert!(!p.is_null(), "a non-empty output array with a NULL pointer");
    // SAFETY: forwarded from the caller.
    unsafe { std::slice::from_raw_parts_mut(p, count) }
}

/// Reads every field of every view, so that an invalid view is an ASan report.
///
/// # Safety
/// The library's contract for the views of a callback.
unsafe fn touch_views(items: *const ctxpack_item_view, count: usize) {
    let mut total = 0usize;
    // SAFETY: the library's contract for views and everything they point to.
    unsafe {
        for v in elements(items, count) {
            total += touch_str(&v.content) + touch_str(&v.kind) + touch_str(&v.source);
            assert!(v.content.len > 0, "a view with empty content");
            for t in elements(v.tags, v.tag_count) {
                total += touch_str(t);
            }
            for m in elements(v.metadata, v.metadata_count) {
                total += touch_str(&m.key) + touch_str(&m.value);
            }
        }
    }
    std::hint::black_box(total);
}

/// Calls back into the library from inside a callback: a fresh list, scorer and score,
/// all freed again.
fn reenter() {
    let mut items = ptr::null_mut();
    let mut scorer = ptr::null_mut();
    let mut score = [0f64; 1];
    // SAFETY: valid out-parameters, a one-score buffer.
    unsafe {
        let ok = ctxpack_status::CTXPACK_OK;
        assert_eq!(ctxpack_items_new(&mut items, ptr::null_mut()), ok);
        push_one(items);
        assert_eq!(ctxpack_scorer_new_recency(&mut scorer, ptr::null_mut()), ok);
        let status = ctxpack_scorer_score(scorer, items, score.as_mut_ptr(), 1, ptr::null_mut());
        assert_eq!(status, ok);
        ctxpack_scorer_free(scorer);
        ctxpack_items_free(items);
    }
}

/// The common prologue of every callback: touch the views, maybe re-enter, maybe fail.
/// Returns the reader for the rest of the call, or `Err(status)` to return at once.
///
/// # Safety
/// `user_data` is a live script; the views and `error` follow the library's contract.
unsafe fn begin<'a>(
    user_data: *mut c_void,
    items: *const ctxpack_item_view,
    count: usize,
    error: *mut ctxpack_callback_error,
) -> Result<ByteReader<'a>, c_int> {
    // SAFETY: forwarded from the caller.
    let script = unsafe { script(user_data) };
    unsafe { touch_views(items, count) };
    let mut r = script.reader();
    let mode = r.u8();
    if mode % 16 == 1 {
        reenter();
    }
    if mode % 16 == 2 || mode % 16 == 3 {
        hostile(&mut r);
        // The views stay valid after the call's handles were freed or changed.
        unsafe { touch_views(items, count) };
    }
    if mode % 8 == 7 {
        assert!(!error.is_null(), "a callback without its error slot");
        // SAFETY: the library passes a writable, zero-initialised error slot.
        let slot = unsafe { &mut *error };
        assert!(slot.message.ptr.is_null() && slot.message.len == 0);
        slot.message = match mode / 8 % 4 {
            3 => ctxpack_str {
                ptr: ptr::null(),
                len: 3,
            },
            n => {
                let m = MESSAGES[usize::from(n)];
                ctxpack_str {
                    ptr: m.as_ptr().cast(),
                    len: m.len(),
                }
            }
        };
        return Err(1 + c_int::from(mode / 32));
    }
    Ok(r)
}

/// `ctxpack_score_all_fn`: writes scripted scores (or leaves the NaN pre-fill).
///
/// # Safety
/// Called by the library with its documented arguments.
pub unsafe extern "C" fn score_all(
    user_data: *mut c_void,
    items: *const ctxpack_item_view,
    count: usize,
    out_scores: *mut f64,
    error: *mut ctxpack_callback_error,
) -> c_int {
    // SAFETY: forwarded.
    let _running = Running::enter(unsafe { script(user_data) });
    // SAFETY: forwarded.
    let mut r = match unsafe { begin(user_data, items, count, error) } {
        Ok(r) => r,
        Err(code) => return code,
    };
    // SAFETY: the library passes `count` writable scores.
    let out = unsafe { elements_mut(out_scores, count) };
    assert!(
        out.iter().all(|s| s.is_nan()),
        "scores not pre-filled with NaN"
    );
    let skip = r.one_in(16);
    for s in out.iter_mut().filter(|_| !skip) {
        *s = r.f64();
    }
    0
}

/// `ctxpack_score_item_fn`: one scripted score.
///
/// # Safety
/// Called by the library with its documented arguments.
pub unsafe extern "C" fn score_item(
    user_data: *mut c_void,
    items: *const ctxpack_item_view,
    count: usize,
    index: usize,
    out_score: *mut f64,
    error: *mut ctxpack_callback_error,
) -> c_int {
    assert!(index < count, "score_item index {index} out of 0..{count}");
    // SAFETY: forwarded.
    let _running = Running::enter(unsafe { script(user_data) });
    // SAFETY: forwarded.
    let mut r = match unsafe { begin(user_data, items, count, error) } {
        Ok(r) => r,
        Err(code) => return code,
    };
    // SAFETY: a writable score.
    unsafe { *out_score = r.f64() };
    0
}

/// `ctxpack_slice_fn`: scripted positions, valid or not, and a scripted count.
///
/// # Safety
/// Called by the library with its documented arguments.
pub unsafe extern "C" fn slice(
    user_data: *mut c_void,
    items: *const ctxpack_item_view,
    scores: *const f64,
    count: usize,
    _target_tokens: i64,
    _max_tokens: i64,
    out_positions: *mut usize,
    out_count: *mut usize,
    error: *mut ctxpack_callback_error,
) -> c_int {
    // SAFETY: forwarded.
    let _running = Running::enter(unsafe { script(user_data) });
    // SAFETY: forwarded.
    let mut r = match unsafe { begin(user_data, items, count, error) } {
        Ok(r) => r,
        Err(code) => return code,
    };
    // SAFETY: `count` scores, `count` writable positions, a writable count.
    unsafe {
        std::hint::black_box(elements(scores, count).iter().sum::<f64>());
        let wanted = r.below(count + 1);
        let out = elements_mut(out_positions, count);
        for (k, slot) in out.iter_mut().take(wanted).enumerate() {
            *slot = match r.u8() % 8 {
                0 => usize::MAX - usize::from(r.u8()),
                1 => count + usize::from(r.u8() % 2),
                2 => 0,
                _ => k,
            };
        }
        *out_count = match r.u8() % 16 {
            0 => count + 1,
            1 => usize::MAX,
            _ => wanted,
        };
    }
    0
}

/// `ctxpack_place_fn`: the identity, a reversal, or a scripted non-permutation.
///
/// # Safety
/// Called by the library with its documented arguments.
pub unsafe extern "C" fn place(
    user_data: *mut c_void,
    items: *const ctxpack_item_view,
    scores: *const f64,
    count: usize,
    out_order: *mut usize,
    error: *mut ctxpack_callback_error,
) -> c_int {
    // SAFETY: forwarded.
    let _running = Running::enter(unsafe { script(user_data) });
    // SAFETY: forwarded.
    let mut r = match unsafe { begin(user_data, items, count, error) } {
        Ok(r) => r,
        Err(code) => return code,
    };
    // SAFETY: `count` scores and `count` writable positions.
    unsafe {
        std::hint::black_box(elements(scores, count).iter().sum::<f64>());
        let out = elements_mut(out_order, count);
        let mode = r.u8() % 4;
        for (k, slot) in out.iter_mut().enumerate() {
            *slot = match mode {
                0 => count - 1 - k,
                1 => usize::from(r.u8()),
                _ => k,
            };
        }
    }
    0
}

/// What the overflow callback of a run saw.
#[derive(Debug, Default)]
pub struct OverflowSeen {
    /// Calls.
    pub calls: usize,
    /// `tokens_over_budget` of the last call.
    pub tokens_over_budget: i64,
    /// The item positions of the last call.
    pub items: Vec<usize>,
    /// When not empty, the callback is hostile (see [`arm`]) with these script bytes.
    pub hostile: Vec<u8>,
}

/// `ctxpack_overflow_fn`: records its arguments in the [`OverflowSeen`] at `user_data`.
///
/// # Safety
/// `user_data` points to an `OverflowSeen`; `items` holds `count` positions.
pub unsafe extern "C" fn on_overflow(
    user_data: *mut c_void,
    tokens_over_budget: i64,
    items: *const usize,
    count: usize,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let seen = &mut *user_data.cast::<OverflowSeen>();
        seen.calls += 1;
        seen.tokens_over_budget = tokens_over_budget;
        seen.items = elements(items, count).to_vec();
        if !seen.hostile.is_empty() {
            hostile(&mut ByteReader::new(&seen.hostile));
        }
    }
}
