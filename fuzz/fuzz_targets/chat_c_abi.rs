//! `chat_c_abi`: arbitrary bytes through `ctxpack_chat_trim`, the C ABI's chat call.
//!
//! The first 13 bytes choose the arguments: the format (in or out of the enumeration), the
//! budget, the pipeline (the `chat` or `tool-use` preset, NULL, or a handle of another
//! type), and the options (NULL, or a `ctxpack_chat_options` with a `struct_size` that is
//! exact, larger with a zero tail, too small, or larger with a non-zero tail; an encoding
//! that is empty, known in any case, unknown, not UTF-8 or `{NULL, 3}`; any trace detail;
//! flag bytes other than 0 and 1; non-zero `reserved` bytes; negative overheads; no
//! shortening, or shortening with several sizes, a fixed quality (valid or not) and a
//! marker (valid, or not UTF-8)). The rest
//! is the request body, passed as raw bytes (not UTF-8 included). Checked:
//! * no call returns `CTXPACK_PANIC`; the error object exists exactly on failure, with the
//!   returned code and a non-empty message; `*out` is NULL after a failure;
//! * with every argument valid, the outcome is the Rust API's (`chat::trim` with the same
//!   options): the same status and message on failure; on success the same JSON byte for
//!   byte, kept, dropped and shortened positions, tokens, item paths, adjustments, rule
//!   pins and selection;
//!   with an invalid argument, the call fails;
//! * every string the chat result hands out is NUL-terminated; `item_path` past the count
//!   is `CTXPACK_OUT_OF_RANGE`; the selection is a result handle whose indices are distinct
//!   item positions, with a report exactly when traced, whose JSON parses.
#![no_main]

use std::ptr;

use ctxpack::chat::{trim, ChatOptions, Overheads, Provider};
use ctxpack::diagnostics::TraceDetail;
use ctxpack::model::HeadTail;
use ctxpack::ffi::*;
use ctxpack::policy::Policy;
use ctxpack::tokenizer::Encoding;
use ctxpack::ContextBudget;
use ctxpack_fuzz::ByteReader;
use libfuzzer_sys::fuzz_target;

const HEADER: usize = 13;

/// The shortening a header byte asks for: head and tail tokens, quality, marker, and
/// whether the combination is valid.
fn shortening(b: u8) -> (u64, u64, f64, &'static [u8], bool) {
    match b % 10 {
        0..=3 => (0, 0, 0.0, b"", true),
        4 => (8, 4, 0.0, b"", true),
        5 => (0, 6, 0.0, b"", true),
        6 => (16, 16, 0.5, b"<{omitted}>", true),
        7 => (2, 1, 1.0, b"{omitted}{omitted}", true),
        8 => (4, 4, 1.5, b"", false),
        _ => (4, 4, 0.0, b"\xff", false),
    }
}

fn raw(bytes: &[u8]) -> ctxpack_str {
    ctxpack_str {
        ptr: bytes.as_ptr().cast(),
        len: bytes.len(),
    }
}

/// A string the library handed out: its bytes, after checking the NUL after them.
fn out_bytes(s: ctxpack_str) -> Vec<u8> {
    assert!(!s.ptr.is_null(), "a returned string is never NULL");
    // SAFETY: the library's string is valid for `len` bytes plus its NUL.
    unsafe {
        let bytes = std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len + 1);
        assert_eq!(bytes[s.len], 0, "returned strings are NUL-terminated");
        bytes[..s.len].to_vec()
    }
}

fn out_string(s: ctxpack_str) -> String {
    String::from_utf8(out_bytes(s)).expect("returned strings are UTF-8")
}

/// The options as decoded from the header, and whether the C layer must refuse them.
struct Decoded {
    format: i32,
    budget: i64,
    pipeline: u8,
    options: Option<(ctxpack_chat_options, usize, bool)>,
    shorten: u8,
    encoding: Vec<u8>,
    encoding_null: bool,
    valid: bool,
}

