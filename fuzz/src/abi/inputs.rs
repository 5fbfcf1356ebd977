//! C argument values built from fuzz bytes: strings (including invalid UTF-8 and NULL
//! pointers), item descriptors, configuration arrays and versioned structs with every
//! kind of `struct_size`.
//!
//! Everything a built value points to lives in an [`Arena`] that outlives the call, so
//! every pointer handed to the library is valid for what it claims — the fuzzer tests
//! the library, not the caller's side of the contract.

use std::any::{Any, TypeId};
use std::mem::{offset_of, size_of};
use std::ptr;

use ctxpack::ffi::{
    ctxpack_budget_desc, ctxpack_count_quota_entry, ctxpack_decay_window, ctxpack_excluded_entry,
    ctxpack_included_entry, ctxpack_item_desc, ctxpack_kind_weight, ctxpack_metadata_entry,
    ctxpack_pipeline_options, ctxpack_quota_entry, ctxpack_report_summary, ctxpack_reserved_slot,
    ctxpack_run_options, ctxpack_str, ctxpack_tag_weight, ctxpack_variant_desc,
};

use crate::generate::{self, CONTENTS, KINDS, TRUST_VALUES, WORDS};
use crate::reader::ByteReader;

/// Owner of every buffer an argument points to.
#[derive(Default)]
pub struct Arena {
    kept: Vec<Box<dyn Any>>,
}

