//! The engine of the `c_abi` target: fuzz bytes as a sequence of calls to the exported
//! `extern "C"` functions (`ctxpack::ffi::*`, the code a C host links against).
//!
//! A [`Session`] keeps every live handle. Each step reads an operation — create an item
//! list, push descriptors, build a budget or any scorer / slicer / placer (custom ones
//! included, see [`callbacks`]), build a pipeline (also from a preset or policy JSON),
//! run or dry-run it (through an item list, or once over a descriptor array), read a
//! result, its report and its analytics, run one stage alone, write a pipeline's policy
//! JSON and read it back, simulate budgets (marginal items, minimum budget), compare pipelines (sensitivity), register host scorers, read policy
//! and budget JSON with options and warnings, write a budget's JSON and read it back,
//! free a handle — and its arguments, which may be NULL, of the wrong
//! handle type, out of range, invalid UTF-8 or versioned structs of any `struct_size`.
//! The caller's side of the contract is always kept (buffers are as long as claimed, no
//! handle is used after it is freed), so anything that goes wrong is the library's.
//!
//! Checked after every call: no `CTXPACK_PANIC`; the error object exists exactly when the
//! status is an error and carries that status and a UTF-8 message; a handle
//! out-parameter is NULL unless the call succeeded. Checked on results: parallel arrays
//! agree, indices are distinct and in range, the overflow callback saw what the result
//! reports, a report accounts for every item and its JSON parses, accessors past the end
//! say `CTXPACK_OUT_OF_RANGE`, and no output struct is written past the library's size.
//! At the end every handle is freed and every custom component's `destroy` must have run
//! exactly once (LeakSanitizer checks the rest).

mod callbacks;
mod inputs;

use std::ffi::{c_void, CString};
use std::mem::{offset_of, size_of};
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering;

use ctxpack::ffi::*;
use ctxpack_status::*;

use crate::generate::{MAX_FUZZ_TABLE_BYTES, WORDS};
use crate::reader::ByteReader;
use callbacks::{OverflowSeen, Script, Target, CALLS, LIVE};
use inputs::{
    first_version_size, flag_byte, reserved_bytes, struct_size_is_valid, Arena, VersionedBuf,
};

/// Most calls per input.
const MAX_STEPS: usize = 48;
/// Most live handles; past it, steps that create handles free one instead.
const MAX_HANDLES: usize = 48;

/// The handle types of the ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Items,
    Budget,
    Scorer,
    Slicer,
    Placer,
    Pipeline,
    Result,
    SliceResult,
    Text,
    QuotaUtilization,
    Sensitivity,
    Registry,
    Warnings,
}

/// Every handle type, for picking a free function (possibly the wrong one).
const ALL_KINDS: [Kind; 13] = [
    Kind::Items,
    Kind::Budget,
    Kind::Scorer,
    Kind::Slicer,
    Kind::Placer,
    Kind::Pipeline,
    Kind::Result,
    Kind::SliceResult,
    Kind::Text,
    Kind::QuotaUtilization,
    Kind::Sensitivity,
    Kind::Registry,
    Kind::Warnings,
];

/// Preset names for `ctxpack_pipeline_new_preset`: other spellings and unknown names
/// included. DocumentQa is left out: its knapsack keeps the 256 MiB default guard, under
/// which one probe of `ctxpack_pipeline_min_budget_for` may legitimately take seconds.
const PRESET_NAMES: &[&str] = &[
    "chat",
    "Chat",
    "code_review",
    "RAG",
    "tool-use",
    "LongRunning",
    "debugging",
    "document",
    "",
];

/// Policy documents for `ctxpack_pipeline_new_policy_json`: valid, invalid and not JSON.
const POLICY_DOCS: &[&str] = &[
    r#"{"scorers":[{"type":"recency","weight":1}]}"#,
    r#"{"scorers":[{"type":"kind","weight":2},{"type":"tag","weight":1,"tagWeights":{"x":1}}],"slicerType":"countQuota","countQuotas":[{"kind":"Message","requireCount":1,"capCount":2}],"scarcity":"throw","placerType":"uShaped","overflowStrategy":"proceed"}"#,
    r#"{"scorers":[{"type":"reflexive","weight":1}],"slicerType":"knapsack","knapsackBucketSize":1,"knapsackTableLimitBytes":65536,"quotas":[{"kind":"Document","minPercent":10,"maxPercent":50}]}"#,
    r#"{"scorers":[]}"#,
    r#"{"scorers":[{"type":"recency","weight":-1}]}"#,
    "not json",
];

/// Policy documents for `ctxpack_pipeline_new_policy_json_with`: what lenient reading
/// tolerates (unknown properties, no `type`, a kind repeated in other case), registered
/// and unknown type names.
const LENIENT_POLICY_DOCS: &[&str] = &[
    r#"{"scorers":[{"weight":1,"note":"x"}],"futureOption":[1,{"a":null}]}"#,
    r#"{"scorers":[{"type":"kind","weight":1,"kindWeights":{"Message":1,"message":2}}]}"#,
    r#"{"scorers":[{"type":"host","weight":2},{"type":"recency","weight":1}]}"#,
    r#"{"scorers":[{"type":"scaled","weight":1,"innerScorer":{"type":"HOST","weight":1,"x":0}}]}"#,
    r#"{"scorers":[{"type":"unknownOther","weight":1}]}"#,
    r#"{"scorers":[{"type":"host","weight":1,"innerScorer":{"type":"recency","weight":1}}]}"#,
];

/// Type names for `ctxpack_scorer_registry_add`: valid, repeated in other case, built-in
/// and blank.
const REGISTERED_NAMES: &[&str] = &["host", "Host", "semantic", "recency", "Decay", " ", ""];

/// Budget documents for `ctxpack_budget_new_json`: the .NET form, what lenient reading
/// tolerates, and invalid values.
const BUDGET_DOCS: &[&str] = &[
    r#"{"maxTokens":8000,"targetTokens":6000,"outputReserve":1000,"reservedSlots":{"Message":100,"SystemPrompt":200},"estimationSafetyMarginPercent":10}"#,
    r#"{"maxTokens":4096,"targetTokens":4096}"#,
    r#"{"maxTokens":100,"reservedSlots":{"Memory":5,"memory":7},"extra":true}"#,
    r#"{"maxTokens":1000,"targetTokens":2000}"#,
    r#"{"maxTokens":10,"targetTokens":5,"reservedSlots":{"Memory":-1}}"#,
    r#"{"maxTokens":9223372036854775807,"targetTokens":9223372036854775807,"outputReserve":9223372036854775807,"estimationSafetyMarginPercent":0.00001}"#,
    "null",
];

/// A descriptor array as a C host passes it ([`Session::desc_array`]).
struct DescArray {
    /// The descriptors' bytes, in 8-byte words so that the array is aligned.
    words: Vec<u64>,
    count: usize,
    /// A descriptor has a flag byte other than 0/1 or a non-zero reserved byte.
    any_bad: bool,
    /// Passed as NULL (only when `count` is 0).
    null: bool,
}

impl DescArray {
    /// The array argument.
    fn ptr(&self) -> *const ctxpack_item_desc {
        if self.null {
            ptr::null()
        } else {
            self.words.as_ptr().cast()
        }
    }
}

/// A live handle.
#[derive(Debug, Clone, Copy)]
struct Handle {
    kind: Kind,
    ptr: *mut c_void,
    /// A scorer with a custom scorer somewhere in its tree: its finite scores may still
    /// come out of a scaled scorer as NaN (the spec's formula when the inner range
    /// overflows), so its output is not required to be finite.
    custom: bool,
}

/// Runs the call sequence encoded in `data` and checks the library's contract.
pub fn run(data: &[u8]) {
    let live_before = LIVE.load(Ordering::SeqCst);
    let mut session = Session {
        r: ByteReader::new(data),
        arena: Arena::default(),
        handles: Vec::new(),
        orphans: Vec::new(),
    };
    for _ in 0..MAX_STEPS {
        if session.r.is_empty() {
            break;
        }
        session.step();
    }
    session.free_all();
    assert_eq!(
        LIVE.load(Ordering::SeqCst),
        live_before,
        "a custom component's destroy did not run exactly once"
    );
}

/// The state of one call sequence.
struct Session<'a> {
    r: ByteReader<'a>,
    arena: Arena,
    handles: Vec<Handle>,
    /// `user_data` of custom components created without a destructor: the caller's to
    /// free once every handle is gone.
    orphans: Vec<*mut c_void>,
}

/// The error out-parameter of one call: NULL, or a slot pre-set to a dangling pointer
/// that the library must overwrite.
struct ErrorSlot {
    requested: bool,
    error: *mut ctxpack_error,
}

impl ErrorSlot {
    fn arg(&mut self) -> *mut *mut ctxpack_error {
        if self.requested {
            &mut self.error
        } else {
            ptr::null_mut()
        }
    }
}

/// Reads an output string of the library: never NULL, UTF-8.
///
/// # Safety
/// `s` was returned by the library and its owner is alive.
unsafe fn out_str(s: ctxpack_str) -> String {
    assert!(!s.ptr.is_null(), "an output string with a NULL pointer");
    // SAFETY: the library's contract for output strings: `len` bytes and a NUL.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len + 1) };
    assert_eq!(
        bytes[s.len], 0,
        "an output string without a NUL after its length"
    );
    let bytes = &bytes[..s.len];
    String::from_utf8(bytes.to_vec()).expect("an output string is not UTF-8")
}

/// Reads an output array of the library.
///
/// # Safety
/// `p` is valid for `len` elements (or `len` is 0).
unsafe fn out_array<T: Copy>(p: *const T, len: usize) -> Vec<T> {
    if len == 0 {
        return Vec::new();
    }
    assert!(!p.is_null(), "a non-empty output array with a NULL pointer");
    // SAFETY: forwarded from the caller.
    unsafe { std::slice::from_raw_parts(p, len).to_vec() }
}

/// The text of a live string handle, copied.
///
/// # Safety
/// `s` is a live `ctxpack_string`.
unsafe fn string_text(s: *const ctxpack_string) -> String {
    let mut value = ctxpack_str::EMPTY;
    // SAFETY: forwarded from the caller; a writable out-parameter.
    unsafe {
        assert_eq!(ctxpack_string_value(s, &mut value), CTXPACK_OK);
        out_str(value)
    }
}

/// `s` as a string argument (borrowing it).
fn str_arg(s: &str) -> ctxpack_str {
    ctxpack_str {
        ptr: s.as_ptr().cast(),
        len: s.len(),
    }
}

