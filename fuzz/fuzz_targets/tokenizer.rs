//! `tokenizer`: arbitrary bytes as text to count and truncate, with tiktoken-rs (a port of
//! OpenAI's tokenizer) as the oracle.
//!
//! The first byte picks the encoding and, with the next two, a token limit; the rest is
//! the text. Bytes that are not UTF-8 go through the C ABI, which must answer
//! `CTXPACK_INVALID_UTF8`; UTF-8 text is checked for:
//! * token ids equal to tiktoken-rs's `encode_ordinary`, and `count` = their number;
//! * `count_with_limit(text, L)` = the count when it is at most L, else none (for L
//!   from the input, 0, the count and the count - 1);
//! * `truncate(text, N)` is a prefix of at most N tokens whose count is the one
//!   reported, the whole text when it fits, and otherwise the longest prefix made of the
//!   first k <= N tokens that ends on a character boundary and counts at most N alone;
//! * the C ABI's count, limited count and truncation equal the Rust ones.
#![no_main]

use ctxpack::ffi::{
    ctxpack_encoding, ctxpack_encoding_count, ctxpack_encoding_count_with_limit,
    ctxpack_encoding_get, ctxpack_encoding_truncate, ctxpack_status, ctxpack_str,
    ctxpack_str_from_cstr,
};
use ctxpack::tokenizer::{Encoding, ENCODING_NAMES};
use libfuzzer_sys::fuzz_target;

fn raw(bytes: &[u8]) -> ctxpack_str {
    ctxpack_str {
        ptr: bytes.as_ptr().cast(),
        len: bytes.len(),
    }
}

fn c_encoding(index: usize) -> *const ctxpack_encoding {
    let name = [c"o200k_base", c"cl100k_base"][index];
    let mut e = std::ptr::null();
    // SAFETY: valid arguments.
    let status = unsafe {
        ctxpack_encoding_get(ctxpack_str_from_cstr(name.as_ptr()), &mut e, std::ptr::null_mut())
    };
    assert_eq!(status, ctxpack_status::CTXPACK_OK);
    e
}

fn oracle(index: usize) -> &'static tiktoken_rs::CoreBPE {
    if index == 0 {
        tiktoken_rs::o200k_base_singleton()
    } else {
        tiktoken_rs::cl100k_base_singleton()
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let index = usize::from(data[0] & 1);
    let limit = usize::from(u16::from_le_bytes([data[1], data[2]]) % 512);
    let bytes = &data[3..];
    let c_enc = c_encoding(index);
    let mut c_count = -1i64;
    let Ok(text) = std::str::from_utf8(bytes) else {
        // SAFETY: valid arguments.
        let status = unsafe {
            ctxpack_encoding_count(c_enc, raw(bytes), &mut c_count, std::ptr::null_mut())
        };
        assert_eq!(status, ctxpack_status::CTXPACK_INVALID_UTF8);
        return;
    };
    let e = Encoding::by_name(ENCODING_NAMES[index]).unwrap();
    let ids = e.encode(text);
    assert_eq!(ids, oracle(index).encode_ordinary(text), "ids differ from tiktoken-rs");
    let n = e.count(text);
    assert_eq!(n, ids.len());
    for l in [limit, 0, n, n.saturating_sub(1)] {
        assert_eq!(e.count_with_limit(text, l), (n <= l).then_some(n), "limit {l}");
    }

    let cut = e.truncate(text, limit);
    assert!(text.starts_with(cut.text));
    assert!(cut.tokens <= limit);
    assert_eq!(cut.tokens, e.count(cut.text));
    if n <= limit {
        assert_eq!(cut.text.len(), text.len());
    } else {
        let mut ends = Vec::with_capacity(ids.len());
        let mut end = 0;
        for &id in &ids {
            end += oracle(index).decode_bytes(&[id]).unwrap().len();
            ends.push(end);
        }
        let expected = (0..=limit)
            .rev()
            .map(|k| if k == 0 { 0 } else { ends[k - 1] })
            .find(|&end| text.is_char_boundary(end) && e.count(&text[..end]) <= limit)
            .unwrap();
        assert_eq!(cut.text.len(), expected, "not the longest fitting prefix");
    }

    // The C ABI agrees.
    let (mut len, mut tokens) = (0usize, 0i64);
    // SAFETY: valid arguments throughout.
    unsafe {
        let none = std::ptr::null_mut();
        assert_eq!(ctxpack_encoding_count(c_enc, raw(bytes), &mut c_count, none), ctxpack_status::CTXPACK_OK);
        assert_eq!(c_count, n as i64);
        let st = ctxpack_encoding_count_with_limit(c_enc, raw(bytes), limit as i64, &mut c_count, none);
        assert_eq!(st, ctxpack_status::CTXPACK_OK);
        assert_eq!(c_count, n.min(limit + 1) as i64);
        let st = ctxpack_encoding_truncate(c_enc, raw(bytes), limit as i64, &mut len, &mut tokens, none);
        assert_eq!(st, ctxpack_status::CTXPACK_OK);
        assert_eq!((len, tokens), (cut.text.len(), cut.tokens as i64));
    }
});