impl Arena {
    /// Keeps `v` alive and returns a pointer to its first element (NULL when empty, as a
    /// C caller would often pass).
    fn keep<T: 'static>(&mut self, v: Vec<T>) -> *const T {
        if v.is_empty() {
            return ptr::null();
        }
        let p = v.as_ptr();
        self.kept.push(Box::new(v));
        p
    }

    /// A string argument: usually one of `pool`, sometimes raw bytes (often invalid
    /// UTF-8), `{NULL, 0}` (the empty string) or `{NULL, n > 0}` (a NULL argument).
    pub fn str(&mut self, r: &mut ByteReader<'_>, pool: &[&str]) -> ctxpack_str {
        let bytes = match r.u8() % 16 {
            0 => {
                return ctxpack_str {
                    ptr: ptr::null(),
                    len: 0,
                }
            }
            1 => {
                return ctxpack_str {
                    ptr: ptr::null(),
                    len: 1 + usize::from(r.u8() % 4),
                }
            }
            2 | 3 => r.bytes(12).to_vec(),
            _ => pool[r.below(pool.len())].as_bytes().to_vec(),
        };
        let len = bytes.len();
        ctxpack_str {
            ptr: self.keep(bytes).cast(),
            len,
        }
    }

    /// A pointer + count pair for up to `max` values made by `f`; one time in sixteen a
    /// non-zero count comes with a NULL pointer (which the library must reject).
    pub fn array<T: 'static>(
        &mut self,
        r: &mut ByteReader<'_>,
        max: usize,
        mut f: impl FnMut(&mut Self, &mut ByteReader<'_>) -> T,
    ) -> (*const T, usize) {
        let v: Vec<T> = (0..r.below(max + 1)).map(|_| f(self, r)).collect();
        let count = v.len();
        if count > 0 && r.one_in(16) {
            return (ptr::null(), count);
        }
        (self.keep(v), count)
    }

    /// An item descriptor with every optional field chosen by the input, and whether
    /// a flag byte or a reserved byte makes it invalid (the library must then refuse it).
    /// The group key and the encoding come from small pools (with the usual invalid
    /// UTF-8 and NULL cases of [`Self::str`]); an item that names an encoding usually
    /// has `tokens` 0, as it must.
    pub fn item_desc(&mut self, r: &mut ByteReader<'_>) -> (ctxpack_item_desc, bool) {
        let content = self.str(r, CONTENTS);
        let (tags, tag_count) = self.array(r, 3, |a, r| a.str(r, WORDS));
        let (metadata, metadata_count) = self.array(r, 2, |a, r| ctxpack_metadata_entry {
            key: a.str(r, WORDS),
            value: a.str(r, TRUST_VALUES),
        });
        let pinned = if r.one_in(4) { flag_byte(r) } else { 0 };
        let flags = [
            flag_byte(r),
            flag_byte(r),
            flag_byte(r),
            flag_byte(r),
            pinned,
        ];
        let reserved = reserved_bytes::<3>(r);
        let bad = flags.iter().any(|&f| f > 1) || reserved.iter().any(|&b| b != 0);
        let desc = ctxpack_item_desc {
            struct_size: size_of::<ctxpack_item_desc>(),
            content,
            kind: self.str(r, KINDS),
            source: self.str(r, KINDS),
            tags,
            tag_count,
            metadata,
            metadata_count,
            tokens: generate::tokens(r),
            priority: r.i64(),
            timestamp_ns: r.i64(),
            future_relevance_hint: r.f64(),
            original_tokens: r.i64(),
            pinned: flags[4],
            has_priority: flags[0],
            has_timestamp: flags[1],
            has_future_relevance_hint: flags[2],
            has_original_tokens: flags[3],
            reserved,
            group: if r.bool() {
                self.str(r, GROUP_KEYS)
            } else {
                ctxpack_str::EMPTY
            },
            encoding: if r.one_in(4) {
                self.str(r, ENCODINGS)
            } else {
                ctxpack_str::EMPTY
            },
            variants: ptr::null(),
            variant_count: 0,
        };
        let mut desc = desc;
        if r.one_in(3) {
            (desc.variants, desc.variant_count) = self.variant_descs(r);
        }
        if desc.encoding.len > 0 && !r.one_in(8) {
            desc.tokens = 0;
        }
        (desc, bad)
    }

    /// Up to four variant descriptors (docs/variants.md), with the usual NULL-array case of
    /// [`Self::array`]: contents from the pool (with its invalid UTF-8 and NULL cases),
    /// tokens from small to huge and negative, qualities mostly valid but also 0, NaN,
    /// above 1 and negative; one time in sixteen an element with another `struct_size`.
    pub fn variant_descs(
        &mut self,
        r: &mut ByteReader<'_>,
    ) -> (*const ctxpack_variant_desc, usize) {
        let (ptr, count) = self.array(r, 4, |a, r| ctxpack_variant_desc {
            struct_size: size_of::<ctxpack_variant_desc>(),
            content: a.str(r, CONTENTS),
            tokens: match r.u8() % 8 {
                0 => r.i64(),
                1 => -1,
                _ => i64::from(r.u8()),
            },
            quality: match r.u8() % 8 {
                0 => r.f64(),
                1 => 0.0,
                2 => f64::NAN,
                3 => 1.0,
                _ => f64::from(1 + r.u8() % 100) / 100.0,
            },
        });
        if count > 1 && !ptr.is_null() && r.one_in(16) {
            // SAFETY: the arena keeps the array alive; element 1 exists.
            unsafe { (*ptr.cast_mut().add(1)).struct_size += 8 };
        }
        (ptr, count)
    }

    /// A budget descriptor with every field chosen by the input.
    pub fn budget_desc(&mut self, r: &mut ByteReader<'_>) -> ctxpack_budget_desc {
        let max = r.i64();
        let target = match r.u8() % 4 {
            0 => max,
            1 => max / 2,
            2 => i64::from(r.u8()),
            _ => r.i64(),
        };
        let output_reserve = if r.bool() { 0 } else { r.i64() };
        let (slots, slot_count) = self.array(r, 3, Arena::reserved_slot);
        ctxpack_budget_desc {
            struct_size: size_of::<ctxpack_budget_desc>(),
            max_tokens: max,
            target_tokens: target,
            output_reserve,
            slots,
            slot_count,
            estimation_safety_margin_percent: if r.bool() { 0.0 } else { r.f64() },
        }
    }

    /// A reserved slot of a budget.
    pub fn reserved_slot(&mut self, r: &mut ByteReader<'_>) -> ctxpack_reserved_slot {
        ctxpack_reserved_slot {
            kind: self.str(r, KINDS),
            count: r.i64(),
        }
    }

    /// A kind weight.
    pub fn kind_weight(&mut self, r: &mut ByteReader<'_>) -> ctxpack_kind_weight {
        ctxpack_kind_weight {
            kind: self.str(r, KINDS),
            weight: r.f64(),
        }
    }

    /// A tag weight.
    pub fn tag_weight(&mut self, r: &mut ByteReader<'_>) -> ctxpack_tag_weight {
        ctxpack_tag_weight {
            tag: self.str(r, WORDS),
            weight: r.f64(),
        }
    }

    /// A percentage quota entry.
    pub fn quota_entry(&mut self, r: &mut ByteReader<'_>) -> ctxpack_quota_entry {
        ctxpack_quota_entry {
            kind: self.str(r, KINDS),
            require: r.f64(),
            cap: r.f64(),
        }
    }

    /// A count quota entry.
    pub fn count_quota_entry(&mut self, r: &mut ByteReader<'_>) -> ctxpack_count_quota_entry {
        ctxpack_count_quota_entry {
            kind: self.str(r, KINDS),
            require_count: r.count(),
            cap_count: r.count(),
        }
    }

    /// A step window of a decay curve.
    pub fn decay_window(&mut self, r: &mut ByteReader<'_>) -> ctxpack_decay_window {
        ctxpack_decay_window {
            max_age_ns: r.i64(),
            score: r.f64(),
        }
    }
}

