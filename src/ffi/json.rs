//! Policy and budget JSON through the ABI: read options (strict reading, a registry of
//! host scorer types), the warnings of a lenient read, and the budget's JSON form.

use std::ptr;

use crate::ffi::budget::ctxpack_budget;
use crate::ffi::enums::ctxpack_json_warning_kind;
use crate::ffi::handles::{self, HandleType};
use crate::ffi::pipeline::ctxpack_pipeline;
use crate::ffi::policy::ctxpack_string;
use crate::ffi::result::entry;
use crate::ffi::scorer::ctxpack_scorer;
use crate::ffi::status::{ctxpack_error, ctxpack_status, guard, FfiResult};
use crate::ffi::strings::{ctxpack_str, to_str, OwnedCString};
use crate::ffi::versioned::{self, Versioned};
use crate::model::ContextBudget;
use crate::policy::{JsonReadOptions, JsonWarning, Policy, ScorerRegistry};

/// Host scorers registered under type names, so that a policy JSON entry
/// `{"type": "<name>", "weight": w}` runs them (see `ctxpack_json_read_options`). Names
/// compare ASCII case-insensitively; adding a name again replaces the earlier scorer.
///
/// Reading policies only reads the registry, so many threads may read policies with one
/// registry at once; `ctxpack_scorer_registry_add` must not overlap anything else on the
/// same registry.
pub struct ctxpack_scorer_registry {
    _opaque: [u8; 0],
}

/// What a registry handle holds: the registry and its names, NUL-terminated for C.
pub(crate) struct RegistryData {
    registry: ScorerRegistry,
    names: Vec<OwnedCString>,
}

impl HandleType for ctxpack_scorer_registry {
    type Value = RegistryData;
    const TAG: u32 = u32::from_be_bytes(*b"CPRG");
    const NAME: &'static str = "ctxpack_scorer_registry";
}

/// Creates an empty registry of host scorer types.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_registry_new(
    out: *mut *mut ctxpack_scorer_registry,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || {
        Ok(RegistryData {
            registry: ScorerRegistry::new(),
            names: Vec::new(),
        })
    })
}

/// Registers `scorer` under the type name `name`, replacing a scorer registered under the
/// same name (ASCII case-insensitively). The registry keeps its own reference to the
/// scorer, so the caller may free its handle afterwards; a custom scorer's `destroy`
/// runs when the last reference (registry, pipelines built from policies naming it) goes.
/// A blank name, or the name of a built-in scorer type (`recency`, …, `metadataKey`), is
/// `CTXPACK_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_registry_add(
    registry: *mut ctxpack_scorer_registry,
    name: ctxpack_str,
    scorer: *const ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `name` is valid for its length. The registry is
    // borrowed mutably last, after the scorer borrow has ended (they may be one pointer).
    guard(out_error, || unsafe {
        let name = to_str(&name, "name")?;
        let scorer = handles::borrow(scorer, "scorer")?.clone();
        let data = handles::borrow_mut(registry, "registry")?;
        data.registry.register(name, scorer)?;
        data.names = data
            .registry
            .names()
            .map(|n| OwnedCString::new(n.to_string()))
            .collect();
        Ok(())
    })
}

/// The number of registered names.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_registry_count(
    registry: *const ctxpack_scorer_registry,
    out_count: *mut usize,
) -> ctxpack_status {
    // SAFETY: `out_count` is NULL or writable.
    handles::access(registry, "registry", |data| unsafe {
        handles::write_out(out_count, data.names.len(), "out_count")
    })
}

/// Registered name `index`, in registration order (UTF-8, also NUL-terminated; owned by
/// the registry and valid until it is changed or freed). `CTXPACK_OUT_OF_RANGE` when
/// `index >= ctxpack_scorer_registry_count`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_registry_name(
    registry: *const ctxpack_scorer_registry,
    index: usize,
    out_name: *mut ctxpack_str,
) -> ctxpack_status {
    handles::access(registry, "registry", |data| {
        let name = entry(&data.names, index, "name")?;
        // SAFETY: `out_name` is NULL or writable.
        unsafe { handles::write_out(out_name, name.as_ctxpack_str(), "out_name") }
    })
}

/// Frees a registry. NULL is a no-op. Pipelines built from policies that name its
/// scorers keep their own references.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_registry_free(registry: *mut ctxpack_scorer_registry) {
    // SAFETY: `registry` is NULL or a handle.
    unsafe { handles::release(registry) }
}