impl Session<'_> {
    /// One call (or a small group of calls that belong together).
    fn step(&mut self) {
        let op = self.r.below(28);
        let full = self.handles.len() >= MAX_HANDLES;
        match op {
            _ if full && op < 9 => self.free_one(),
            0 => self.items_new(),
            1 => self.items_push(),
            2 => self.items_push_many(),
            3 => self.budget_new(),
            4 | 5 => self.scorer_new(),
            6 => self.slicer_new(),
            7 => self.placer_new(),
            8 => self.pipeline_new(),
            9..=11 => self.pipeline_run(),
            12 => self.result_accessor(),
            13 => self.scorer_score(),
            14 => self.slicer_slice(),
            15 => self.placer_place(),
            16 => self.free_one(),
            17 => self.misc(),
            18 => self.pipeline_from_policy(),
            19 => self.policy_json_round_trip(),
            20 => self.dry_run(),
            21 => self.budget_simulation(),
            22 => self.result_analytics(),
            23 => self.sensitivity(),
            24 => self.registry(),
            25 => self.pipeline_from_policy_with_options(),
            26 => self.pipeline_run_descs(),
            _ => self.budget_json(),
        }
    }

    // ---- handles -------------------------------------------------------------------

    /// A handle argument of type `kind`: usually a live one, sometimes NULL, sometimes a
    /// live handle of any type (the library must answer `CTXPACK_WRONG_HANDLE_TYPE`).
    fn pick<T>(&mut self, kind: Kind) -> *mut T {
        let sel = self.r.u8();
        let n = usize::from(self.r.u8());
        let p = match sel % 16 {
            15 => ptr::null_mut(),
            14 if !self.handles.is_empty() => self.handles[n % self.handles.len()].ptr,
            _ => {
                let mine: Vec<_> = self.handles.iter().filter(|h| h.kind == kind).collect();
                if mine.is_empty() {
                    ptr::null_mut()
                } else {
                    mine[n % mine.len()].ptr
                }
            }
        };
        p.cast()
    }

    /// A fresh error slot, requested seven times in eight.
    fn error_slot(&mut self) -> ErrorSlot {
        ErrorSlot {
            requested: !self.r.one_in(8),
            error: NonNull::dangling().as_ptr(),
        }
    }

    /// Checks the status and error contract of one call and frees the error object.
    fn check(&self, what: &str, status: ctxpack_status, slot: ErrorSlot) -> bool {
        let message = if slot.requested && status != CTXPACK_OK && !slot.error.is_null() {
            // SAFETY: a live error object from the library.
            unsafe { out_str(ctxpack_error_message(slot.error)) }
        } else {
            String::new()
        };
        assert_ne!(
            status, CTXPACK_PANIC,
            "{what}: a panic reached the boundary: {message}"
        );
        if slot.requested {
            if status == CTXPACK_OK {
                assert!(slot.error.is_null(), "{what}: success left an error object");
            } else {
                assert!(
                    !slot.error.is_null(),
                    "{what}: {status:?} without an error object"
                );
                // SAFETY: a live error object, freed once.
                unsafe {
                    assert_eq!(ctxpack_error_code(slot.error), status, "{what}: error code");
                    ctxpack_error_free(slot.error);
                }
                assert!(
                    !message.is_empty(),
                    "{what}: {status:?} with an empty message"
                );
            }
        }
        status == CTXPACK_OK
    }

    /// Calls a constructor with a handle out-parameter (NULL one time in 32), checks the
    /// contract and keeps the new handle. Returns whether it succeeded.
    fn create(
        &mut self,
        kind: Kind,
        what: &str,
        call: impl FnOnce(*mut *mut c_void, *mut *mut ctxpack_error) -> ctxpack_status,
    ) -> bool {
        let mut slot = self.error_slot();
        let null_out = self.r.one_in(32);
        let mut out: *mut c_void = NonNull::dangling().as_ptr();
        let out_arg = if null_out {
            ptr::null_mut()
        } else {
            &mut out as *mut *mut c_void
        };
        let status = call(out_arg, slot.arg());
        let ok = self.check(what, status, slot);
        if null_out {
            assert!(!ok, "{what}: succeeded without an out-parameter");
            return false;
        }
        if ok {
            assert!(!out.is_null(), "{what}: success without a handle");
            self.handles.push(Handle {
                kind,
                ptr: out,
                custom: false,
            });
        } else {
            assert!(out.is_null(), "{what}: failure left the out-parameter set");
        }
        ok
    }

    /// Frees one live handle, one time in eight through the free function of another
    /// type (which must be a no-op, so the handle stays).
    fn free_one(&mut self) {
        if self.handles.is_empty() {
            return;
        }
        let i = self.r.below(self.handles.len());
        let handle = self.handles[i];
        if self.r.one_in(8) {
            let other = ALL_KINDS[self.r.below(ALL_KINDS.len())];
            if other != handle.kind {
                free_as(other, handle.ptr);
                return;
            }
        }
        self.handles.swap_remove(i);
        free_as(handle.kind, handle.ptr);
    }

    /// Frees every handle, components before the pipelines that share them, then the
    /// orphaned `user_data`.
    fn free_all(&mut self) {
        for handle in std::mem::take(&mut self.handles) {
            free_as(handle.kind, handle.ptr);
        }
        for user_data in std::mem::take(&mut self.orphans) {
            // SAFETY: a script no component owns.
            unsafe { callbacks::destroy(user_data) };
        }
    }

    // ---- hostile callbacks ---------------------------------------------------------

    /// Arms the handles a call is about to use (each given with the role it plays) for
    /// hostile callbacks: only live handles whose type is that role, each once. The call
    /// holds every one of them but the item list.
    fn arm(&mut self, uses: &[(Kind, *mut c_void)]) {
        let mut targets = Vec::new();
        let mut seen: Vec<*mut c_void> = Vec::new();
        for &(kind, ptr) in uses {
            let live = self.handles.iter().any(|h| h.kind == kind && h.ptr == ptr);
            if !live || seen.contains(&ptr) {
                continue;
            }
            seen.push(ptr);
            targets.push(match kind {
                Kind::Items => Target::Items(ptr.cast()),
                Kind::Budget => Target::Budget(ptr.cast(), true),
                Kind::Pipeline => Target::Pipeline(ptr.cast(), true),
                Kind::Scorer => Target::Scorer(ptr.cast(), true),
                Kind::Slicer => Target::Slicer(ptr.cast(), true),
                Kind::Placer => Target::Placer(ptr.cast(), true),
                _ => continue,
            });
        }
        callbacks::arm(targets);
    }

    /// Drops the handles hostile callbacks freed during the call.
    fn disarm(&mut self) {
        let freed = callbacks::disarm();
        self.handles.retain(|h| !freed.contains(&h.ptr));
    }

    // ---- items and budgets ---------------------------------------------------------

    fn items_new(&mut self) {
        // SAFETY: out-parameters from `create`.
        self.create(Kind::Items, "items_new", |out, err| unsafe {
            ctxpack_items_new(out.cast(), err)
        });
    }

    fn items_push(&mut self) {
        let items = self.pick::<ctxpack_items>(Kind::Items);
        let (desc, bad) = self.arena.item_desc(&mut self.r);
        let mut buf = VersionedBuf::input(&mut self.r, desc);
        let mut slot = self.error_slot();
        // SAFETY: a descriptor buffer of its `struct_size` bytes (or rejected unread).
        let status = unsafe { ctxpack_items_push(items, buf.ptr(), slot.arg()) };
        let ok = self.check("items_push", status, slot);
        assert!(
            !(ok && bad),
            "a flag byte other than 0/1 or a reserved byte was accepted"
        );
    }

    /// An array of up to four descriptors with a common stride (`descs[0].struct_size`),
    /// one time in eight with a later element carrying a different `struct_size`: the
    /// array (8-byte aligned words), its count, and whether a descriptor has a bad flag or
    /// reserved byte. With no descriptors the array is sometimes NULL.
    fn desc_array(&mut self) -> DescArray {
        let stride = size_of::<ctxpack_item_desc>() + 8 * self.r.below(2);
        let count = self.r.below(5);
        let mut bytes: Vec<u8> = Vec::with_capacity(stride * count);
        let mut any_bad = false;
        for _ in 0..count {
            let (desc, bad) = self.arena.item_desc(&mut self.r);
            any_bad |= bad;
            bytes.extend(VersionedBuf::with_size(desc, stride).bytes());
        }
        if count > 1 && self.r.one_in(8) {
            let at = stride * (1 + self.r.below(count - 1));
            bytes[at..at + size_of::<usize>()].copy_from_slice(&(stride + 8).to_ne_bytes());
        }
        let words: Vec<u64> = bytes
            .chunks(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8-byte multiple")))
            .collect();
        let null = count == 0 && self.r.bool();
        DescArray {
            words,
            count,
            any_bad,
            null,
        }
    }

    /// Pushes an array of descriptors ([`Session::desc_array`]).
    fn items_push_many(&mut self) {
        let items = self.pick::<ctxpack_items>(Kind::Items);
        let array = self.desc_array();
        let (descs, count, any_bad) = (array.ptr(), array.count, array.any_bad);
        let mut slot = self.error_slot();
        // SAFETY: `count` elements of `stride` bytes.
        let status = unsafe { ctxpack_items_push_many(items, descs, count, slot.arg()) };
        let ok = self.check("items_push_many", status, slot);
        assert!(
            !(ok && any_bad),
            "push_many accepted a bad flag or reserved byte"
        );
        let mut len = 0;
        // SAFETY: a writable length.
        let status = unsafe { ctxpack_items_len(items, &mut len) };
        assert_ne!(status, CTXPACK_PANIC);
        if self.r.one_in(8) {
            // SAFETY: a handle argument as picked.
            let status = unsafe { ctxpack_items_clear(items) };
            assert_ne!(status, CTXPACK_PANIC);
        }
    }

    /// A budget from a descriptor of any `struct_size`; sometimes the descriptor goes
    /// through `ctxpack_budget_desc_init` first, as bindings do.
    fn budget_new(&mut self) {
        let mut desc = self.arena.budget_desc(&mut self.r);
        if self.r.bool() {
            let (max, target) = (desc.max_tokens, desc.target_tokens);
            // SAFETY: a writable descriptor of its own size.
            let status =
                unsafe { ctxpack_budget_desc_init(&mut desc, size_of::<ctxpack_budget_desc>()) };
            assert_eq!(status, CTXPACK_OK);
            assert_eq!(desc.struct_size, size_of::<ctxpack_budget_desc>());
            assert!(desc.slots.is_null() && desc.slot_count == 0 && desc.max_tokens == 0);
            (desc.max_tokens, desc.target_tokens) = (max, target);
        }
        let mut buf = VersionedBuf::input(&mut self.r, desc);
        // SAFETY: a descriptor of its `struct_size` bytes, its slots as long as claimed.
        self.create(Kind::Budget, "budget_new", |out, err| unsafe {
            ctxpack_budget_new(buf.ptr(), out.cast(), err)
        });
    }

    // ---- components ----------------------------------------------------------------

    /// A custom component's `user_data` and destructor: the destructor is left out one
    /// time in sixteen (then the script is the caller's to free once the component is
    /// gone).
    fn custom_user_data(&mut self) -> (*mut c_void, ctxpack_destroy_fn) {
        let user_data = Script::new_user_data(&mut self.r);
        let destroy: ctxpack_destroy_fn = if self.r.one_in(16) {
            None
        } else {
            Some(callbacks::destroy)
        };
        (user_data, destroy)
    }

    /// After a custom constructor: on failure nothing was taken, so the script is freed
    /// here; without a destructor it is freed at the end.
    fn settle_user_data(&mut self, ok: bool, user_data: *mut c_void, destroy: ctxpack_destroy_fn) {
        if !ok {
            // SAFETY: the constructor failed, so the library did not take the script.
            unsafe { callbacks::destroy(user_data) };
        } else if destroy.is_none() {
            self.orphans.push(user_data);
        }
    }

    /// Whether `scorer` is a live scorer with a custom scorer in its tree.
    fn has_custom(&self, scorer: *const ctxpack_scorer) -> bool {
        self.handles
            .iter()
            .any(|h| h.ptr == scorer.cast_mut().cast() && h.kind == Kind::Scorer && h.custom)
    }

    /// Marks the scorer just created as having a custom scorer in its tree.
    fn mark_custom(&mut self, created: bool, custom: bool) {
        if created && custom {
            self.handles.last_mut().expect("just created").custom = true;
        }
    }

    fn scorer_new(&mut self) {
        let which = self.r.below(14);
        let k = Kind::Scorer;
        // SAFETY (every arm): arrays as long as their counts, versioned structs of their
        // `struct_size`, out-parameters from `create`.
        unsafe {
            match which {
                0 => self.create(k, "scorer_new_kind", |o, e| {
                    ctxpack_scorer_new_kind(o.cast(), e)
                }),
                1 => {
                    let (w, n) = self.arena.array(&mut self.r, 3, Arena::kind_weight);
                    self.create(k, "scorer_new_kind_weights", |o, e| {
                        ctxpack_scorer_new_kind_weights(w, n, o.cast(), e)
                    })
                }
                2 => {
                    let (w, n) = self.arena.array(&mut self.r, 3, Arena::tag_weight);
                    self.create(k, "scorer_new_tag", |o, e| {
                        ctxpack_scorer_new_tag(w, n, o.cast(), e)
                    })
                }
                3 => {
                    let children: Vec<ctxpack_composite_child> = (0..self.r.below(4))
                        .map(|_| ctxpack_composite_child {
                            scorer: self.pick::<ctxpack_scorer>(Kind::Scorer),
                            weight: self.r.f64(),
                        })
                        .collect();
                    let n = children.len();
                    let c = if n == 0 {
                        ptr::null()
                    } else {
                        children.as_ptr()
                    };
                    let custom = children.iter().any(|ch| self.has_custom(ch.scorer));
                    let ok = self.create(k, "scorer_new_composite", |o, e| {
                        ctxpack_scorer_new_composite(c, n, o.cast(), e)
                    });
                    self.mark_custom(ok, custom);
                    ok
                }
                4 => {
                    let inner = self.pick::<ctxpack_scorer>(Kind::Scorer);
                    let custom = self.has_custom(inner);
                    let ok = self.create(k, "scorer_new_scaled", |o, e| {
                        ctxpack_scorer_new_scaled(inner, o.cast(), e)
                    });
                    self.mark_custom(ok, custom);
                    ok
                }
                5 => {
                    let (mut config, bad) = self.decay_config();
                    let ok = self.create(k, "scorer_new_decay", |o, e| {
                        ctxpack_scorer_new_decay(config.ptr(), o.cast(), e)
                    });
                    assert!(
                        !(ok && bad),
                        "decay config: a bad flag or reserved byte accepted"
                    );
                    ok
                }
                6 => {
                    let score = self.r.f64();
                    self.create(k, "scorer_new_metadata_trust", |o, e| {
                        ctxpack_scorer_new_metadata_trust(score, o.cast(), e)
                    })
                }
                7 => {
                    let key = self.arena.str(&mut self.r, WORDS);
                    let value = self.arena.str(&mut self.r, WORDS);
                    let boost = self.r.f64();
                    self.create(k, "scorer_new_metadata_key", |o, e| {
                        ctxpack_scorer_new_metadata_key(key, value, boost, o.cast(), e)
                    })
                }
                8 => self.create(k, "scorer_new_recency", |o, e| {
                    ctxpack_scorer_new_recency(o.cast(), e)
                }),
                9 => self.create(k, "scorer_new_priority", |o, e| {
                    ctxpack_scorer_new_priority(o.cast(), e)
                }),
                10 => self.create(k, "scorer_new_frequency", |o, e| {
                    ctxpack_scorer_new_frequency(o.cast(), e)
                }),
                11 => self.create(k, "scorer_new_reflexive", |o, e| {
                    ctxpack_scorer_new_reflexive(o.cast(), e)
                }),
                12 => {
                    let f: ctxpack_score_all_fn = self.maybe(callbacks::score_all);
                    let (u, d) = self.custom_user_data();
                    let ok = self.create(k, "scorer_new_custom_batch", |o, e| {
                        ctxpack_scorer_new_custom_batch(f, u, d, o.cast(), e)
                    });
                    self.settle_user_data(ok, u, d);
                    self.mark_custom(ok, true);
                    ok
                }
                _ => {
                    let f: ctxpack_score_item_fn = self.maybe(callbacks::score_item);
                    let (u, d) = self.custom_user_data();
                    let ok = self.create(k, "scorer_new_custom_item", |o, e| {
                        ctxpack_scorer_new_custom_item(f, u, d, o.cast(), e)
                    });
                    self.settle_user_data(ok, u, d);
                    self.mark_custom(ok, true);
                    ok
                }
            };
        }
    }

    /// `Some(f)`, or `None` (a NULL callback) one time in sixteen.
    fn maybe<F>(&mut self, f: F) -> Option<F> {
        (!self.r.one_in(16)).then_some(f)
    }

    /// A decay configuration of any curve and clock, any `struct_size`, and whether its
    /// flag or reserved bytes make it invalid.
    fn decay_config(&mut self) -> (VersionedBuf, bool) {
        let (windows, window_count) = self.arena.array(&mut self.r, 3, Arena::decay_window);
        let r = &mut self.r;
        let flag = flag_byte(r);
        let reserved = reserved_bytes::<7>(r);
        let config = ctxpack_decay_config {
            struct_size: size_of::<ctxpack_decay_config>(),
            half_life_ns: r.i64(),
            max_age_ns: r.i64(),
            windows,
            window_count,
            fixed_now_ns: r.i64(),
            null_timestamp_score: r.f64(),
            curve: i32::from(r.u8() % 4),
            clock: i32::from(r.u8() % 3),
            has_null_timestamp_score: flag,
            reserved,
        };
        let bad = flag > 1 || reserved.iter().any(|&b| b != 0);
        (VersionedBuf::input(r, config), bad)
    }

    /// A knapsack memory guard: never 0 (the 256 MiB default) and at most
    /// [`MAX_FUZZ_TABLE_BYTES`], so one input cannot fill hundreds of megabytes.
    fn table_limit(&mut self) -> u64 {
        1 + self.r.u64() % MAX_FUZZ_TABLE_BYTES
    }

    fn slicer_new(&mut self) {
        let k = Kind::Slicer;
        // SAFETY (every arm): arrays as long as their counts, out-parameters from
        // `create`.
        unsafe {
            match self.r.below(6) {
                0 => self.create(k, "slicer_new_greedy", |o, e| {
                    ctxpack_slicer_new_greedy(o.cast(), e)
                }),
                1 => {
                    let (bucket, limit) = (self.r.i64(), self.table_limit());
                    self.create(k, "slicer_new_knapsack", |o, e| {
                        ctxpack_slicer_new_knapsack(bucket, limit, o.cast(), e)
                    })
                }
                2 => {
                    let (q, n) = self.arena.array(&mut self.r, 3, Arena::quota_entry);
                    let inner = self.pick::<ctxpack_slicer>(Kind::Slicer);
                    self.create(k, "slicer_new_quota", |o, e| {
                        ctxpack_slicer_new_quota(q, n, inner, o.cast(), e)
                    })
                }
                3 => {
                    let (q, n) = self.arena.array(&mut self.r, 3, Arena::count_quota_entry);
                    let inner = self.pick::<ctxpack_slicer>(Kind::Slicer);
                    let scarcity = self.scarcity();
                    self.create(k, "slicer_new_count_quota", |o, e| {
                        ctxpack_slicer_new_count_quota(q, n, inner, scarcity, o.cast(), e)
                    })
                }
                4 => {
                    let (q, n) = self.arena.array(&mut self.r, 3, Arena::count_quota_entry);
                    let (bucket, limit) = (self.r.i64(), self.table_limit());
                    let scarcity = self.scarcity();
                    self.create(k, "slicer_new_count_constrained_knapsack", |o, e| {
                        ctxpack_slicer_new_count_constrained_knapsack(
                            q,
                            n,
                            bucket,
                            limit,
                            scarcity,
                            o.cast(),
                            e,
                        )
                    })
                }
                _ => {
                    let f: ctxpack_slice_fn = self.maybe(callbacks::slice);
                    let (u, d) = self.custom_user_data();
                    let ok = self.create(k, "slicer_new_custom", |o, e| {
                        ctxpack_slicer_new_custom(f, u, d, o.cast(), e)
                    });
                    self.settle_user_data(ok, u, d);
                    ok
                }
            };
        }
    }

    /// A scarcity value, sometimes out of range.
    fn scarcity(&mut self) -> i32 {
        match self.r.u8() % 8 {
            7 => i32::from(self.r.u8()) - 128,
            n => i32::from(n % 2),
        }
    }

    fn placer_new(&mut self) {
        let k = Kind::Placer;
        // SAFETY (every arm): out-parameters from `create`.
        unsafe {
            match self.r.below(3) {
                0 => self.create(k, "placer_new_chronological", |o, e| {
                    ctxpack_placer_new_chronological(o.cast(), e)
                }),
                1 => self.create(k, "placer_new_u_shaped", |o, e| {
                    ctxpack_placer_new_u_shaped(o.cast(), e)
                }),
                _ => {
                    let f: ctxpack_place_fn = self.maybe(callbacks::place);
                    let (u, d) = self.custom_user_data();
                    let ok = self.create(k, "placer_new_custom", |o, e| {
                        ctxpack_placer_new_custom(f, u, d, o.cast(), e)
                    });
                    self.settle_user_data(ok, u, d);
                    ok
                }
            };
        }
    }

    fn pipeline_new(&mut self) {
        let scorer = self.pick::<ctxpack_scorer>(Kind::Scorer);
        let slicer = self.pick::<ctxpack_slicer>(Kind::Slicer);
        let placer = self.pick::<ctxpack_placer>(Kind::Placer);
        let options = ctxpack_pipeline_options {
            struct_size: size_of::<ctxpack_pipeline_options>(),
            overflow_strategy: match self.r.u8() % 8 {
                7 => i32::from(self.r.u8()) - 128,
                n => i32::from(n % 3),
            },
            deduplication: flag_byte(&mut self.r),
            no_variants: flag_byte(&mut self.r),
            reserved: reserved_bytes(&mut self.r),
            group_value: match self.r.u8() % 8 {
                7 => i32::from(self.r.u8()) - 128,
                n => i32::from(n % 3),
            },
            pinned_first: flag_byte(&mut self.r),
            reserved2: reserved_bytes(&mut self.r),
        };
        let mut bad = options.deduplication > 1
            || options.no_variants > 1
            || options.reserved.iter().any(|&b| b != 0);
        let options_buf = VersionedBuf::input(&mut self.r, options);
        // The fields appended after the first version are read only when the caller's
        // struct has them.
        let has = |field: usize| options_buf.struct_size() > field;
        bad |= has(offset_of!(ctxpack_pipeline_options, pinned_first)) && options.pinned_first > 1;
        bad |= (0..3).any(|i| {
            has(offset_of!(ctxpack_pipeline_options, reserved2) + i) && options.reserved2[i] != 0
        });
        let mut options = options_buf;
        let null_options = self.r.one_in(8);
        let options_ptr = if null_options {
            ptr::null()
        } else {
            options.ptr()
        };
        // SAFETY: handle arguments as picked, options of their `struct_size`.
        let ok = self.create(Kind::Pipeline, "pipeline_new", |o, e| unsafe {
            ctxpack_pipeline_new(scorer, slicer, placer, options_ptr, o.cast(), e)
        });
        assert!(
            !(ok && bad && !null_options),
            "pipeline options: a bad flag or reserved byte accepted"
        );
    }

    // ---- runs and results ----------------------------------------------------------

    /// The length of an item list argument, when it is one.
    fn items_len(items: *const ctxpack_items) -> Option<usize> {
        let mut len = usize::MAX;
        // SAFETY: a handle argument as picked, a writable length.
        let status = unsafe { ctxpack_items_len(items, &mut len) };
        assert_ne!(status, CTXPACK_PANIC);
        (status == CTXPACK_OK).then_some(len)
    }

    fn pipeline_run(&mut self) {
        let pipeline = self.pick::<ctxpack_pipeline>(Kind::Pipeline);
        let items = self.pick::<ctxpack_items>(Kind::Items);
        let budget = self.pick::<ctxpack_budget>(Kind::Budget);
        let len = Self::items_len(items);
        let trace = match self.r.u8() % 8 {
            0..=2 => 0,
            3 | 4 => 1,
            5 | 6 => 2,
            _ => i32::from(self.r.u8()) - 128,
        };
        let mut seen = OverflowSeen::default();
        if self.r.one_in(4) {
            seen.hostile = self.r.bytes(4).to_vec();
        }
        let with_callback = self.r.bool();
        let reserved = reserved_bytes(&mut self.r);
        // A cancel token in one run of four, cancelled before the run in half of those.
        let mut token: *mut ctxpack_cancel_token = ptr::null_mut();
        let mut cancelled = false;
        if self.r.one_in(4) {
            // SAFETY: `token` is writable.
            let status = unsafe { ctxpack_cancel_token_new(&mut token, ptr::null_mut()) };
            assert_eq!(status, ctxpack_status::CTXPACK_OK, "cancel token");
            if self.r.bool() {
                // SAFETY: a live token.
                unsafe { ctxpack_cancel_token_cancel(token) };
                cancelled = true;
            }
        }
        let options = ctxpack_run_options {
            struct_size: size_of::<ctxpack_run_options>(),
            on_overflow: with_callback.then_some(callbacks::on_overflow as _),
            overflow_user_data: (&mut seen as *mut OverflowSeen).cast(),
            trace_detail: trace,
            reserved,
            cancel: token,
        };
        let mut options = VersionedBuf::input(&mut self.r, options);
        let null_options = self.r.one_in(8);
        let options_ptr = if null_options {
            ptr::null()
        } else {
            options.ptr()
        };
        self.arm(&[
            (Kind::Pipeline, pipeline.cast()),
            (Kind::Items, items.cast()),
            (Kind::Budget, budget.cast()),
        ]);
        // SAFETY: handle arguments as picked, options of their `struct_size`.
        let ok = self.create(Kind::Result, "pipeline_run", |o, e| unsafe {
            ctxpack_pipeline_run(pipeline, items, budget, options_ptr, o.cast(), e)
        });
        self.disarm();
        // SAFETY: NULL or the live token made above (the run held its own reference).
        unsafe { ctxpack_cancel_token_free(token) };
        assert!(
            !(ok && reserved.iter().any(|&b| b != 0) && !null_options),
            "run options: a reserved byte accepted"
        );
        assert!(
            !(ok && cancelled
                && !null_options
                && options.struct_size() >= size_of::<ctxpack_run_options>()),
            "a run whose token was cancelled before it started succeeded"
        );
        if ok {
            let result = self.handles.last().expect("just created").ptr.cast();
            let observed = (with_callback && !null_options).then_some(&seen);
            let traced = !null_options && trace != 0;
            self.check_result(result, len, Some(traced), observed);
        }
    }

    /// The one-shot run over a descriptor array ([`Session::desc_array`]; one time in
    /// sixteen NULL with a count), checked like a list run's result. Its conversion is
    /// `ctxpack_items_push_many`'s: it never succeeds where a push of the same array to a
    /// fresh list fails. Hostile callbacks may free the pipeline and the budget.
    fn pipeline_run_descs(&mut self) {
        let pipeline = self.pick::<ctxpack_pipeline>(Kind::Pipeline);
        let budget = self.pick::<ctxpack_budget>(Kind::Budget);
        let array = self.desc_array();
        let null_with_count = self.r.one_in(16);
        let count = if null_with_count {
            array.count.max(1)
        } else {
            array.count
        };
        let descs = if null_with_count {
            ptr::null()
        } else {
            array.ptr()
        };
        if self.r.one_in(8) {
            self.release_memory(pipeline);
        }
        // Push-many's verdict on the same array, on a fresh list.
        let mut list = ptr::null_mut();
        // SAFETY: writable out-parameter; the array holds `count` descriptors or is NULL.
        let pushed = unsafe {
            assert_eq!(ctxpack_items_new(&mut list, ptr::null_mut()), CTXPACK_OK);
            let status = ctxpack_items_push_many(list, descs, count, ptr::null_mut());
            ctxpack_items_free(list);
            status == CTXPACK_OK
        };
        let trace = i32::from(self.r.u8() % 4);
        let options = ctxpack_run_options {
            struct_size: size_of::<ctxpack_run_options>(),
            on_overflow: None,
            overflow_user_data: ptr::null_mut(),
            trace_detail: trace,
            reserved: [0; 4],
            cancel: ptr::null(),
        };
        let mut options = VersionedBuf::input(&mut self.r, options);
        let null_options = self.r.one_in(4);
        let options_ptr = if null_options {
            ptr::null()
        } else {
            options.ptr()
        };
        self.arm(&[
            (Kind::Pipeline, pipeline.cast()),
            (Kind::Budget, budget.cast()),
        ]);
        let calls = CALLS.load(Ordering::Relaxed);
        // SAFETY: handle arguments as picked, `count` descriptors (or NULL), options of
        // their `struct_size`.
        let ok = self.create(Kind::Result, "pipeline_run_descs", |o, e| unsafe {
            ctxpack_pipeline_run_descs(pipeline, descs, count, budget, options_ptr, o.cast(), e)
        });
        self.disarm();
        let no_callbacks = CALLS.load(Ordering::Relaxed) == calls;
        assert!(
            !(ok && !pushed),
            "the one-shot run accepted descriptors push_many refuses"
        );
        assert!(
            !(ok && array.any_bad),
            "a bad flag or reserved byte accepted"
        );
        if ok {
            let result = self.handles.last().expect("just created").ptr.cast();
            let traced = !null_options && trace != 0;
            self.check_result(result, Some(count), Some(traced), None);
            if no_callbacks {
                // SAFETY: the pipeline and the budget are live (the run succeeded and no
                // callback ran to free them), the array as above.
                unsafe { same_as_list_run(result, pipeline, budget, descs, count, options_ptr) };
            }
        }
        if no_callbacks && self.r.one_in(2) {
            let traced = !null_options && trace != 0;
            let run = OneShotArgs {
                pipeline,
                budget,
                descs,
                count,
                options: options_ptr,
            };
            self.run_descs_into(run, traced);
        }
    }

    /// `ctxpack_pipeline_release_memory` on a picked pointer: OK for a live pipeline (the
    /// next one-shot run on it must still equal the list run), `CTXPACK_NULL_ARGUMENT`
    /// for NULL, `CTXPACK_WRONG_HANDLE_TYPE` for a handle of another type.
    fn release_memory(&mut self, pipeline: *mut ctxpack_pipeline) {
        let live = self
            .handles
            .iter()
            .any(|h| h.kind == Kind::Pipeline && h.ptr == pipeline.cast());
        let expected = match (pipeline.is_null(), live) {
            (true, _) => CTXPACK_NULL_ARGUMENT,
            (false, true) => CTXPACK_OK,
            (false, false) => CTXPACK_WRONG_HANDLE_TYPE,
        };
        // SAFETY: NULL or a live handle of the session.
        let status = unsafe { ctxpack_pipeline_release_memory(pipeline) };
        assert_eq!(status, expected, "pipeline_release_memory");
    }

    /// `ctxpack_pipeline_run_descs_into` on the arguments of a one-shot run that ran no
    /// callback, into NULL, a result the session holds (made by any run, traced or not)
    /// or a handle of another type: the one-shot run's status, a result equal to the list
    /// run's on success (with a report when `traced`), `*result` untouched on failure,
    /// `CTXPACK_WRONG_HANDLE_TYPE` for another type. The comparisons hold when these runs
    /// too run no callback: the first one-shot run may have been refused before it ran
    /// (a NULL out-parameter), and a component's script may answer differently from call
    /// to call.
    fn run_descs_into(&mut self, run: OneShotArgs, traced: bool) {
        let calls = CALLS.load(Ordering::Relaxed);
        let mut once = ptr::null_mut();
        // SAFETY: the one-shot run's arguments (live, as it ran no callback).
        let expected = unsafe {
            let status = ctxpack_pipeline_run_descs(
                run.pipeline,
                run.descs,
                run.count,
                run.budget,
                run.options,
                &mut once,
                ptr::null_mut(),
            );
            ctxpack_result_free(once);
            status
        };
        let n = usize::from(self.r.u8());
        let results: Vec<usize> = (0..self.handles.len())
            .filter(|&i| self.handles[i].kind == Kind::Result)
            .collect();
        let (held, other) = match self.r.u8() % 8 {
            0 => (None, None),
            1 if !self.handles.is_empty() => (None, Some(n % self.handles.len())),
            _ if !results.is_empty() => (Some(results[n % results.len()]), None),
            _ => (None, None),
        };
        let before: *mut ctxpack_result = match (held, other) {
            (Some(i), _) | (_, Some(i)) => self.handles[i].ptr.cast(),
            _ => ptr::null_mut(),
        };
        let mut target = before;
        let mut slot = self.error_slot();
        // SAFETY: as above, `target` NULL or a live handle.
        let status = unsafe {
            ctxpack_pipeline_run_descs_into(
                run.pipeline,
                run.descs,
                run.count,
                run.budget,
                run.options,
                &mut target,
                slot.arg(),
            )
        };
        let ok = self.check("pipeline_run_descs_into", status, slot);
        let repeatable = CALLS.load(Ordering::Relaxed) == calls;
        if let Some(i) = other.filter(|&i| self.handles[i].kind != Kind::Result) {
            // The pipeline, the budget and the options are checked before `*result`: their
            // error is an empty one-shot run's.
            let mut empty = ptr::null_mut();
            // SAFETY: as above, with no descriptors.
            let arguments = unsafe {
                let status = ctxpack_pipeline_run_descs(
                    run.pipeline,
                    ptr::null(),
                    0,
                    run.budget,
                    run.options,
                    &mut empty,
                    ptr::null_mut(),
                );
                ctxpack_result_free(empty);
                status
            };
            let want = match arguments {
                CTXPACK_OK => CTXPACK_WRONG_HANDLE_TYPE,
                error => error,
            };
            if CALLS.load(Ordering::Relaxed) == calls {
                assert_eq!(status, want, "{:?} as *result", self.handles[i].kind);
            }
            assert_ne!(status, CTXPACK_OK, "{:?} as *result", self.handles[i].kind);
            assert_eq!(target, before, "a refused run changed *result");
            return;
        }
        if repeatable {
            assert_eq!(status, expected, "run into a result vs the one-shot run");
        }
        if !ok {
            assert_eq!(target, before, "a failed run changed *result");
            return;
        }
        assert!(!target.is_null(), "success without a result");
        match held.or(other) {
            Some(i) => self.handles[i].ptr = target.cast(),
            None => self.handles.push(Handle {
                kind: Kind::Result,
                ptr: target.cast(),
                custom: false,
            }),
        }
        self.check_result(target, Some(run.count), Some(traced), None);
        if repeatable {
            // SAFETY: as above; `target` is a live result.
            unsafe {
                same_as_list_run(
                    target,
                    run.pipeline,
                    run.budget,
                    run.descs,
                    run.count,
                    run.options,
                )
            };
        }
    }

    /// Checks a result through every accessor. `len`: the run's item count; `traced`:
    /// whether a report must be present; `seen`: what the overflow callback observed.
    fn check_result(
        &mut self,
        result: *const ctxpack_result,
        len: Option<usize>,
        traced: Option<bool>,
        seen: Option<&OverflowSeen>,
    ) {
        // SAFETY: a live result; writable out-parameters; arrays read within their length.
        unsafe {
            let (mut p, mut n) = (ptr::null(), 0);
            assert_eq!(ctxpack_result_indices(result, &mut p, &mut n), CTXPACK_OK);
            let indices = out_array(p, n);
            let (mut ps, mut ns) = (ptr::null(), 0);
            assert_eq!(ctxpack_result_scores(result, &mut ps, &mut ns), CTXPACK_OK);
            let (mut pr, mut nr) = (ptr::null(), 0);
            assert_eq!(ctxpack_result_reasons(result, &mut pr, &mut nr), CTXPACK_OK);
            assert_eq!((ns, nr), (n, n), "parallel result arrays differ in length");
            let reasons = out_array(pr, nr);
            assert!(reasons.iter().all(|r| (1..=4).contains(r)), "bad reason");
            let (mut pf, mut nf) = (ptr::null(), 0);
            assert_eq!(ctxpack_result_forms(result, &mut pf, &mut nf), CTXPACK_OK);
            assert_eq!(nf, n, "forms and indices differ in length");
            for (form, reason) in out_array(pf, nf).iter().zip(&reasons) {
                // A form other than the full one exactly when the item is downgraded.
                assert_eq!(
                    *form != 0,
                    *reason == ctxpack_inclusion_reason::Downgraded as i32,
                    "form {form} with reason {reason}"
                );
            }
            let mut distinct = indices.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), n, "an index selected twice");
            if let Some(len) = len {
                assert!(indices.iter().all(|&i| i < len), "index out of range");
            }

            let (mut present, mut over, mut po, mut no) = (false, 0i64, ptr::null(), 0);
            let status = ctxpack_result_overflow(result, &mut present, &mut over, &mut po, &mut no);
            assert_eq!(status, CTXPACK_OK);
            if let Some(seen) = seen {
                assert_eq!(
                    seen.calls,
                    usize::from(present),
                    "overflow callback vs result"
                );
                if present {
                    assert_eq!(seen.tokens_over_budget, over);
                    assert_eq!(seen.items, out_array(po, no));
                }
            }

            let mut has_report = false;
            assert_eq!(
                ctxpack_result_has_report(result, &mut has_report),
                CTXPACK_OK
            );
            if let Some(traced) = traced {
                assert_eq!(has_report, traced, "report presence vs trace detail");
            }
            self.check_report(result, has_report, n, len);
        }
    }

    /// Reads the summary, every entry (and one past the end) and the JSON of a report.
    fn check_report(
        &mut self,
        result: *const ctxpack_result,
        has_report: bool,
        selected: usize,
        len: Option<usize>,
    ) {
        // SAFETY: a live result; output structs of their `struct_size`.
        unsafe {
            let mut summary = VersionedBuf::output::<ctxpack_report_summary>(&mut self.r);
            let mut slot = self.error_slot();
            let status = ctxpack_result_report_summary(result, summary.ptr(), slot.arg());
            summary.check_tail();
            self.check("report_summary", status, slot);
            if !has_report {
                assert_ne!(status, CTXPACK_OK, "a summary without a report");
                return;
            }
            if !summary.size_is_valid() {
                assert_eq!(status, CTXPACK_INVALID_ARGUMENT, "summary struct_size");
                return;
            }
            assert_eq!(status, CTXPACK_OK);
            let s: ctxpack_report_summary = summary.read();
            assert_eq!(s.included_count, selected, "report included vs indices");
            assert_eq!(s.included_count + s.excluded_count, s.total_candidates);
            if let Some(len) = len {
                assert_eq!(s.total_candidates, len, "report candidates vs items");
            }
            for i in 0..=s.included_count {
                self.entry::<ctxpack_included_entry>(i, s.included_count, |out, err| {
                    ctxpack_result_report_included(result, i, out, err)
                });
            }
            for i in 0..=s.excluded_count {
                let e =
                    self.entry_sized::<ctxpack_excluded_entry>(i, s.excluded_count, |out, err| {
                        ctxpack_result_report_excluded(result, i, out, err)
                    });
                if let Some((e, whole)) = e {
                    for text in [e.name, e.deduplicated_against, e.kind, e.displaced_by_kind] {
                        out_str(text);
                    }
                    out_str(e.displaced_by);
                    out_str(e.filter_name);
                    let group_excluded = e.reason == ctxpack_exclusion_reason::GroupExcluded as i32;
                    if !whole {
                        // A caller whose entry predates the group fields never sees the
                        // value its enumeration lacks.
                        assert!(
                            !group_excluded,
                            "GROUP_EXCLUDED in an entry of the first size"
                        );
                    } else {
                        for text in [e.group, e.member_content, e.member_reason] {
                            out_str(text);
                        }
                    }
                    if group_excluded {
                        assert!(e.group.len > 0, "a group exclusion without its group key");
                        assert!(
                            e.member_index < s.total_candidates,
                            "a group exclusion naming a member out of range"
                        );
                    }
                }
            }
            // A summary of the first version's size has no group or pruned-form count:
            // read a whole one.
            let (group_count, pruned_form_count) =
                if summary.struct_size() >= size_of::<ctxpack_report_summary>() {
                    (s.group_count, s.pruned_form_count)
                } else {
                    let mut whole: ctxpack_report_summary = std::mem::zeroed();
                    whole.struct_size = size_of::<ctxpack_report_summary>();
                    assert_eq!(
                        ctxpack_result_report_summary(result, &mut whole, ptr::null_mut()),
                        CTXPACK_OK
                    );
                    (whole.group_count, whole.pruned_form_count)
                };
            for i in 0..=group_count {
                if let Some(g) = self.entry::<ctxpack_group_entry>(i, group_count, |out, err| {
                    ctxpack_result_report_group(result, i, out, err)
                }) {
                    out_str(g.key);
                    let members = out_array(g.members, g.member_count);
                    assert!(!members.is_empty(), "a group without members");
                    assert!(
                        members.windows(2).all(|w| w[0] < w[1])
                            && members.iter().all(|&m| m < s.total_candidates),
                        "group members out of order or range: {members:?}"
                    );
                    assert!(
                        g.decision == ctxpack_group_decision::Included as i32
                            || g.decision == ctxpack_group_decision::Excluded as i32,
                        "bad group decision {}",
                        g.decision
                    );
                }
            }
            for i in 0..=pruned_form_count {
                if let Some(p) =
                    self.entry::<ctxpack_pruned_form>(i, pruned_form_count, |out, err| {
                        ctxpack_result_report_pruned_form(result, i, out, err)
                    })
                {
                    assert!(
                        p.index < s.total_candidates,
                        "pruned form of item {}",
                        p.index
                    );
                    assert!(p.form >= 1 && p.dominated_by != p.form, "pruned form {p:?}");
                }
            }
            for i in 0..=s.event_count {
                if let Some(e) = self.entry::<ctxpack_trace_event>(i, s.event_count, |out, err| {
                    ctxpack_result_report_event(result, i, out, err)
                }) {
                    out_str(e.message);
                }
            }
            for i in 0..=s.shortfall_count {
                if let Some(e) =
                    self.entry::<ctxpack_shortfall>(i, s.shortfall_count, |out, err| {
                        ctxpack_result_report_shortfall(result, i, out, err)
                    })
                {
                    out_str(e.kind);
                }
            }
            let mut json = ctxpack_str::EMPTY;
            assert_eq!(ctxpack_result_report_json(result, &mut json), CTXPACK_OK);
            let json = out_str(json);
            let parsed: Result<serde_json::Value, _> = serde_json::from_str(&json);
            assert!(parsed.is_ok(), "report JSON does not parse: {json}");
        }
    }

    /// One accessor call filling an output struct at `i` (of `count`), with a struct of
    /// any `struct_size` and an error slot; returns the entry when the call must and did
    /// succeed. A bad `struct_size` must come with an error object (checked by `check`).
    fn entry<T: Copy + 'static>(
        &mut self,
        i: usize,
        count: usize,
        call: impl FnOnce(*mut T, *mut *mut ctxpack_error) -> ctxpack_status,
    ) -> Option<T> {
        self.entry_sized(i, count, call).map(|(value, _)| value)
    }

    /// [`Self::entry`], and whether the caller's struct had every field of this version
    /// (not a smaller, older `struct_size`).
    fn entry_sized<T: Copy + 'static>(
        &mut self,
        i: usize,
        count: usize,
        call: impl FnOnce(*mut T, *mut *mut ctxpack_error) -> ctxpack_status,
    ) -> Option<(T, bool)> {
        // SAFETY: the report structs are plain data, valid when zeroed.
        let mut out = unsafe { VersionedBuf::output::<T>(&mut self.r) };
        let mut slot = self.error_slot();
        let status = call(out.ptr(), slot.arg());
        out.check_tail();
        let ok = self.check("an output struct accessor", status, slot);
        if !out.size_is_valid() {
            assert!(!ok, "accepted struct_size {}", out.struct_size());
            return None;
        }
        if i >= count {
            assert_eq!(status, CTXPACK_OUT_OF_RANGE, "entry {i} of {count}");
            return None;
        }
        assert!(ok, "entry {i} of {count}: {status:?}");
        Some((out.read(), out.struct_size() >= size_of::<T>()))
    }

    /// Reads a pooled result (or a wrong handle) through the accessors.
    fn result_accessor(&mut self) {
        let result = self.pick::<ctxpack_result>(Kind::Result);
        if self
            .handles
            .iter()
            .any(|h| h.kind == Kind::Result && h.ptr == result.cast())
        {
            self.check_result(result, None, None, None);
            return;
        }
        let (mut p, mut n) = (ptr::null(), 0);
        // SAFETY: a NULL or wrong-type handle, writable out-parameters.
        let status = unsafe { ctxpack_result_indices(result, &mut p, &mut n) };
        assert!(matches!(
            status,
            CTXPACK_NULL_ARGUMENT | CTXPACK_WRONG_HANDLE_TYPE
        ));
    }

    // ---- one stage alone -----------------------------------------------------------

    /// Input-chosen scores for `ctxpack_slicer_slice` / `ctxpack_placer_place`.
    fn scores(&mut self, len: Option<usize>) -> Vec<f64> {
        let count = match (len, self.r.u8() % 8) {
            (Some(len), 0..=5) => len,
            _ => self.r.below(8),
        };
        (0..count).map(|_| self.r.f64()).collect()
    }

    fn scorer_score(&mut self) {
        let scorer = self.pick::<ctxpack_scorer>(Kind::Scorer);
        let items = self.pick::<ctxpack_items>(Kind::Items);
        let len = Self::items_len(items);
        let capacity = match (len, self.r.u8() % 4) {
            (Some(len), 0..=2) => len,
            _ => self.r.below(8),
        };
        let mut out = vec![0f64; capacity];
        let mut slot = self.error_slot();
        // Built-in scorer trees give finite scores (a custom one's, checked by the library
        // itself, may become NaN in a scaled scorer whose inner range overflows).
        let built_in = !self.has_custom(scorer);
        self.arm(&[(Kind::Scorer, scorer.cast()), (Kind::Items, items.cast())]);
        // SAFETY: `capacity` writable scores.
        let status =
            unsafe { ctxpack_scorer_score(scorer, items, out.as_mut_ptr(), capacity, slot.arg()) };
        self.disarm();
        if self.check("scorer_score", status, slot) {
            let len = len.expect("scored a list");
            assert!(
                !built_in || out[..len].iter().all(|s| s.is_finite()),
                "a built-in scorer gave a non-finite score"
            );
        }
    }

    fn slicer_slice(&mut self) {
        let slicer = self.pick::<ctxpack_slicer>(Kind::Slicer);
        let items = self.pick::<ctxpack_items>(Kind::Items);
        let budget = self.pick::<ctxpack_budget>(Kind::Budget);
        let scores = self.scores(Self::items_len(items));
        let count = scores.len();
        self.arm(&[
            (Kind::Slicer, slicer.cast()),
            (Kind::Items, items.cast()),
            (Kind::Budget, budget.cast()),
        ]);
        // SAFETY: `count` scores, handle arguments as picked.
        let ok = self.create(Kind::SliceResult, "slicer_slice", |o, e| unsafe {
            ctxpack_slicer_slice(slicer, items, scores.as_ptr(), count, budget, o.cast(), e)
        });
        self.disarm();
        if ok {
            assert!(
                scores.iter().all(|s| s.is_finite()),
                "slice accepted a non-finite score"
            );
        }
        if ok {
            let result = self.handles.last().expect("just created").ptr.cast();
            self.check_slice_result(result, count);
        }
    }

    /// Reads a slice result: positions distinct and in range, shortfalls readable.
    fn check_slice_result(&mut self, result: *const ctxpack_slice_result, count: usize) {
        // SAFETY: a live slice result, writable out-parameters.
        unsafe {
            let (mut p, mut n) = (ptr::null(), 0);
            assert_eq!(
                ctxpack_slice_result_selected(result, &mut p, &mut n),
                CTXPACK_OK
            );
            let mut selected = out_array(p, n);
            selected.sort_unstable();
            selected.dedup();
            assert_eq!(selected.len(), n, "a position selected twice");
            assert!(
                selected.iter().all(|&i| i < count),
                "a position out of range"
            );
            assert_eq!(
                ctxpack_slice_result_cap_excluded(result, &mut p, &mut n),
                CTXPACK_OK
            );
            assert!(out_array(p, n).iter().all(|&i| i < count));
            let mut shortfalls = 0;
            let status = ctxpack_slice_result_shortfall_count(result, &mut shortfalls);
            assert_eq!(status, CTXPACK_OK);
            for i in 0..=shortfalls {
                if let Some(s) = self.entry::<ctxpack_shortfall>(i, shortfalls, |out, err| {
                    ctxpack_slice_result_shortfall(result, i, out, err)
                }) {
                    out_str(s.kind);
                }
            }
        }
    }

    fn placer_place(&mut self) {
        let placer = self.pick::<ctxpack_placer>(Kind::Placer);
        let items = self.pick::<ctxpack_items>(Kind::Items);
        let scores = self.scores(Self::items_len(items));
        let count = scores.len();
        let mut order = vec![usize::MAX; count];
        let mut slot = self.error_slot();
        self.arm(&[(Kind::Placer, placer.cast()), (Kind::Items, items.cast())]);
        // SAFETY: `count` scores and `count` writable positions.
        let status = unsafe {
            ctxpack_placer_place(
                placer,
                items,
                scores.as_ptr(),
                count,
                order.as_mut_ptr(),
                slot.arg(),
            )
        };
        self.disarm();
        if self.check("placer_place", status, slot) {
            assert!(
                scores.iter().all(|s| s.is_finite()),
                "place accepted a non-finite score"
            );
            order.sort_unstable();
            assert!(order.iter().copied().eq(0..count), "not a permutation");
        }
    }

    // ---- the rest ------------------------------------------------------------------

    /// One `ctxpack_<struct>_init` call on a buffer of 4200 bytes, with a size that is
    /// exact, larger (a newer caller), too small, absurd, or a NULL pointer: a valid size
    /// zeroes exactly that many bytes and stores it first, anything else writes nothing.
    fn check_init(
        &mut self,
        first: usize,
        known: usize,
        init: impl Fn(*mut c_void, usize) -> ctxpack_status,
    ) {
        let mut buf = vec![u64::from_ne_bytes([0xAB; 8]); 4200 / 8];
        let size = match self.r.u8() % 8 {
            0 => self.r.below(known),
            1 => known + 8 * (1 + self.r.below(3)),
            2 => 4097,
            3 => first,
            _ => known,
        };
        if self.r.one_in(16) {
            assert_eq!(init(ptr::null_mut(), size), CTXPACK_NULL_ARGUMENT);
            return;
        }
        let status = init(buf.as_mut_ptr().cast(), size);
        let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
        if !struct_size_is_valid(size, first) {
            assert_eq!(status, CTXPACK_INVALID_ARGUMENT, "init with size {size}");
            assert!(bytes.iter().all(|&b| b == 0xAB), "a refused init wrote");
            return;
        }
        assert_eq!(status, CTXPACK_OK, "init with size {size}");
        assert_eq!(bytes[..8], size.to_ne_bytes(), "struct_size after init");
        assert!(
            bytes[8..size].iter().all(|&b| b == 0),
            "init left a byte non-zero"
        );
        assert!(
            bytes[size..].iter().all(|&b| b == 0xAB),
            "init wrote past the size"
        );
    }

    /// Every struct's initialiser, through [`Self::check_init`].
    fn initialisers(&mut self) {
        macro_rules! init {
            ($t:ty, $f:ident) => {
                // SAFETY: `check_init` passes NULL or a buffer of 4200 writable bytes.
                self.check_init(first_version_size::<$t>(), size_of::<$t>(), |p, n| unsafe {
                    $f(p.cast(), n)
                })
            };
        }
        match self.r.below(14) {
            0 => init!(ctxpack_item_desc, ctxpack_item_desc_init),
            1 => init!(ctxpack_budget_desc, ctxpack_budget_desc_init),
            2 => init!(ctxpack_pipeline_options, ctxpack_pipeline_options_init),
            3 => init!(ctxpack_run_options, ctxpack_run_options_init),
            4 => init!(ctxpack_decay_config, ctxpack_decay_config_init),
            5 => init!(ctxpack_report_summary, ctxpack_report_summary_init),
            6 => init!(ctxpack_included_entry, ctxpack_included_entry_init),
            7 => init!(ctxpack_excluded_entry, ctxpack_excluded_entry_init),
            8 => init!(ctxpack_trace_event, ctxpack_trace_event_init),
            9 => init!(ctxpack_shortfall, ctxpack_shortfall_init),
            10 => init!(ctxpack_group_entry, ctxpack_group_entry_init),
            11 => init!(ctxpack_pruned_form, ctxpack_pruned_form_init),
            12 => init!(ctxpack_variant_desc, ctxpack_variant_desc_init),
            _ => init!(
                ctxpack_kind_quota_utilization,
                ctxpack_kind_quota_utilization_init
            ),
        }
    }

    /// Status names, C strings, the version and error accessors on NULL.
    fn misc(&mut self) {
        if self.r.bool() {
            self.initialisers();
        }
        let status = i32::from(self.r.u8()) - 20;
        let c = CString::new(
            self.r
                .bytes(8)
                .iter()
                .map(|&b| b.max(1))
                .collect::<Vec<u8>>(),
        )
        .expect("no NUL");
        // SAFETY: static strings from the library; a NUL-terminated string.
        unsafe {
            let name = std::ffi::CStr::from_ptr(ctxpack_status_name(status));
            assert!(name.to_str().is_ok());
            let s = ctxpack_str_from_cstr(c.as_ptr());
            assert_eq!(s.len, c.as_bytes().len());
            assert!(!std::ffi::CStr::from_ptr(ctxpack_version())
                .to_bytes()
                .is_empty());
            assert!(ctxpack_version_number() > 0);
            assert_ne!(ctxpack_error_code(ptr::null()), CTXPACK_OK);
            out_str(ctxpack_error_message(ptr::null()));
            ctxpack_error_free(ptr::null_mut());
            let index = self.r.below(ctxpack_preset_count() + 2);
            let mut preset = ctxpack_str::EMPTY;
            match ctxpack_preset_name(index, &mut preset) {
                CTXPACK_OK => assert!(!out_str(preset).is_empty()),
                status => assert_eq!(status, CTXPACK_OUT_OF_RANGE),
            }
        }
    }

    // ---- policies, analytics, sensitivity --------------------------------------------

    /// A pipeline from a preset name or a policy document (valid, invalid or raw bytes).
    fn pipeline_from_policy(&mut self) {
        if self.r.bool() {
            let name = self.arena.str(&mut self.r, PRESET_NAMES);
            // SAFETY: a string argument from the arena, out-parameters from `create`.
            self.create(Kind::Pipeline, "pipeline_new_preset", |o, e| unsafe {
                ctxpack_pipeline_new_preset(name, o.cast(), e)
            });
        } else {
            let json = self.arena.str(&mut self.r, POLICY_DOCS);
            // SAFETY: as above.
            self.create(Kind::Pipeline, "pipeline_new_policy_json", |o, e| unsafe {
                ctxpack_pipeline_new_policy_json(json, o.cast(), e)
            });
        }
    }

    /// Calls a function that writes a new string handle (kept like any other) and returns
    /// its text, or `None` when the call failed.
    fn written_text(
        &mut self,
        what: &str,
        write: impl FnOnce(*mut *mut ctxpack_string, *mut *mut ctxpack_error) -> ctxpack_status,
    ) -> Option<String> {
        if !self.create(Kind::Text, what, |o, e| write(o.cast(), e)) {
            return None;
        }
        let text: *const ctxpack_string = self.handles.last().expect("just created").ptr.cast();
        // SAFETY: the string handle just created.
        Some(unsafe { string_text(text) })
    }

    /// Writes a pipeline's policy JSON; what is written must read back into a pipeline
    /// whose policy JSON is the same text.
    fn policy_json_round_trip(&mut self) {
        let pipeline = self.pick::<ctxpack_pipeline>(Kind::Pipeline);
        let pretty = flag_byte(&mut self.r);
        // SAFETY: a handle argument as picked, out-parameters from `create`.
        let written = self.written_text("pipeline_policy_json", |o, e| unsafe {
            ctxpack_pipeline_policy_json(pipeline, pretty, o, e)
        });
        let Some(json) = written else {
            return;
        };
        assert!(pretty <= 1, "pretty = {pretty} was accepted");
        let (mut rebuilt, mut again) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: a string argument alive for the calls, writable out-parameters.
        unsafe {
            let status =
                ctxpack_pipeline_new_policy_json(str_arg(&json), &mut rebuilt, ptr::null_mut());
            assert_eq!(
                status, CTXPACK_OK,
                "written policy JSON does not read back: {json}"
            );
            let status = ctxpack_pipeline_policy_json(rebuilt, pretty, &mut again, ptr::null_mut());
            assert_eq!(status, CTXPACK_OK);
            assert_eq!(
                string_text(again),
                json,
                "policy JSON changed on a round trip"
            );
            ctxpack_string_free(again);
            ctxpack_pipeline_free(rebuilt);
        }
    }

    /// Creates a registry, adds a scorer to one under a name, or reads one's names.
    fn registry(&mut self) {
        match self.r.below(3) {
            0 => {
                // SAFETY: out-parameters from `create`.
                self.create(Kind::Registry, "scorer_registry_new", |o, e| unsafe {
                    ctxpack_scorer_registry_new(o.cast(), e)
                });
            }
            1 => {
                let registry = self.pick::<ctxpack_scorer_registry>(Kind::Registry);
                let name = self.arena.str(&mut self.r, REGISTERED_NAMES);
                let scorer = self.pick::<ctxpack_scorer>(Kind::Scorer);
                let mut slot = self.error_slot();
                // SAFETY: handle and string arguments as picked.
                let status =
                    unsafe { ctxpack_scorer_registry_add(registry, name, scorer, slot.arg()) };
                self.check("scorer_registry_add", status, slot);
            }
            _ => {
                let registry = self.pick::<ctxpack_scorer_registry>(Kind::Registry);
                let mut count = usize::MAX;
                // SAFETY: a handle argument as picked, a writable out-parameter.
                let status = unsafe { ctxpack_scorer_registry_count(registry, &mut count) };
                assert_ne!(status, CTXPACK_PANIC);
                if status != CTXPACK_OK {
                    return;
                }
                for i in 0..=count {
                    let mut name = ctxpack_str::EMPTY;
                    // SAFETY: a live registry, a writable out-parameter.
                    let status = unsafe { ctxpack_scorer_registry_name(registry, i, &mut name) };
                    if i == count {
                        assert_eq!(status, CTXPACK_OUT_OF_RANGE);
                        continue;
                    }
                    assert_eq!(status, CTXPACK_OK);
                    // SAFETY: a string owned by the live registry.
                    unsafe {
                        assert_eq!(*name.ptr.add(name.len), 0, "name not NUL-terminated");
                        assert!(
                            !out_str(name).trim().is_empty(),
                            "a blank name was registered"
                        );
                    }
                }
            }
        }
    }

    /// `ctxpack_json_read_options` as a caller passes them: NULL one time in eight, else
    /// strict or not (a flag byte, sometimes neither 0 nor 1), with a registry picked like
    /// any handle (NULL, live, another type) and reserved bytes (sometimes not zero), in a
    /// struct of any `struct_size`, sometimes set up by `ctxpack_json_read_options_init`.
    /// Returns the buffer (to keep alive) and whether the library must reject it.
    fn read_options(&mut self) -> (Option<VersionedBuf>, bool) {
        if self.r.one_in(8) {
            return (None, false);
        }
        let mut options = ctxpack_json_read_options {
            struct_size: size_of::<ctxpack_json_read_options>(),
            registry: ptr::null(),
            strict: 0,
            reserved: [0; 7],
        };
        if self.r.bool() {
            options.struct_size = 0;
            // SAFETY: a writable struct of its own size.
            let status = unsafe {
                ctxpack_json_read_options_init(&mut options, size_of::<ctxpack_json_read_options>())
            };
            assert_eq!(status, CTXPACK_OK);
            assert_eq!(options.struct_size, size_of::<ctxpack_json_read_options>());
            assert!(options.registry.is_null() && options.strict == 0);
        }
        options.registry = self.pick::<ctxpack_scorer_registry>(Kind::Registry);
        options.strict = flag_byte(&mut self.r);
        options.reserved = reserved_bytes(&mut self.r);
        let bad_bytes = options.strict > 1 || options.reserved.iter().any(|&b| b != 0);
        let buf = VersionedBuf::input(&mut self.r, options);
        let invalid = !buf.size_is_valid() || bad_bytes;
        (Some(buf), invalid)
    }

    /// The warnings out-parameter: NULL one time in four, else a slot pre-set to a
    /// dangling pointer.
    fn warnings_slot(&mut self) -> Option<*mut ctxpack_json_warnings> {
        (!self.r.one_in(4)).then(|| NonNull::dangling().as_ptr())
    }

    /// After a JSON constructor: the warnings slot is NULL after a failure and a live
    /// handle after a success, whose entries all read.
    fn settle_warnings(&mut self, what: &str, ok: bool, slot: Option<*mut ctxpack_json_warnings>) {
        let Some(warnings) = slot else {
            return;
        };
        if !ok {
            assert!(warnings.is_null(), "{what}: failure left the warnings set");
            return;
        }
        assert!(
            !warnings.is_null(),
            "{what}: success without a warnings handle"
        );
        self.handles.push(Handle {
            kind: Kind::Warnings,
            ptr: warnings.cast(),
            custom: false,
        });
        let mut count = usize::MAX;
        // SAFETY: a live warnings handle, a writable out-parameter.
        assert_eq!(
            unsafe { ctxpack_json_warnings_count(warnings, &mut count) },
            CTXPACK_OK
        );
        for i in 0..=count {
            // SAFETY: a live warnings handle; the output buffer is as long as claimed.
            let entry = self.entry::<ctxpack_json_warning>(i, count, |out, err| unsafe {
                ctxpack_json_warnings_entry(warnings, i, out, err)
            });
            if let Some(w) = entry {
                assert!((1..=4).contains(&w.kind), "warning kind {}", w.kind);
                // SAFETY: strings owned by the live warnings handle.
                unsafe {
                    let (path, message, text) =
                        (out_str(w.path), out_str(w.message), out_str(w.text));
                    assert_eq!(text, format!("{path}: {message}"));
                    for s in [w.path, w.message, w.text] {
                        assert_eq!(*s.ptr.add(s.len), 0, "not NUL-terminated");
                    }
                }
            }
        }
    }

    /// A pipeline from a policy document read with options (strict or lenient, a
    /// registry), with its warnings.
    fn pipeline_from_policy_with_options(&mut self) {
        let pool = if self.r.bool() {
            LENIENT_POLICY_DOCS
        } else {
            POLICY_DOCS
        };
        let json = self.arena.str(&mut self.r, pool);
        let (mut options, invalid) = self.read_options();
        let options_ptr = options
            .as_mut()
            .map_or(ptr::null(), |b| b.ptr::<ctxpack_json_read_options>());
        let mut slot = self.warnings_slot();
        let warnings_arg = slot
            .as_mut()
            .map_or(ptr::null_mut(), |w| w as *mut *mut ctxpack_json_warnings);
        let what = "pipeline_new_policy_json_with";
        // SAFETY: arguments built above and kept alive, out-parameters from `create`.
        let ok = self.create(Kind::Pipeline, what, |o, e| unsafe {
            ctxpack_pipeline_new_policy_json_with(json, options_ptr, o.cast(), warnings_arg, e)
        });
        assert!(!(ok && invalid), "{what}: accepted bad options");
        self.settle_warnings(what, ok, slot);
    }

    /// A budget from a JSON document (with options and warnings), or a budget written as
    /// JSON: the text must read back, strictly and without warnings, into a budget that
    /// writes the same text.
    fn budget_json(&mut self) {
        if self.r.bool() {
            let json = self.arena.str(&mut self.r, BUDGET_DOCS);
            let (mut options, invalid) = self.read_options();
            let options_ptr = options
                .as_mut()
                .map_or(ptr::null(), |b| b.ptr::<ctxpack_json_read_options>());
            let mut slot = self.warnings_slot();
            let warnings_arg = slot
                .as_mut()
                .map_or(ptr::null_mut(), |w| w as *mut *mut ctxpack_json_warnings);
            let what = "budget_new_json";
            // SAFETY: arguments built above and kept alive, out-parameters from `create`.
            let ok = self.create(Kind::Budget, what, |o, e| unsafe {
                ctxpack_budget_new_json(json, options_ptr, o.cast(), warnings_arg, e)
            });
            assert!(!(ok && invalid), "{what}: accepted bad options");
            self.settle_warnings(what, ok, slot);
            return;
        }
        let budget = self.pick::<ctxpack_budget>(Kind::Budget);
        let pretty = flag_byte(&mut self.r);
        // SAFETY: a handle argument as picked, out-parameters from `create`.
        let written = self.written_text("budget_json", |o, e| unsafe {
            ctxpack_budget_json(budget, pretty, o, e)
        });
        let Some(json) = written else {
            return;
        };
        assert!(pretty <= 1, "pretty = {pretty} was accepted");
        let arg = str_arg(&json);
        let options = ctxpack_json_read_options {
            struct_size: size_of::<ctxpack_json_read_options>(),
            registry: ptr::null(),
            strict: 1,
            reserved: [0; 7],
        };
        let (mut again, mut warnings, mut rewritten) =
            (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        // SAFETY: arguments alive for the calls, writable out-parameters.
        unsafe {
            let status =
                ctxpack_budget_new_json(arg, &options, &mut again, &mut warnings, ptr::null_mut());
            assert_eq!(
                status, CTXPACK_OK,
                "written budget JSON does not read back: {json}"
            );
            let mut count = usize::MAX;
            assert_eq!(
                ctxpack_json_warnings_count(warnings, &mut count),
                CTXPACK_OK
            );
            assert_eq!(count, 0, "a written budget reads with warnings: {json}");
            assert_eq!(
                ctxpack_budget_json(again, pretty, &mut rewritten, ptr::null_mut()),
                CTXPACK_OK
            );
            assert_eq!(
                string_text(rewritten),
                json,
                "budget JSON changed on a round trip"
            );
            ctxpack_string_free(rewritten);
            ctxpack_json_warnings_free(warnings);
            ctxpack_budget_free(again);
        }
    }

    fn dry_run(&mut self) {
        let pipeline = self.pick::<ctxpack_pipeline>(Kind::Pipeline);
        let items = self.pick::<ctxpack_items>(Kind::Items);
        let budget = self.pick::<ctxpack_budget>(Kind::Budget);
        let len = Self::items_len(items);
        self.arm(&[
            (Kind::Pipeline, pipeline.cast()),
            (Kind::Items, items.cast()),
            (Kind::Budget, budget.cast()),
        ]);
        // SAFETY: handle arguments as picked, out-parameters from `create`.
        let ok = self.create(Kind::Result, "pipeline_dry_run", |o, e| unsafe {
            ctxpack_pipeline_dry_run(pipeline, items, budget, o.cast(), e)
        });
        self.disarm();
        if ok {
            let result = self.handles.last().expect("just created").ptr.cast();
            self.check_result(result, len, Some(true), None);
        }
    }

    /// `ctxpack_pipeline_marginal_items` and `ctxpack_pipeline_min_budget_for`.
    fn budget_simulation(&mut self) {
        let pipeline = self.pick::<ctxpack_pipeline>(Kind::Pipeline);
        let items = self.pick::<ctxpack_items>(Kind::Items);
        let len = Self::items_len(items);
        if self.r.bool() {
            let budget = self.pick::<ctxpack_budget>(Kind::Budget);
            let slack = self.r.i64();
            let mut out = vec![usize::MAX; len.unwrap_or(0)];
            let (mut count, mut slot) = (usize::MAX, self.error_slot());
            self.arm(&[
                (Kind::Pipeline, pipeline.cast()),
                (Kind::Items, items.cast()),
                (Kind::Budget, budget.cast()),
            ]);
            // SAFETY: `out` holds the list's length, handle arguments as picked.
            let status = unsafe {
                ctxpack_pipeline_marginal_items(
                    pipeline,
                    items,
                    budget,
                    slack,
                    out.as_mut_ptr(),
                    out.len(),
                    &mut count,
                    slot.arg(),
                )
            };
            self.disarm();
            if self.check("pipeline_marginal_items", status, slot) {
                assert!(count <= out.len(), "marginal count {count} > capacity");
                let mut positions = out[..count].to_vec();
                positions.sort_unstable();
                positions.dedup();
                assert_eq!(positions.len(), count, "a marginal item twice");
                assert!(
                    positions.iter().all(|&p| p < out.len()),
                    "marginal out of range"
                );
            }
        } else {
            let target = self.r.below(len.unwrap_or(0) + 2);
            let ceiling = self.r.i64();
            let (mut found, mut min_budget) = (false, -1i64);
            let mut slot = self.error_slot();
            self.arm(&[
                (Kind::Pipeline, pipeline.cast()),
                (Kind::Items, items.cast()),
            ]);
            // SAFETY: handle arguments as picked, writable out-parameters.
            let status = unsafe {
                ctxpack_pipeline_min_budget_for(
                    pipeline,
                    items,
                    target,
                    ceiling,
                    &mut found,
                    &mut min_budget,
                    slot.arg(),
                )
            };
            self.disarm();
            if self.check("pipeline_min_budget_for", status, slot) {
                if found {
                    assert!((0..=ceiling).contains(&min_budget), "budget {min_budget}");
                } else {
                    assert_eq!(min_budget, 0);
                }
            }
        }
    }

    /// The result analytics: utilization, diversity, coverage, quota utilization.
    fn result_analytics(&mut self) {
        let result = self.pick::<ctxpack_result>(Kind::Result);
        // SAFETY: handle arguments as picked, writable out-parameters.
        unsafe {
            let mut value = f64::NAN;
            let status = ctxpack_result_budget_utilization(result, &mut value);
            assert_ne!(status, CTXPACK_PANIC);
            if status == CTXPACK_OK {
                assert!(!value.is_nan(), "budget utilization is NaN");
                assert!(
                    value.to_bits() != (-0.0f64).to_bits(),
                    "budget utilization is -0.0"
                );
            }
            let mut kinds = 0usize;
            assert_ne!(
                ctxpack_result_kind_diversity(result, &mut kinds),
                CTXPACK_PANIC
            );
            let status = ctxpack_result_timestamp_coverage(result, &mut value);
            assert_ne!(status, CTXPACK_PANIC);
            if status == CTXPACK_OK {
                assert!((0.0..=1.0).contains(&value), "timestamp coverage {value}");
            }
        }
        // SAFETY: as above; out-parameters from `create`.
        let ok = self.create(
            Kind::QuotaUtilization,
            "result_quota_utilization",
            |o, e| unsafe { ctxpack_result_quota_utilization(result, o.cast(), e) },
        );
        if !ok {
            return;
        }
        let utilization: *const ctxpack_quota_utilization =
            self.handles.last().expect("just created").ptr.cast();
        let mut count = 0;
        // SAFETY: a live handle, a writable count, output structs of their `struct_size`.
        unsafe {
            assert_eq!(
                ctxpack_quota_utilization_count(utilization, &mut count),
                CTXPACK_OK
            );
            for i in 0..=count {
                if let Some(e) =
                    self.entry::<ctxpack_kind_quota_utilization>(i, count, |out, err| {
                        ctxpack_quota_utilization_entry(utilization, i, out, err)
                    })
                {
                    out_str(e.kind);
                }
            }
        }
    }

    /// A sensitivity comparison over picked pipelines, read through every accessor.
    fn sensitivity(&mut self) {
        let items = self.pick::<ctxpack_items>(Kind::Items);
        let budget = self.pick::<ctxpack_budget>(Kind::Budget);
        let len = Self::items_len(items);
        let variants: Vec<ctxpack_sensitivity_variant> = (0..self.r.below(4))
            .map(|_| ctxpack_sensitivity_variant {
                label: self.arena.str(&mut self.r, WORDS),
                pipeline: self.pick::<ctxpack_pipeline>(Kind::Pipeline),
            })
            .collect();
        let n = variants.len();
        let v = if n == 0 {
            ptr::null()
        } else {
            variants.as_ptr()
        };
        let mut uses: Vec<(Kind, *mut c_void)> =
            vec![(Kind::Items, items.cast()), (Kind::Budget, budget.cast())];
        uses.extend(
            variants
                .iter()
                .map(|v| (Kind::Pipeline, v.pipeline.cast_mut().cast())),
        );
        self.arm(&uses);
        // SAFETY: `n` variants, handle arguments as picked, out-parameters from `create`.
        let ok = self.create(Kind::Sensitivity, "sensitivity_new", |o, e| unsafe {
            ctxpack_sensitivity_new(items, budget, v, n, o.cast(), e)
        });
        self.disarm();
        if !ok {
            return;
        }
        let sensitivity: *const ctxpack_sensitivity =
            self.handles.last().expect("just created").ptr.cast();
        // SAFETY: a live sensitivity, writable out-parameters, arrays read within length.
        unsafe {
            let mut count = 0;
            assert_eq!(
                ctxpack_sensitivity_variant_count(sensitivity, &mut count),
                CTXPACK_OK
            );
            assert_eq!(count, n, "variant count");
            for i in 0..=n {
                let mut label = ctxpack_str::EMPTY;
                match ctxpack_sensitivity_variant_label(sensitivity, i, &mut label) {
                    CTXPACK_OK => drop(out_str(label)),
                    status => assert_eq!((status, i), (CTXPACK_OUT_OF_RANGE, n)),
                }
            }
            let i = self.r.below(n + 1);
            let ok = self.create(Kind::Result, "sensitivity_variant_result", |o, e| {
                ctxpack_sensitivity_variant_result(sensitivity, i, o.cast(), e)
            });
            if ok {
                let result = self.handles.last().expect("just created").ptr.cast();
                self.check_result(result, len, Some(true), None);
            }
            let mut diffs = 0;
            assert_eq!(
                ctxpack_sensitivity_diff_count(sensitivity, &mut diffs),
                CTXPACK_OK
            );
            for d in 0..=diffs {
                let (mut item, mut statuses, mut m) = (usize::MAX, ptr::null(), 0);
                let status =
                    ctxpack_sensitivity_diff(sensitivity, d, &mut item, &mut statuses, &mut m);
                if d == diffs {
                    assert_eq!(status, CTXPACK_OUT_OF_RANGE);
                    continue;
                }
                assert_eq!(status, CTXPACK_OK);
                assert_eq!(m, n, "one status per variant");
                assert!(out_array(statuses, m).iter().all(|s| (1..=2).contains(s)));
                if let Some(len) = len {
                    assert!(item < len, "diff item out of range");
                }
            }
        }
    }
}