/// A flag byte a caller writes: 0 or 1, one time in sixteen any byte (which the library
/// must refuse).
pub fn flag_byte(r: &mut ByteReader<'_>) -> u8 {
    if r.one_in(16) {
        r.u8()
    } else {
        u8::from(r.bool())
    }
}

/// The `reserved` bytes of a caller struct: zero, one time in thirty-two not (which the
/// library must refuse).
pub fn reserved_bytes<const N: usize>(r: &mut ByteReader<'_>) -> [u8; N] {
    let mut bytes = [0u8; N];
    if r.one_in(32) {
        bytes[r.below(N)] = 1 + r.u8() % 255;
    }
    bytes
}

/// Group keys of item descriptors: a few shared keys (so that groups form), one with a
/// NUL byte and one that differs from another only in case.
const GROUP_KEYS: &[&str] = &["call-1", "call-2", "Call-1", "g", "tool\0use", ""];

/// Encoding names of item descriptors: the two built-in ones (one in upper case) and
/// unknown ones.
const ENCODINGS: &[&str] = &[
    "o200k_base",
    "cl100k_base",
    "CL100K_BASE",
    "p50k_base",
    "gpt2",
];

/// `sizeof` the first version of `T`, for the structs that have grown since (fields
/// appended after their first version); the size of `T` for the others. A caller
/// compiled against the first header passes that `struct_size`, which must be accepted.
pub fn first_version_size<T: 'static>() -> usize {
    let t = TypeId::of::<T>();
    if t == TypeId::of::<ctxpack_item_desc>() {
        offset_of!(ctxpack_item_desc, group)
    } else if t == TypeId::of::<ctxpack_pipeline_options>() {
        offset_of!(ctxpack_pipeline_options, group_value)
    } else if t == TypeId::of::<ctxpack_report_summary>() {
        offset_of!(ctxpack_report_summary, group_count)
    } else if t == TypeId::of::<ctxpack_excluded_entry>() {
        offset_of!(ctxpack_excluded_entry, group)
    } else if t == TypeId::of::<ctxpack_included_entry>() {
        offset_of!(ctxpack_included_entry, form)
    } else if t == TypeId::of::<ctxpack_run_options>() {
        offset_of!(ctxpack_run_options, cancel)
    } else {
        size_of::<T>()
    }
}

/// Whether the library must accept `struct_size` for a struct whose first version is
/// `first` bytes: at least that, at most the sanity bound 4096, and a multiple of 8 (the
/// alignment of every versioned struct: no `sizeof` ends inside a pointer field).
pub fn struct_size_is_valid(struct_size: usize, first: usize) -> bool {
    (first..=4096).contains(&struct_size) && struct_size % 8 == 0
}

/// A struct that starts with `size_t struct_size`, laid out as a caller compiled against
/// some header version would: in a buffer of `struct_size` bytes (when that is sane), the
/// library's fields first.
pub struct VersionedBuf {
    words: Vec<u64>,
    struct_size: usize,
    known: usize,
    /// `sizeof` the struct's first version ([`first_version_size`]).
    first: usize,
}

/// How the tail beyond the library's own size is filled.
const SENTINEL: u8 = 0xA5;

