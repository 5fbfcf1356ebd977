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
mod enums;
mod handles;
mod items;
mod json;
mod pipeline;
mod placer;
mod policy;
mod result;
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
pub use enums::*;
pub use items::*;
pub use json::*;
pub use pipeline::*;
pub use placer::*;
pub use policy::*;
pub use result::{
    ctxpack_excluded_entry, ctxpack_included_entry, ctxpack_report_summary, ctxpack_result,
    ctxpack_result_free, ctxpack_result_has_report, ctxpack_result_indices,
    ctxpack_result_overflow, ctxpack_result_reasons, ctxpack_result_report_event,
    ctxpack_result_report_excluded, ctxpack_result_report_included, ctxpack_result_report_json,
    ctxpack_result_report_shortfall, ctxpack_result_report_summary, ctxpack_result_scores,
    ctxpack_shortfall, ctxpack_trace_event,
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
    }
}