/// Frees `ptr` with the free function of `kind` (a no-op when `ptr` is of another type).
fn free_as(kind: Kind, ptr: *mut c_void) {
    // SAFETY: `ptr` is a live handle (of `kind`, or of another type, which the library
    // must detect and ignore).
    unsafe {
        match kind {
            Kind::Items => ctxpack_items_free(ptr.cast()),
            Kind::Budget => ctxpack_budget_free(ptr.cast()),
            Kind::Scorer => ctxpack_scorer_free(ptr.cast()),
            Kind::Slicer => ctxpack_slicer_free(ptr.cast()),
            Kind::Placer => ctxpack_placer_free(ptr.cast()),
            Kind::Pipeline => ctxpack_pipeline_free(ptr.cast()),
            Kind::Result => ctxpack_result_free(ptr.cast()),
            Kind::SliceResult => ctxpack_slice_result_free(ptr.cast()),
            Kind::Text => ctxpack_string_free(ptr.cast()),
            Kind::QuotaUtilization => ctxpack_quota_utilization_free(ptr.cast()),
            Kind::Sensitivity => ctxpack_sensitivity_free(ptr.cast()),
            Kind::Registry => ctxpack_scorer_registry_free(ptr.cast()),
            Kind::Warnings => ctxpack_json_warnings_free(ptr.cast()),
        }
    }
}