impl VersionedBuf {
    /// `value` with a `struct_size` chosen by the input: usually exact; sometimes too
    /// small, larger with a zero tail (a newer caller: accepted), larger with a non-zero
    /// tail (rejected) or absurd (rejected before anything else is read); for a struct
    /// that has grown, sometimes its first version's size (an older caller: accepted, the
    /// later fields unread).
    pub fn input<T: Copy + 'static>(r: &mut ByteReader<'_>, value: T) -> Self {
        let known = size_of::<T>();
        let (struct_size, tail) = match r.u8() % 16 {
            0 => (r.below(known), 0),
            4 | 5 => (first_version_size::<T>(), 0),
            1 => (known + 8 * (1 + r.below(3)), 0),
            2 => (known + 8, 1 + r.u8() % 255),
            3 => ([4097, usize::MAX][r.below(2)], 0),
            _ => (known, 0),
        };
        let mut buf = Self::new(value, struct_size, tail);
        buf.first = first_version_size::<T>();
        buf
    }

    /// A zeroed output struct with a `struct_size` chosen by the input; the tail beyond
    /// the library's size is filled with a sentinel that [`Self::check_tail`] checks; so
    /// are the bytes past an older caller's smaller `struct_size` (its first version's).
    ///
    /// # Safety
    /// The all-zero bit pattern is a valid `T`.
    pub unsafe fn output<T: Copy + 'static>(r: &mut ByteReader<'_>) -> Self {
        let known = size_of::<T>();
        let struct_size = match r.u8() % 16 {
            0 => r.below(known),
            1 => known + 8 * (1 + r.below(3)),
            2 => 4097,
            3 | 4 => first_version_size::<T>(),
            _ => known,
        };
        // SAFETY: forwarded from the caller.
        let mut buf = Self::new(unsafe { std::mem::zeroed::<T>() }, struct_size, SENTINEL);
        buf.first = first_version_size::<T>();
        if buf.size_is_valid() && struct_size < known {
            bytes_mut(&mut buf.words)[struct_size..known].fill(SENTINEL);
        }
        buf
    }

    /// `value` with exactly `struct_size` (at least its size, for array elements) and a
    /// zero tail.
    pub fn with_size<T: Copy>(value: T, struct_size: usize) -> Self {
        Self::new(value, struct_size, 0)
    }

    /// `value` in a buffer of `max(struct_size, its size)` bytes (its size only when
    /// `struct_size` is absurd), the tail filled with `tail`, `struct_size` stored first.
    fn new<T: Copy>(value: T, struct_size: usize, tail: u8) -> Self {
        let known = size_of::<T>();
        assert!(known >= size_of::<usize>());
        let len = if struct_size <= 4096 {
            struct_size.max(known)
        } else {
            known
        };
        let mut words = vec![0u64; len.div_ceil(8)];
        let bytes = bytes_mut(&mut words);
        bytes[known..].fill(tail);
        // SAFETY: the buffer holds at least `size_of::<T>()` bytes; `T` is plain data.
        unsafe {
            ptr::copy_nonoverlapping((&value as *const T).cast::<u8>(), bytes.as_mut_ptr(), known);
        }
        bytes[..size_of::<usize>()].copy_from_slice(&struct_size.to_ne_bytes());
        Self {
            words,
            struct_size,
            known,
            first: known,
        }
    }

    /// The struct pointer to pass.
    pub fn ptr<T>(&mut self) -> *mut T {
        self.words.as_mut_ptr().cast()
    }

    /// The `struct_size` the buffer carries.
    pub fn struct_size(&self) -> usize {
        self.struct_size
    }

    /// Whether the library must accept this struct size (input or output): from the
    /// struct's first version's size up to the sanity bound, a multiple of 8 (the
    /// structs' alignment).
    pub fn size_is_valid(&self) -> bool {
        struct_size_is_valid(self.struct_size, self.first)
    }

    /// The struct as the library left it (meaningful after a successful call with a
    /// valid `struct_size`); the bytes past a smaller `struct_size` read as zero, as the
    /// fields an older caller's struct lacks.
    pub fn read<T: Copy>(&self) -> T {
        assert!(self.words.len() * 8 >= size_of::<T>());
        let mut words = self.words.clone();
        if self.struct_size < size_of::<T>() {
            bytes_mut(&mut words)[self.struct_size.max(size_of::<usize>())..size_of::<T>()].fill(0);
        }
        // SAFETY: the buffer holds a `T` written by the library (or zeroes, valid for the
        // plain-data report structs).
        unsafe { words.as_ptr().cast::<T>().read() }
    }

    /// Panics if the library wrote past its own size into a larger output struct, or past
    /// an older caller's smaller `struct_size`.
    pub fn check_tail(&self) {
        let bytes: Vec<u8> = self.words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let tail_end = self.struct_size.min(bytes.len()).max(self.known);
        assert!(
            bytes[self.known..tail_end].iter().all(|&b| b == SENTINEL),
            "the library wrote past its size {} into a struct of struct_size {}",
            self.known,
            self.struct_size
        );
        if self.size_is_valid() && self.struct_size < self.known {
            assert!(
                bytes[self.struct_size..self.known]
                    .iter()
                    .all(|&b| b == SENTINEL),
                "the library wrote past struct_size {} (its size {})",
                self.struct_size,
                self.known
            );
        }
    }

    /// The raw bytes (for arrays of versioned structs).
    pub fn bytes(&self) -> Vec<u8> {
        let mut b: Vec<u8> = self.words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        b.truncate(self.struct_size.min(b.len()));
        b
    }
}

/// The buffer's words as bytes.
fn bytes_mut(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: u64 has no invalid bit patterns and a stricter alignment than u8.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len() * 8) }
}