/// How `ctxpack_pipeline_new_policy_json_with` and `ctxpack_budget_new_json` read their
/// document. Set `struct_size = sizeof(ctxpack_json_read_options)`; passing NULL instead
/// means lenient reading without a registry.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_json_read_options {
    /// `sizeof(ctxpack_json_read_options)`.
    pub struct_size: usize,
    /// false: read leniently, as .NET reads (unknown properties ignored, a scorer entry
    /// without `type` read as `recency`, a kind repeated with other letter case keeping
    /// the last value, a budget without `maxTokens`/`targetTokens` read as 0), each
    /// reported as a warning. true: each of those is an error.
    pub strict: bool,
    /// Host scorer types a policy may name (NULL: only the built-in types). Borrowed for
    /// the call; budgets ignore it.
    pub registry: *const ctxpack_scorer_registry,
}

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid (false, NULL pointer).
unsafe impl Versioned for ctxpack_json_read_options {
    const V1_SIZE: usize = std::mem::size_of::<ctxpack_json_read_options>();
    const NAME: &'static str = "ctxpack_json_read_options";
}

/// Reads the caller's options (NULL: the defaults), borrowing the registry.
///
/// # Safety
/// `options` is NULL or valid for its `struct_size`; its registry is NULL or live for
/// the rest of the call.
unsafe fn read_options<'a>(
    options: *const ctxpack_json_read_options,
) -> FfiResult<JsonReadOptions<'a>> {
    if options.is_null() {
        return Ok(JsonReadOptions::default());
    }
    // SAFETY: forwarded from the caller.
    let o = unsafe { versioned::read(options, "options") }?;
    let registry = if o.registry.is_null() {
        None
    } else {
        // SAFETY: forwarded from the caller.
        Some(&unsafe { handles::borrow(o.registry, "options.registry") }?.registry)
    };
    Ok(JsonReadOptions {
        strict: o.strict,
        registry,
    })
}

/// The warnings of a lenient read, in document order (possibly none). Immutable; freed
/// with `ctxpack_json_warnings_free`.
pub struct ctxpack_json_warnings {
    _opaque: [u8; 0],
}

/// One warning, its strings NUL-terminated for C.
pub(crate) struct WarningData {
    kind: ctxpack_json_warning_kind,
    path: OwnedCString,
    message: OwnedCString,
    text: OwnedCString,
}

impl HandleType for ctxpack_json_warnings {
    type Value = Vec<WarningData>;
    const TAG: u32 = u32::from_be_bytes(*b"CPJW");
    const NAME: &'static str = "ctxpack_json_warnings";
}

/// One warning of a lenient read. Set `struct_size` before the call. The strings are
/// UTF-8, also NUL-terminated, owned by the warnings handle.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_json_warning {
    /// `sizeof(ctxpack_json_warning)`, set by the caller.
    pub struct_size: usize,
    /// A `ctxpack_json_warning_kind` value.
    pub kind: i32,
    /// The JSON path concerned (`scorers[0].wieght`; `$` for the document).
    pub path: ctxpack_str,
    /// What the reader did (`unknown property; ignored`).
    pub message: ctxpack_str,
    /// `path`, `": "` and `message`: the line to show a user.
    pub text: ctxpack_str,
}

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid.
unsafe impl Versioned for ctxpack_json_warning {
    const V1_SIZE: usize = std::mem::size_of::<ctxpack_json_warning>();
    const NAME: &'static str = "ctxpack_json_warning";
}

fn warning_data(warnings: Vec<JsonWarning>) -> Vec<WarningData> {
    warnings
        .into_iter()
        .map(|w| WarningData {
            kind: w.kind.into(),
            text: OwnedCString::new(w.to_string()),
            path: OwnedCString::new(w.path),
            message: OwnedCString::new(w.message),
        })
        .collect()
}

/// The number of warnings.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_json_warnings_count(
    warnings: *const ctxpack_json_warnings,
    out_count: *mut usize,
) -> ctxpack_status {
    // SAFETY: `out_count` is NULL or writable.
    handles::access(warnings, "warnings", |w| unsafe {
        handles::write_out(out_count, w.len(), "out_count")
    })
}

/// Warning `index` (document order). `CTXPACK_OUT_OF_RANGE` when `index >= count`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_json_warnings_entry(
    warnings: *const ctxpack_json_warnings,
    index: usize,
    out: *mut ctxpack_json_warning,
) -> ctxpack_status {
    handles::access(warnings, "warnings", |w| {
        let data = entry(w, index, "warning")?;
        let value = ctxpack_json_warning {
            struct_size: std::mem::size_of::<ctxpack_json_warning>(),
            kind: data.kind as i32,
            path: data.path.as_ctxpack_str(),
            message: data.message.as_ctxpack_str(),
            text: data.text.as_ctxpack_str(),
        };
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, value, "out") }
    })
}

