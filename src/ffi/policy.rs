//! Policies through the ABI: pipelines from a preset or from policy JSON, a pipeline's
//! policy written back as JSON (into a library-owned string), the preset names.

use crate::ffi::handles::{self, HandleType};
use crate::ffi::pipeline::ctxpack_pipeline;
use crate::ffi::result::entry;
use crate::ffi::status::{ctxpack_error, ctxpack_status, guard};
use std::ffi::CStr;

use crate::ffi::strings::{ctxpack_str, static_str, to_str, OwnedCString};
use crate::ffi::versioned::flag;
use crate::policy::{Policy, Preset};

/// A string owned by the library (for example a policy written as JSON): UTF-8, also
/// NUL-terminated. Read it with `ctxpack_string_value`; it is valid until
/// `ctxpack_string_free`. Immutable.
pub struct ctxpack_string {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_string {
    type Value = OwnedCString;
    const TAG: u32 = u32::from_be_bytes(*b"CPST");
    const NAME: &'static str = "ctxpack_string";
}

/// The number of presets (7): `ctxpack_preset_name(0 .. count - 1)` lists them.
#[no_mangle]
pub extern "C" fn ctxpack_preset_count() -> usize {
    Preset::ALL.len()
}

/// The name of preset `index` (`"Chat"`, `"CodeReview"`, `"Rag"`, `"DocumentQa"`,
/// `"ToolUse"`, `"LongRunning"`, `"Debugging"`, in the order of spec 07 §2) as a static
/// string (also NUL-terminated) that `ctxpack_pipeline_new_preset` accepts.
/// `CTXPACK_OUT_OF_RANGE` when `index >= ctxpack_preset_count()`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_preset_name(
    index: usize,
    out_name: *mut ctxpack_str,
) -> ctxpack_status {
    guard(std::ptr::null_mut(), || {
        let preset = entry(&Preset::ALL, index, "preset")?;
        // SAFETY: `out_name` is NULL or writable.
        unsafe { handles::write_out(out_name, static_str(preset_c_name(*preset)), "out_name") }
    })
}

/// The name of a preset as a C string literal (`Preset::name` with a NUL).
fn preset_c_name(preset: Preset) -> &'static CStr {
    match preset {
        Preset::Chat => c"Chat",
        Preset::CodeReview => c"CodeReview",
        Preset::Rag => c"Rag",
        Preset::DocumentQa => c"DocumentQa",
        Preset::ToolUse => c"ToolUse",
        Preset::LongRunning => c"LongRunning",
        Preset::Debugging => c"Debugging",
    }
}

/// Creates the pipeline of a preset (spec 07 §2). `name` is the preset's name in any
/// ASCII case, with or without `-`, `_` or a space between words (`"Chat"`,
/// `"code-review"`, `"document_qa"`, `"TOOL USE"`, …); an unknown name is
/// `CTXPACK_INVALID_ARGUMENT` with a message listing the presets.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_new_preset(
    name: ctxpack_str,
    out: *mut *mut ctxpack_pipeline,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `name` is valid for its length (or NULL).
    handles::create(out, out_error, || {
        let name = unsafe { to_str(&name, "name") }?;
        Ok(Policy::preset(name)?.build_pipeline()?.into())
    })
}

/// Creates a pipeline from a policy in its JSON form (spec 07 §3 and the ctxpack
/// extension: docs/policy-json.md). A structural problem is `CTXPACK_INVALID_POLICY` with
/// a message naming the JSON path of the bad field
/// (`"scorers[2].weight: must be positive and finite (got -1)"`, `$` for the document
/// itself); a bad value that a component checks when it is built keeps that component's
/// status (`CTXPACK_SCORER_CONFIG`, `CTXPACK_SLICER_CONFIG`, …), exactly as when the
/// pipeline is built by hand.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_new_policy_json(
    json: ctxpack_str,
    out: *mut *mut ctxpack_pipeline,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `json` is valid for its length (or NULL).
    handles::create(out, out_error, || {
        let json = unsafe { to_str(&json, "json") }?;
        Ok(Policy::from_json(json)?.build_pipeline()?.into())
    })
}

/// Writes the policy of a pipeline as JSON into a new `ctxpack_string`: compact when
/// `pretty` is 0, indented by two spaces when it is 1 (any other value is
/// `CTXPACK_INVALID_ARGUMENT`). The policy is recovered from the pipeline's components: a pipeline built from a preset or from JSON gives the same scorers,
/// slicer, placer, deduplication and overflow strategy, but no name or description
/// (a pipeline does not keep them). A pipeline with a custom (callback) component — or
/// another shape the JSON form cannot express — is `CTXPACK_INVALID_POLICY`, naming the
/// component (`"scorer: custom components cannot be expressed as a policy"`).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_policy_json(
    pipeline: *const ctxpack_pipeline,
    pretty: u8,
    out: *mut *mut ctxpack_string,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `pipeline` is NULL or a live handle.
    handles::create(out, out_error, || {
        let pretty = flag(pretty, "pretty")?;
        let policy = Policy::from_pipeline(unsafe { handles::borrow(pipeline, "pipeline") }?)?;
        let json = if pretty {
            policy.to_json_pretty()?
        } else {
            policy.to_json()?
        };
        Ok(OwnedCString::new(json))
    })
}

/// The text of a library-owned string (UTF-8, also NUL-terminated; the NUL is not
/// counted in `len`), valid until `ctxpack_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_string_value(
    string: *const ctxpack_string,
    out: *mut ctxpack_str,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or writable.
    handles::access(string, "string", |s| unsafe {
        handles::write_out(out, s.as_ctxpack_str(), "out")
    })
}

/// Frees a library-owned string. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_string_free(string: *mut ctxpack_string) {
    // SAFETY: `string` is NULL or a handle.
    unsafe { handles::release(string) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_names_are_the_preset_names() {
        for preset in Preset::ALL {
            assert_eq!(preset_c_name(preset).to_str().unwrap(), preset.name());
        }
    }
}
