//! Policy and budget JSON through the ABI: read options (strict reading, a registry of
//! host scorer types), the warnings of a lenient read, and the budget's JSON form.

use std::ptr;
use std::sync::{Mutex, MutexGuard};

use crate::ffi::budget::ctxpack_budget;
use crate::ffi::enums::ctxpack_json_warning_kind;
use crate::ffi::handles::{self, HandleType};
use crate::ffi::pipeline::ctxpack_pipeline;
use crate::ffi::policy::ctxpack_string;
use crate::ffi::result::entry;
use crate::ffi::scorer::ctxpack_scorer;
use crate::ffi::status::{ctxpack_error, ctxpack_status, guard, FfiResult};
use crate::ffi::strings::{ctxpack_str, to_str, OwnedCString};
use crate::ffi::versioned::{self, flag, reserved, Versioned};
use crate::model::ContextBudget;
use crate::policy::{JsonReadOptions, JsonWarning, Policy, ScorerRegistry};

/// Host scorers registered under type names, so that a policy JSON entry
/// `{"type": "<name>", "weight": w}` runs them (see `ctxpack_json_read_options`). Names
/// compare ASCII case-insensitively; adding a name again replaces the earlier scorer.
///
/// Thread-safe: every function on a registry may be called from many threads at once,
/// `ctxpack_scorer_registry_add` included (each call sees the registry before or after
/// an overlapping add, never half of it). A policy read works with the registry as it
/// was when the read started.
pub struct ctxpack_scorer_registry {
    _opaque: [u8; 0],
}

/// What a registry handle holds, behind a lock so that adding may overlap reading.
pub(crate) struct RegistryData(Mutex<RegistryState>);

/// The registry and its names, NUL-terminated for C.
struct RegistryState {
    registry: ScorerRegistry,
    /// One string per registered name, in registration order.
    names: Vec<OwnedCString>,
    /// Names replaced by a registration that changed their letter case: kept until the
    /// registry is freed, because `ctxpack_scorer_registry_name` may have handed them out.
    retired: Vec<OwnedCString>,
}

impl RegistryData {
    /// The state, locked. No code panics while holding the lock, but a poisoned lock
    /// still guards consistent data (each change is one assignment), so it is used.
    fn lock(&self) -> MutexGuard<'_, RegistryState> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl RegistryState {
    /// Makes `names` match the registry after a registration: a new name is appended; a
    /// replaced name keeps its string when its bytes are unchanged, and otherwise the
    /// old string is retired (so no string handed out is ever freed before the registry).
    fn sync_names(&mut self) {
        let RegistryState {
            registry,
            names,
            retired,
        } = self;
        for (i, name) in registry.names().enumerate() {
            match names.get(i) {
                Some(old) if old.as_str() == name => {}
                Some(_) => {
                    let old = std::mem::replace(&mut names[i], OwnedCString::new(name.into()));
                    retired.push(old);
                }
                None => names.push(OwnedCString::new(name.to_string())),
            }
        }
    }
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
        Ok(RegistryData(Mutex::new(RegistryState {
            registry: ScorerRegistry::new(),
            names: Vec::new(),
            retired: Vec::new(),
        })))
    })
}

/// Registers `scorer` under the type name `name`, replacing a scorer registered under the
/// same name (ASCII case-insensitively). The registry keeps its own reference to the
/// scorer, so the caller may free its handle afterwards; a custom scorer's `destroy`
/// runs when the last reference (registry, pipelines built from policies naming it) goes.
/// A blank name, or the name of a built-in scorer type (`recency`, …, `metadataKey`), is
/// `CTXPACK_INVALID_ARGUMENT`. May overlap any other call on the registry.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_registry_add(
    registry: *mut ctxpack_scorer_registry,
    name: ctxpack_str,
    scorer: *const ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `name` is valid for its length. No callback runs.
    guard(out_error, || unsafe {
        let data = handles::borrow(registry.cast_const(), "registry")?;
        let name = to_str(&name, "name")?;
        let scorer = handles::borrow(scorer, "scorer")?.clone();
        let mut state = data.lock();
        state.registry.register(name, scorer)?;
        state.sync_names();
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
        handles::write_out(out_count, data.lock().names.len(), "out_count")
    })
}