/// The arguments of a one-shot run, for a second run on them.
#[derive(Clone, Copy)]
struct OneShotArgs {
    pipeline: *const ctxpack_pipeline,
    budget: *const ctxpack_budget,
    descs: *const ctxpack_item_desc,
    count: usize,
    options: *const ctxpack_run_options,
}

/// Checks that a one-shot result, from a run during which no callback ran, places what a
/// list run over the same descriptors places (indices, scores to the bit, reasons): the
/// one-shot run's columnar path must agree with the item path it stands in for.
///
/// # Safety
/// Live pipeline, budget and result; `descs` holds `count` descriptors; `options` is NULL
/// or valid for its `struct_size`.
unsafe fn same_as_list_run(
    oneshot: *const ctxpack_result,
    pipeline: *const ctxpack_pipeline,
    budget: *const ctxpack_budget,
    descs: *const ctxpack_item_desc,
    count: usize,
    options: *const ctxpack_run_options,
) {
    // SAFETY (block): as the caller promises; out-parameters are locals.
    unsafe {
        let mut list = ptr::null_mut();
        assert_eq!(ctxpack_items_new(&mut list, ptr::null_mut()), CTXPACK_OK);
        assert_eq!(
            ctxpack_items_push_many(list, descs, count, ptr::null_mut()),
            CTXPACK_OK
        );
        let mut result = ptr::null_mut();
        let status = ctxpack_pipeline_run(
            pipeline,
            list,
            budget,
            options,
            &mut result,
            ptr::null_mut(),
        );
        assert_eq!(
            status, CTXPACK_OK,
            "the list run failed where the one-shot run succeeded"
        );
        let read = |r: *const ctxpack_result| {
            let (mut i, mut ni, mut s, mut ns, mut c, mut nc) =
                (ptr::null(), 0, ptr::null(), 0, ptr::null(), 0);
            assert_eq!(ctxpack_result_indices(r, &mut i, &mut ni), CTXPACK_OK);
            assert_eq!(ctxpack_result_scores(r, &mut s, &mut ns), CTXPACK_OK);
            assert_eq!(ctxpack_result_reasons(r, &mut c, &mut nc), CTXPACK_OK);
            let scores: Vec<u64> = out_array(s, ns).iter().map(|x: &f64| x.to_bits()).collect();
            (out_array(i, ni), scores, out_array(c, nc))
        };
        assert_eq!(read(oneshot), read(result), "one-shot and list runs differ");
        ctxpack_result_free(result);
        ctxpack_items_free(list);
    }
}