/// Frees a warnings handle. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_json_warnings_free(warnings: *mut ctxpack_json_warnings) {
    // SAFETY: `warnings` is NULL or a handle.
    unsafe { handles::release(warnings) }
}

/// The body of the two JSON constructors: reads `json` with `options` through `read` and
/// stores the new handle in `*out` and, when `out_warnings` is not NULL, the warnings in
/// `*out_warnings`. Both are NULL on failure.
///
/// # Safety
/// As the constructors' contracts.
unsafe fn create_from_json<K: HandleType>(
    json: ctxpack_str,
    options: *const ctxpack_json_read_options,
    out: *mut *mut K,
    out_warnings: *mut *mut ctxpack_json_warnings,
    out_error: *mut *mut ctxpack_error,
    read: impl FnOnce(&str, &JsonReadOptions<'_>) -> crate::Result<(K::Value, Vec<JsonWarning>)>,
) -> ctxpack_status {
    guard(out_error, || unsafe {
        if !out_warnings.is_null() {
            // SAFETY: not NULL; writable by the caller's contract.
            out_warnings.write(ptr::null_mut());
        }
        // SAFETY: `out` is NULL or writable; `json` and `options` valid by contract.
        handles::new_into(out, || {
            let json = to_str(&json, "json")?;
            let options = read_options(options)?;
            let (value, warnings) = read(json, &options)?;
            if !out_warnings.is_null() {
                out_warnings.write(handles::into_raw(warning_data(warnings)));
            }
            Ok(value)
        })
    })
}

/// Creates a pipeline from a policy in its JSON form, as `ctxpack_pipeline_new_policy_json`
/// does, with `options` (NULL: lenient, no registry): strict or lenient reading and the
/// host scorer types a policy may name. When `out_warnings` is not NULL it receives a new
/// warnings handle on success (the caller frees it; it may hold no warning) and NULL on
/// failure. Errors are those of `ctxpack_pipeline_new_policy_json`; an unknown scorer
/// type's message lists the built-in and then the registered names.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_new_policy_json_with(
    json: ctxpack_str,
    options: *const ctxpack_json_read_options,
    out: *mut *mut ctxpack_pipeline,
    out_warnings: *mut *mut ctxpack_json_warnings,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: forwarded contracts.
    unsafe {
        create_from_json(
            json,
            options,
            out,
            out_warnings,
            out_error,
            |json, options| {
                let read = Policy::from_json_with(json, options)?;
                Ok((read.value.build_pipeline()?, read.warnings))
            },
        )
    }
}

/// Creates a budget from the JSON form of the .NET library (docs/policy-json.md):
/// `maxTokens`, `targetTokens`, `outputReserve`, `reservedSlots` (kind → tokens),
/// `estimationSafetyMarginPercent`. `options` and `out_warnings` work as for
/// `ctxpack_pipeline_new_policy_json_with` (the registry is not used). Every failure —
/// malformed JSON, a wrong type, a value the budget rules reject, and in strict mode an
/// unknown property or a missing `maxTokens`/`targetTokens` — is
/// `CTXPACK_INVALID_BUDGET`, with a message that starts with the JSON path
/// (`"targetTokens: 2000 cannot exceed maxTokens (1000)"`).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_budget_new_json(
    json: ctxpack_str,
    options: *const ctxpack_json_read_options,
    out: *mut *mut ctxpack_budget,
    out_warnings: *mut *mut ctxpack_json_warnings,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: forwarded contracts.
    unsafe {
        create_from_json(
            json,
            options,
            out,
            out_warnings,
            out_error,
            |json, options| {
                let read = ContextBudget::from_json_with(json, options)?;
                Ok((read.value, read.warnings))
            },
        )
    }
}

/// Writes a budget in the JSON form of the .NET library, byte for byte what .NET writes
/// (compact, or indented by two spaces when `pretty`), into a new `ctxpack_string`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_budget_json(
    budget: *const ctxpack_budget,
    pretty: bool,
    out: *mut *mut ctxpack_string,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `budget` is NULL or a live handle.
    handles::create(out, out_error, || {
        let budget = unsafe { handles::borrow(budget, "budget") }?;
        let json = if pretty {
            budget.to_json_pretty()
        } else {
            budget.to_json()
        };
        Ok(OwnedCString::new(json))
    })
}