fn decode(header: &[u8]) -> Decoded {
    let mut r = ByteReader::new(header);
    let mut valid = true;
    let format = match r.u8() % 8 {
        0..=2 => 0,
        3..=5 => 1,
        6 => 2,
        _ => -1,
    };
    valid &= (0..=1).contains(&format);
    let budget = match r.u8() % 7 {
        0 => 0,
        1 => i64::from(r.u8()),
        2 => 200 + 4 * i64::from(r.u8()),
        3 => 1000 + 16 * i64::from(r.u8()),
        4 => 5000,
        5 => 100_000,
        _ => i64::MAX / 4,
    };
    let pipeline = r.u8() % 8;
    valid &= pipeline < 6;
    let shape = r.u8() % 8;
    let (encoding, encoding_null) = match r.u8() % 6 {
        0 => (Vec::new(), false),
        1 => (b"o200k_base".to_vec(), false),
        2 => (b"CL100K_BASE".to_vec(), false),
        3 => (b"p50k_base".to_vec(), false),
        4 => (b"o200k\xff".to_vec(), false),
        _ => (Vec::new(), true),
    };
    let trace = match r.u8() {
        b @ 0..=249 => i32::from(b % 3),
        b => i32::from(b) - 252,
    };
    let flag = |b: u8| if b == 255 { 2 } else { b & 1 };
    let unpin = flag(r.u8());
    let has_overheads = flag(r.u8());
    let (a, b) = (r.u8(), r.u8());
    let bad_reserved = r.u8() == 255;
    let shorten = r.u8();
    if shape == 0 {
        return Decoded {
            format,
            budget,
            pipeline,
            options: None,
            shorten,
            encoding,
            encoding_null,
            valid,
        };
    }
    let mut o = std::mem::MaybeUninit::<ctxpack_chat_options>::zeroed();
    // SAFETY: a writable struct of its own size.
    let mut o = unsafe {
        ctxpack_chat_options_init(o.as_mut_ptr(), std::mem::size_of::<ctxpack_chat_options>());
        o.assume_init()
    };
    o.trace_detail = trace;
    o.unpin_last_turn = unpin;
    o.has_overheads = has_overheads;
    o.overhead_per_message = i64::from(a) - 8;
    o.overhead_per_name = i64::from(b % 4);
    o.overhead_per_request = i64::from(b % 16);
    o.overhead_media = i64::from(a) * 10;
    if bad_reserved {
        o.reserved[1] = 7;
    }
    let (head, tail, quality, _, shorten_valid) = shortening(shorten);
    o.shorten_head_tokens = head;
    o.shorten_tail_tokens = tail;
    o.shorten_quality = quality;
    let size = std::mem::size_of::<ctxpack_chat_options>();
    let (struct_size, tail) = match shape {
        1..=5 => (size, false),
        6 => (size + 8, false),
        _ if a % 2 == 0 => (8, false),
        _ => (size + 8, true),
    };
    valid &= struct_size == size || (struct_size > size && !tail);
    valid &= (0..=2).contains(&trace) && unpin <= 1 && has_overheads <= 1 && !bad_reserved;
    valid &= !encoding_null && matches!(encoding.as_slice(), b"" | b"o200k_base" | b"CL100K_BASE");
    valid &= has_overheads == 0 || o.overhead_per_message >= 0;
    valid &= shorten_valid;
    Decoded {
        format,
        budget,
        pipeline,
        options: Some((o, struct_size, tail)),
        shorten,
        encoding,
        encoding_null,
        valid,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut header = [0u8; HEADER];
    let n = data.len().min(HEADER);
    header[..n].copy_from_slice(&data[..n]);
    let request = &data[n..];
    let d = decode(&header);
    let valid = d.valid && std::str::from_utf8(request).is_ok();

    // SAFETY: every pointer passed below is live and as long as claimed; every handle is
    // freed once at the end.
    unsafe {
        let preset = if d.pipeline == 5 { "tool-use" } else { "chat" };
        let mut pipeline = ptr::null_mut();
        let st =
            ctxpack_pipeline_new_preset(raw(preset.as_bytes()), &mut pipeline, ptr::null_mut());
        assert_eq!(st, ctxpack_status::CTXPACK_OK);
        let mut bd = std::mem::MaybeUninit::<ctxpack_budget_desc>::zeroed().assume_init();
        ctxpack_budget_desc_init(&mut bd, std::mem::size_of::<ctxpack_budget_desc>());
        bd.max_tokens = d.budget;
        bd.target_tokens = d.budget;
        let mut budget = ptr::null_mut();
        assert_eq!(
            ctxpack_budget_new(&bd, &mut budget, ptr::null_mut()),
            ctxpack_status::CTXPACK_OK
        );
        let pipeline_arg: *const ctxpack_pipeline = match d.pipeline {
            6 => ptr::null(),
            7 => budget.cast_const().cast(),
            _ => pipeline,
        };

        // The options, in a buffer with room for a larger struct_size and its tail.
        let mut buffer = [0u64; 32];
        let options_arg: *const ctxpack_chat_options = match &d.options {
            None => ptr::null(),
            Some((o, struct_size, tail)) => {
                let mut o = *o;
                o.struct_size = *struct_size;
                o.shorten_marker = raw(shortening(d.shorten).3);
                o.encoding = if d.encoding_null {
                    ctxpack_str {
                        ptr: ptr::null(),
                        len: 3,
                    }
                } else {
                    raw(&d.encoding)
                };
                let bytes = buffer.as_mut_ptr().cast::<u8>();
                ptr::copy_nonoverlapping(
                    (&o as *const ctxpack_chat_options).cast::<u8>(),
                    bytes,
                    std::mem::size_of::<ctxpack_chat_options>(),
                );
                if *tail {
                    *bytes.add(std::mem::size_of::<ctxpack_chat_options>() + 3) = 1;
                }
                buffer.as_ptr().cast()
            }
        };

        let mut out: *mut ctxpack_chat_result = 8 as *mut _;
        let mut err: *mut ctxpack_error = 8 as *mut _;
        let status = ctxpack_chat_trim(
            d.format,
            raw(request),
            budget,
            pipeline_arg,
            options_arg,
            &mut out,
            &mut err,
        );
        assert_ne!(
            status,
            ctxpack_status::CTXPACK_PANIC,
            "{:?}",
            (!err.is_null()).then(|| out_string(ctxpack_error_message(err)))
        );
        let c_outcome = if status == ctxpack_status::CTXPACK_OK {
            assert!(err.is_null() && !out.is_null());
            Ok(out)
        } else {
            assert!(out.is_null() && !err.is_null());
            assert_eq!(ctxpack_error_code(err), status);
            let message = out_string(ctxpack_error_message(err));
            assert!(!message.is_empty());
            ctxpack_error_free(err);
            Err((status, message))
        };
        if !valid {
            assert!(c_outcome.is_err(), "an invalid argument was accepted");
        } else {
            // The same call through the Rust API.
            let text = std::str::from_utf8(request).expect("checked");
            let provider = if d.format == 0 {
                Provider::OpenAi
            } else {
                Provider::Anthropic
            };
            let rust_pipeline = Policy::preset(preset)
                .and_then(|p| p.build_pipeline())
                .expect("preset");
            let rust_budget = ContextBudget::new(d.budget, d.budget).expect("valid");
            let mut options = ChatOptions::default();
            // Without options there is no shortening; with them, a valid call's is valid.
            let spec = d.options.as_ref().and_then(|_| {
                let (head, tail, quality, marker, _) = shortening(d.shorten);
                let mut spec = HeadTail::new(head as usize, tail as usize).ok()?;
                if quality != 0.0 {
                    spec = spec.with_quality(quality);
                }
                if !marker.is_empty() {
                    spec = spec.with_marker(std::str::from_utf8(marker).expect("a valid case"));
                }
                Some(spec)
            });
            if let Some((o, _, _)) = &d.options {
                if !d.encoding.is_empty() {
                    let name = std::str::from_utf8(&d.encoding).expect("valid name");
                    options = ChatOptions::with_counter(Encoding::by_name(name).expect("known"));
                }
                options.shorten = spec.as_ref();
                options.trace = match o.trace_detail {
                    0 => TraceDetail::None,
                    1 => TraceDetail::Stage,
                    _ => TraceDetail::Item,
                };
                options.pin_last_turn = o.unpin_last_turn == 0;
                if o.has_overheads == 1 {
                    options.overheads = Some(Overheads {
                        per_message: o.overhead_per_message,
                        per_name: o.overhead_per_name,
                        per_request: o.overhead_per_request,
                        media: o.overhead_media,
                    });
                }
            }
            let rust = trim(provider, text, &rust_budget, &rust_pipeline, &options);
            match (&c_outcome, rust) {
                (Err((status, message)), Err(e)) => {
                    assert_eq!(*status, ctxpack_status::from_code(e.code()));
                    assert_eq!(*message, e.to_string());
                }
                (Ok(r), Ok(t)) => {
                    let r = *r;
                    let mut s = ctxpack_str {
                        ptr: ptr::null(),
                        len: 0,
                    };
                    assert_eq!(
                        ctxpack_chat_result_json(r, &mut s),
                        ctxpack_status::CTXPACK_OK
                    );
                    assert_eq!(out_bytes(s), t.json.as_bytes());
                    let (mut tokens, mut input) = (0, 0);
                    ctxpack_chat_result_tokens(r, &mut tokens);
                    ctxpack_chat_result_input_tokens(r, &mut input);
                    assert_eq!((tokens, input), (t.tokens, t.input_tokens));
                    let (mut p, mut len) = (ptr::null(), 0usize);
                    ctxpack_chat_result_kept(r, &mut p, &mut len);
                    assert_eq!(std::slice::from_raw_parts(p, len), &t.kept[..]);
                    ctxpack_chat_result_dropped(r, &mut p, &mut len);
                    assert_eq!(std::slice::from_raw_parts(p, len), &t.dropped[..]);
                    ctxpack_chat_result_shortened(r, &mut p, &mut len);
                    assert_eq!(std::slice::from_raw_parts(p, len), &t.shortened[..]);
                    let mut count = 0;
                    ctxpack_chat_result_item_count(r, &mut count);
                    assert_eq!(count, t.item_paths.len());
                    for (i, want) in t.item_paths.iter().enumerate() {
                        assert_eq!(
                            ctxpack_chat_result_item_path(r, i, &mut s),
                            ctxpack_status::CTXPACK_OK
                        );
                        assert_eq!(&out_string(s), want);
                    }
                    assert_eq!(
                        ctxpack_chat_result_item_path(r, count, &mut s),
                        ctxpack_status::CTXPACK_OUT_OF_RANGE
                    );
                    let mut adjustments = 0;
                    ctxpack_chat_result_adjustment_count(r, &mut adjustments);
                    assert_eq!(adjustments, t.adjustments.len());
                    for (i, a) in t.adjustments.iter().enumerate() {
                        let mut paths = 0;
                        assert_eq!(
                            ctxpack_chat_result_adjustment(r, i, &mut s, &mut paths),
                            ctxpack_status::CTXPACK_OK
                        );
                        assert_eq!(out_string(s), a.reason);
                        assert_eq!(paths, a.paths.len());
                        for (j, want) in a.paths.iter().enumerate() {
                            ctxpack_chat_result_adjustment_path(r, i, j, &mut s);
                            assert_eq!(&out_string(s), want);
                        }
                    }
                    let mut pins = 0;
                    ctxpack_chat_result_rule_pin_count(r, &mut pins);
                    assert_eq!(pins, t.rule_pins.len());
                    for (i, pin) in t.rule_pins.iter().enumerate() {
                        let mut reason = s;
                        assert_eq!(
                            ctxpack_chat_result_rule_pin(r, i, &mut s, &mut reason),
                            ctxpack_status::CTXPACK_OK
                        );
                        assert_eq!(pin.paths, [out_string(s)]);
                        assert_eq!(out_string(reason), pin.reason);
                    }
                    let mut reason = s;
                    assert_eq!(
                        ctxpack_chat_result_rule_pin(r, pins, &mut s, &mut reason),
                        ctxpack_status::CTXPACK_OUT_OF_RANGE
                    );
                    // The selection, as a result handle.
                    let mut sel = ptr::null_mut();
                    assert_eq!(
                        ctxpack_chat_result_selection(r, &mut sel, ptr::null_mut()),
                        ctxpack_status::CTXPACK_OK
                    );
                    let (mut idx, mut n) = (ptr::null(), 0usize);
                    ctxpack_result_indices(sel, &mut idx, &mut n);
                    let indices = if n == 0 {
                        &[][..]
                    } else {
                        std::slice::from_raw_parts(idx, n)
                    };
                    assert_eq!(indices, &t.selection.indices[..]);
                    let mut seen = vec![false; count];
                    for &i in indices {
                        assert!(i < count && !seen[i], "indices are distinct item positions");
                        seen[i] = true;
                    }
                    let mut has = false;
                    ctxpack_result_has_report(sel, &mut has);
                    assert_eq!(has, !matches!(options.trace, TraceDetail::None));
                    if has {
                        ctxpack_result_report_json(sel, &mut s);
                        serde_json::from_slice::<serde_json::Value>(&out_bytes(s))
                            .expect("report JSON parses");
                    }
                    ctxpack_result_free(sel);
                    ctxpack_chat_result_free(r);
                }
                (c, rust) => panic!(
                    "the C ABI and the Rust API disagree: {:?} vs {:?}",
                    c.as_ref().err(),
                    rust.err()
                ),
            }
        }
        ctxpack_budget_free(budget);
        ctxpack_pipeline_free(pipeline);
    }
});
