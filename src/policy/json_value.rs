//! Walking a parsed JSON document by hand, shared by the policy and budget readers: every
//! error names the JSON path of the bad field, and what lenient reading tolerates is
//! recorded as a warning (or rejected, when reading strictly).
//!
//! Errors are built as [`Error::InvalidPolicy`]; the budget reader converts them.

use std::cell::RefCell;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::model::ContextKind;
use crate::policy::json_names::JsonEnum;
use crate::policy::{
    index_path, key_path, policy_error, prop_path, JsonReadOptions, JsonWarning, JsonWarningKind,
};

pub(super) type Object = Map<String, Value>;

/// One read of one document: its options and the warnings gathered so far.
pub(super) struct Reader<'o> {
    pub(super) options: JsonReadOptions<'o>,
    warnings: RefCell<Vec<JsonWarning>>,
}

impl<'o> Reader<'o> {
    pub(super) fn new(options: &JsonReadOptions<'o>) -> Self {
        Self {
            options: *options,
            warnings: RefCell::new(Vec::new()),
        }
    }

    /// The warnings gathered, in document order.
    pub(super) fn into_warnings(self) -> Vec<JsonWarning> {
        self.warnings.into_inner()
    }

    /// Something lenient reading tolerates at `path`: an error with `error` when strict,
    /// otherwise a warning with `warning`.
    pub(super) fn tolerate(
        &self,
        kind: JsonWarningKind,
        path: &str,
        error: &str,
        warning: &str,
    ) -> Result<()> {
        if self.options.strict {
            return Err(policy_error(path, error));
        }
        let path = if path.is_empty() { "$" } else { path };
        self.warnings.borrow_mut().push(JsonWarning {
            kind,
            path: path.to_string(),
            message: warning.to_string(),
        });
        Ok(())
    }

    /// The object at `path`; properties not in `known` are ignored with a warning (an
    /// error when strict).
    pub(super) fn object<'v>(
        &self,
        value: &'v Value,
        path: &str,
        known: &[&str],
    ) -> Result<&'v Object> {
        let obj = value
            .as_object()
            .ok_or_else(|| type_error(value, path, "an object"))?;
        for key in obj.keys().filter(|k| !known.contains(&k.as_str())) {
            self.tolerate(
                JsonWarningKind::UnknownProperty,
                &key_path(path, key),
                "unknown property",
                "unknown property; ignored",
            )?;
        }
        Ok(obj)
    }

    /// An object keyed by kind, in document order, each value read by `read`. A blank key
    /// is an error; a key equal to an earlier one under ASCII case folding replaces the
    /// earlier value and keeps the earlier spelling and position (as .NET's kind-keyed
    /// dictionaries do), with a warning (an error when strict).
    pub(super) fn kind_map<T>(
        &self,
        value: &Value,
        path: &str,
        read: impl Fn(&Value, &str) -> Result<T>,
    ) -> Result<Vec<(ContextKind, T)>> {
        let obj = value
            .as_object()
            .ok_or_else(|| type_error(value, path, "an object"))?;
        let mut out: Vec<(ContextKind, T)> = Vec::with_capacity(obj.len());
        for (key, v) in obj {
            let entry_path = key_path(path, key);
            let v = read(v, &entry_path)?;
            let kind = ContextKind::new(key.as_str())
                .map_err(|_| policy_error(path, "kind names must not be blank"))?;
            match out.iter_mut().find(|(k, _)| *k == kind) {
                None => out.push((kind, v)),
                Some((first, slot)) => {
                    let problem = format!(
                        "repeats the kind \"{first}\" (kinds compare ASCII case-insensitively)"
                    );
                    let outcome = format!("{problem}; the last value is kept");
                    self.tolerate(
                        JsonWarningKind::RepeatedKind,
                        &entry_path,
                        &problem,
                        &outcome,
                    )?;
                    *slot = v;
                }
            }
        }
        Ok(out)
    }
}

