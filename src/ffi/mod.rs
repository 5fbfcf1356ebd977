//! The C ABI: opaque handles, `ctxpack_str` strings, status codes and error objects,
//! callbacks for custom components. `include/ctxpack.h` is generated from this module
//! tree (and only from it) by cbindgen; the doc comments here are the header's
//! documentation. Conventions, ownership and threading rules: `docs/ffi.md`.
//!
//! This is the only module of the crate with `unsafe` code and C types. It contains no
//! algorithm: every exported function checks its pointers, converts its arguments, calls
//! the core and maps the outcome, through one shim (`status::guard`) that also
//! catches panics.
//!
//! Common safety contract of every exported function: each pointer argument is NULL or
//! valid for what its documentation says (a handle created by this library and not yet
//! freed, an array of the stated length, a writable out-parameter, a struct of its
//! `struct_size`); string bytes need not be valid UTF-8 (that is checked). NULL where a
//! value is required, a handle of the wrong type, bad values and misuse that the library
//! can detect give a status, never undefined behaviour.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc, clippy::too_many_arguments)]

mod analytics;
mod budget;
mod callbacks;
mod cancel;
mod chat;
mod columns;
mod enums;
mod handles;
mod items;
mod json;
mod pipeline;
mod placer;
mod policy;
mod prefix;
mod result;
mod run_memory;
mod scorer;
mod sensitivity;
mod slicer;
mod stages;
mod status;
mod strings;
/// cbindgen:ignore
#[cfg(feature = "ffi-test-hooks")]
mod test_hooks;
mod tokenizer;
mod versioned;

pub use analytics::*;
pub use budget::*;
pub use callbacks::{
    ctxpack_callback_error, ctxpack_destroy_fn, ctxpack_item_view, ctxpack_overflow_fn,
    ctxpack_place_fn, ctxpack_score_all_fn, ctxpack_score_item_fn, ctxpack_slice_fn,
};
pub use cancel::*;
pub use chat::*;
pub use enums::*;
pub use items::*;
pub use json::*;
pub use pipeline::*;
pub use placer::*;
pub use policy::*;
pub use prefix::*;
pub use result::{
    ctxpack_excluded_entry, ctxpack_excluded_entry_init, ctxpack_group_entry,
    ctxpack_group_entry_init, ctxpack_included_entry, ctxpack_included_entry_init,
    ctxpack_pruned_form, ctxpack_pruned_form_init, ctxpack_report_summary,
    ctxpack_report_summary_init, ctxpack_result, ctxpack_result_forms, ctxpack_result_free,
    ctxpack_result_has_report, ctxpack_result_indices, ctxpack_result_overflow,
    ctxpack_result_reasons, ctxpack_result_report_event, ctxpack_result_report_excluded,
    ctxpack_result_report_group, ctxpack_result_report_included, ctxpack_result_report_json,
    ctxpack_result_report_pruned_form, ctxpack_result_report_shortfall,
    ctxpack_result_report_summary, ctxpack_result_scores, ctxpack_shortfall,
    ctxpack_shortfall_init, ctxpack_trace_event, ctxpack_trace_event_init,
};
pub use scorer::*;
pub use sensitivity::*;
pub use slicer::*;
pub use stages::*;
pub use status::{
    ctxpack_error, ctxpack_error_code, ctxpack_error_free, ctxpack_error_message, ctxpack_status,
    ctxpack_status_name,
};
pub use strings::{ctxpack_str, ctxpack_str_from_cstr};
pub use tokenizer::*;

/// The library version (`"MAJOR.MINOR.PATCH"`, equal to the `CTXPACK_VERSION_*` macros
/// of the header it was built with), as a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn ctxpack_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The library version as one number, `MAJOR * 10000 + MINOR * 100 + PATCH` (0.1.0 is
/// 100), equal to the `CTXPACK_VERSION_NUMBER` macro of the header it was built with. A
/// program compares it with the macro to find the library it was loaded with
/// (`ctxpack_version_number() >= CTXPACK_VERSION_NUMBER` when it needs what its header
/// declares).
#[no_mangle]
pub extern "C" fn ctxpack_version_number() -> u32 {
    VERSION_NUMBER
}

/// A decimal version component, at compile time.
const fn component(digits: &str) -> u32 {
    let bytes = digits.as_bytes();
    let mut value = 0;
    let mut i = 0;
    while i < bytes.len() {
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

const VERSION_NUMBER: u32 = {
    let major = component(env!("CARGO_PKG_VERSION_MAJOR"));
    let minor = component(env!("CARGO_PKG_VERSION_MINOR"));
    let patch = component(env!("CARGO_PKG_VERSION_PATCH"));
    // The encoding gives minor and patch two digits each.
    assert!(minor < 100 && patch < 100);
    major * 10000 + minor * 100 + patch
};

#[cfg(test)]
mod tests {
    #[test]
    fn committed_header_is_current() {
        let fresh = include_str!(concat!(env!("OUT_DIR"), "/ctxpack.h"));
        let committed = include_str!("../../include/ctxpack.h");
        assert!(
            fresh == committed,
            "include/ctxpack.h differs from the header generated from src/ffi; rebuild and commit it"
        );
    }

    /// Every handle type's tag differs from every other's, or a handle of one type would
    /// pass for another. Read from the sources, so a new handle type is covered as soon
    /// as it exists.
    #[test]
    fn handle_tags_are_distinct() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/ffi");
        let (mut impls, mut tags) = (0, Vec::new());
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for line in text.lines().map(str::trim) {
                impls += usize::from(line.starts_with("impl HandleType for "));
                if let Some(rest) = line.strip_prefix("const TAG: u32 = u32::from_be_bytes(*b\"") {
                    tags.push(rest[..4].to_string());
                }
            }
        }
        assert_eq!(
            tags.len(),
            impls,
            "every handle type declares its tag the same way"
        );
        assert!(impls >= 14, "found {impls} handle types");
        let mut sorted = tags.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), tags.len(), "handle tags repeat: {tags:?}");
    }

    #[test]
    fn version_matches_cargo() {
        // SAFETY: a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(super::ctxpack_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        let parts: Vec<u32> = env!("CARGO_PKG_VERSION")
            .split(['.', '-', '+'])
            .take(3)
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(
            super::ctxpack_version_number(),
            parts[0] * 10000 + parts[1] * 100 + parts[2]
        );
        let header = include_str!("../../include/ctxpack.h");
        assert!(header.contains(&format!(
            "#define CTXPACK_VERSION_NUMBER {}\n",
            super::ctxpack_version_number()
        )));
    }

    /// Every struct of the header that starts with `size_t struct_size` has an `_INIT`
    /// macro and an `_init` function.
    #[test]
    fn every_versioned_struct_has_its_initialisers() {
        let header = include_str!("../../include/ctxpack.h");
        let mut found = 0;
        for block in header.split("typedef struct ").skip(1) {
            let name = block.split_whitespace().next().unwrap();
            let Some(body) = block.split_once('{').map(|(_, b)| b) else {
                continue;
            };
            let first_field = body
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with("//"))
                .unwrap();
            if first_field != "size_t struct_size;" {
                continue;
            }
            found += 1;
            let upper = name.trim_start_matches("ctxpack_").to_uppercase();
            assert!(
                header.contains(&format!("#define CTXPACK_{upper}_INIT ")),
                "no CTXPACK_{upper}_INIT"
            );
            assert!(
                header.contains(&format!(
                    "ctxpack_status {name}_init(struct {name} *out, size_t size);"
                )),
                "no {name}_init"
            );
        }
        assert_eq!(found, 19, "versioned structs in the header");
    }
}