/// Registered name `index`, in registration order (UTF-8, also NUL-terminated; owned by
/// the registry and valid until it is freed, even if the name is registered again).
/// `CTXPACK_OUT_OF_RANGE` when `index >= ctxpack_scorer_registry_count`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_registry_name(
    registry: *const ctxpack_scorer_registry,
    index: usize,
    out_name: *mut ctxpack_str,
) -> ctxpack_status {
    handles::access(registry, "registry", |data| {
        let state = data.lock();
        let name = entry(&state.names, index, "name")?;
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
/// document. Initialise with `CTXPACK_JSON_READ_OPTIONS_INIT` or
/// `ctxpack_json_read_options_init` (lenient, no registry). Passing NULL instead means
/// the same.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_json_read_options {
    /// `sizeof(ctxpack_json_read_options)`.
    pub struct_size: usize,
    /// Host scorer types a policy may name (NULL: only the built-in types). Borrowed for
    /// the call; budgets ignore it.
    pub registry: *const ctxpack_scorer_registry,
    /// 0: read leniently, as .NET reads (unknown properties ignored, a scorer entry
    /// without `type` read as `recency`, a kind repeated with other letter case keeping
    /// the last value, a budget without `maxTokens`/`targetTokens` read as 0), each
    /// reported as a warning. 1: each of those is an error. Any other value is
    /// `CTXPACK_INVALID_ARGUMENT`.
    pub strict: u8,
    /// Must be zero.
    pub reserved: [u8; 7],
}

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid (NULL pointer, zero bytes).
unsafe impl Versioned for ctxpack_json_read_options {
    const V1_SIZE: usize = std::mem::size_of::<ctxpack_json_read_options>();
    const NAME: &'static str = "ctxpack_json_read_options";
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_json_read_options) ==
/// size`: every byte zero and `struct_size = size`. Fill in the fields after it. (C and C++
/// can write `ctxpack_json_read_options x = CTXPACK_JSON_READ_OPTIONS_INIT;` instead.)
/// `CTXPACK_INVALID_ARGUMENT` when `size` is below the first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_json_read_options_init(
    out: *mut ctxpack_json_read_options,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// The caller's options, read and checked: strictness and a snapshot of the registry.
struct ReadOptions {
    strict: bool,
    registry: Option<ScorerRegistry>,
}

impl ReadOptions {
    /// The options of the core reader, borrowing the registry snapshot.
    fn as_core(&self) -> JsonReadOptions<'_> {
        JsonReadOptions {
            strict: self.strict,
            registry: self.registry.as_ref(),
        }
    }
}

/// Reads the caller's options (NULL: the defaults). The registry is copied as it is now
/// (its entries share the scorers), so an add that overlaps the read does not change it.
///
/// # Safety
/// `options` is NULL or valid for its `struct_size`; its registry is NULL or live for
/// the rest of the call.
unsafe fn read_options(options: *const ctxpack_json_read_options) -> FfiResult<ReadOptions> {
    if options.is_null() {
        return Ok(ReadOptions {
            strict: false,
            registry: None,
        });
    }
    // SAFETY: forwarded from the caller.
    let o = unsafe { versioned::read(options, "options") }?;
    let strict = flag(o.strict, "options.strict")?;
    reserved(&o.reserved, "options.reserved")?;
    let registry = if o.registry.is_null() {
        None
    } else {
        // SAFETY: forwarded from the caller.
        let data = unsafe { handles::borrow(o.registry, "options.registry") }?;
        let registry = data.lock().registry.clone();
        Some(registry)
    };
    Ok(ReadOptions { strict, registry })
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

/// One warning of a lenient read. Initialise with `CTXPACK_JSON_WARNING_INIT` (or
/// `ctxpack_json_warning_init`) before the call. The strings are UTF-8, also
/// NUL-terminated, owned by the warnings handle.
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

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_json_warning) == size`:
/// every byte zero and `struct_size = size`. (C and C++ can write
/// `ctxpack_json_warning x = CTXPACK_JSON_WARNING_INIT;` instead.)
/// `CTXPACK_INVALID_ARGUMENT` when `size` is below the first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_json_warning_init(
    out: *mut ctxpack_json_warning,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
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
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_json_warnings_entry(
    warnings: *const ctxpack_json_warnings,
    index: usize,
    out: *mut ctxpack_json_warning,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::access_into(warnings, "warnings", out_error, |w| {
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
            let (value, warnings) = read(json, &options.as_core())?;
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
                Ok((read.value.build_pipeline()?.into(), read.warnings))
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
/// (compact when `pretty` is 0, indented by two spaces when it is 1; any other value is
/// `CTXPACK_INVALID_ARGUMENT`), into a new `ctxpack_string`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_budget_json(
    budget: *const ctxpack_budget,
    pretty: u8,
    out: *mut *mut ctxpack_string,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `budget` is NULL or a live handle.
    handles::create(out, out_error, || {
        let pretty = flag(pretty, "pretty")?;
        let budget = unsafe { handles::borrow(budget, "budget") }?;
        let json = if pretty {
            budget.to_json_pretty()
        } else {
            budget.to_json()
        };
        Ok(OwnedCString::new(json))
    })
}