/// The parsed document: not empty, well-formed, not `null`. `what` names it in the
/// message for `null` (`policy`, `budget`).
pub(super) fn document(json: &str, what: &str) -> Result<Value> {
    if json.trim().is_empty() {
        return Err(policy_error("", "JSON input cannot be empty"));
    }
    let value: Value =
        serde_json::from_str(json).map_err(|e| policy_error("", format!("malformed JSON: {e}")))?;
    if value.is_null() {
        return Err(policy_error(
            "",
            format!("{what} cannot be null (received JSON literal 'null')"),
        ));
    }
    Ok(value)
}

pub(super) fn array<'a>(value: &'a Value, path: &str) -> Result<&'a Vec<Value>> {
    value
        .as_array()
        .ok_or_else(|| type_error(value, path, "an array"))
}

/// The array at `path`, each element read by `read` with its own path.
pub(super) fn list<T>(
    value: &Value,
    path: &str,
    read: impl Fn(&Value, &str) -> Result<T>,
) -> Result<Vec<T>> {
    array(value, path)?
        .iter()
        .enumerate()
        .map(|(i, v)| read(v, &index_path(path, i)))
        .collect()
}

/// A property that may be absent or `null`.
pub(super) fn optional<'a>(obj: &'a Object, prop: &str) -> Option<&'a Value> {
    obj.get(prop).filter(|v| !v.is_null())
}

pub(super) fn string(value: &Value, path: &str) -> Result<String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| type_error(value, path, "a string"))
}

pub(super) fn number(value: &Value, path: &str) -> Result<f64> {
    value
        .as_f64()
        .ok_or_else(|| type_error(value, path, "a number"))
}

pub(super) fn integer(value: &Value, path: &str) -> Result<i64> {
    match value.as_i64() {
        Some(i) => Ok(i),
        None if value.is_number() => Err(policy_error(
            path,
            format!("must be an integer (got {value})"),
        )),
        None => Err(type_error(value, path, "an integer")),
    }
}

pub(super) fn unsigned(value: &Value, path: &str) -> Result<u64> {
    match value.as_u64() {
        Some(u) => Ok(u),
        None if value.is_number() => Err(policy_error(
            path,
            format!("must be a non-negative integer (got {value})"),
        )),
        None => Err(type_error(value, path, "a non-negative integer")),
    }
}

pub(super) fn optional_number(obj: &Object, path: &str, prop: &str) -> Result<Option<f64>> {
    optional(obj, prop)
        .map(|v| number(v, &prop_path(path, prop)))
        .transpose()
}

pub(super) fn optional_integer(obj: &Object, path: &str, prop: &str) -> Result<Option<i64>> {
    optional(obj, prop)
        .map(|v| integer(v, &prop_path(path, prop)))
        .transpose()
}

/// A non-nullable enum property: `None` when absent; `null` is a type error.
pub(super) fn required_enum<E: JsonEnum>(
    obj: &Object,
    path: &str,
    prop: &str,
) -> Result<Option<E>> {
    obj.get(prop)
        .map(|value| enum_value(value, &prop_path(path, prop)))
        .transpose()
}

/// An enum value at `path`: a spelling (ASCII case-insensitive), or, for the enums that
/// have them, a .NET integer ordinal.
pub(super) fn enum_value<E: JsonEnum>(value: &Value, path: &str) -> Result<E> {
    match value {
        Value::String(s) => E::from_name(s).ok_or_else(|| {
            policy_error(
                path,
                format!(
                    "unknown {} {value}; known values: {}",
                    E::WHAT,
                    E::known_names()
                ),
            )
        }),
        Value::Number(n) if E::has_ordinals() => n
            .as_u64()
            .and_then(E::from_ordinal)
            .ok_or_else(|| policy_error(path, format!("unknown {} value {n}", E::WHAT))),
        other => Err(type_error(other, path, "a string")),
    }
}

pub(super) fn type_error(value: &Value, path: &str, expected: &str) -> Error {
    let found = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    policy_error(path, format!("expected {expected}, found {found}"))
}
