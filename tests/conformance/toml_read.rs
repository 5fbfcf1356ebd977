//! Typed access to a parsed TOML table with path-qualified error messages, and the
//! datetime conversion of the vector format (08 §2).

use chrono::{NaiveDate, NaiveTime};
use toml::value::{Datetime, Offset};
use toml::{Table, Value};

/// Why a vector could not be turned into a description.
#[derive(Debug, Clone, PartialEq)]
pub enum SpecError {
    /// The file is malformed: a missing key, a wrong type, an unknown name.
    Malformed(String),
    /// A component configuration holds a value no component can accept (for example a
    /// non-finite duration). Counts as a construction failure.
    Invalid(String),
}

impl SpecError {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            SpecError::Malformed(m) | SpecError::Invalid(m) => m,
        }
    }
}

/// Result of reading part of a vector.
pub type SpecResult<T> = Result<T, SpecError>;

/// A table together with its dotted path, for error messages.
#[derive(Debug, Clone)]
pub struct Tbl<'a> {
    table: &'a Table,
    path: String,
}

/// The empty table, for components built "without config".
pub fn empty_table() -> &'static Table {
    static EMPTY: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Table::new)
}

impl<'a> Tbl<'a> {
    /// Views a root table.
    pub fn root(table: &'a Table) -> Self {
        Tbl {
            table,
            path: String::new(),
        }
    }

    /// Views `table` under `path`.
    pub fn at(table: &'a Table, path: impl Into<String>) -> Self {
        Tbl {
            table,
            path: path.into(),
        }
    }

    /// Dotted path of `key` inside this table.
    pub fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// True when `key` is present.
    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// The raw value of `key`.
    pub fn value(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    fn wrong_type(&self, key: &str, want: &str, got: &Value) -> SpecError {
        SpecError::Malformed(format!(
            "`{}` must be {want}, found {}",
            self.key_path(key),
            got.type_str()
        ))
    }

    /// Error for a missing required key.
    pub fn missing(&self, key: &str) -> SpecError {
        SpecError::Malformed(format!("missing required key `{}`", self.key_path(key)))
    }

    /// Makes an optional value required.
    pub fn require<T>(&self, key: &str, value: Option<T>) -> SpecResult<T> {
        value.ok_or_else(|| self.missing(key))
    }

    /// A string value.
    pub fn str(&self, key: &str) -> SpecResult<Option<&'a str>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.wrong_type(key, "a string", v)),
        }
    }

    /// A required string value.
    pub fn req_str(&self, key: &str) -> SpecResult<&'a str> {
        let v = self.str(key)?;
        self.require(key, v)
    }

    /// A boolean value.
    pub fn bool(&self, key: &str) -> SpecResult<Option<bool>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(v) => Err(self.wrong_type(key, "a boolean", v)),
        }
    }

    /// An integer value (integers only, signed 64-bit).
    pub fn i64(&self, key: &str) -> SpecResult<Option<i64>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::Integer(i)) => Ok(Some(*i)),
            Some(v) => Err(self.wrong_type(key, "an integer", v)),
        }
    }

    /// A required integer value.
    pub fn req_i64(&self, key: &str) -> SpecResult<i64> {
        let v = self.i64(key)?;
        self.require(key, v)
    }

    /// A float value; integers are accepted wherever a float is expected.
    pub fn f64(&self, key: &str) -> SpecResult<Option<f64>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(v) => as_f64(v)
                .map(Some)
                .ok_or_else(|| self.wrong_type(key, "a number", v)),
        }
    }

    /// A required float value.
    pub fn req_f64(&self, key: &str) -> SpecResult<f64> {
        let v = self.f64(key)?;
        self.require(key, v)
    }

    /// A datetime value as nanoseconds since the Unix epoch.
    pub fn datetime(&self, key: &str) -> SpecResult<Option<i64>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::Datetime(dt)) => datetime_to_unix_nanos(dt)
                .map(Some)
                .map_err(|m| SpecError::Malformed(format!("`{}`: {m}", self.key_path(key)))),
            Some(v) => Err(self.wrong_type(key, "a datetime", v)),
        }
    }

    /// A sub-table.
    pub fn table(&self, key: &str) -> SpecResult<Option<Tbl<'a>>> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(Tbl::at(t, self.key_path(key)))),
            Some(v) => Err(self.wrong_type(key, "a table", v)),
        }
    }

    /// An array of tables (absent = `None`), each element with its path.
    pub fn tables(&self, key: &str) -> SpecResult<Option<Vec<Tbl<'a>>>> {
        let Some(value) = self.table.get(key) else {
            return Ok(None);
        };
        let Value::Array(array) = value else {
            return Err(self.wrong_type(key, "an array of tables", value));
        };
        array
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::Table(t) => Ok(Tbl::at(t, format!("{}[{i}]", self.key_path(key)))),
                other => Err(self.wrong_type(key, "an array of tables", other)),
            })
            .collect::<SpecResult<Vec<_>>>()
            .map(Some)
    }

    /// An array of strings.
    pub fn strings(&self, key: &str) -> SpecResult<Option<Vec<String>>> {
        let Some(value) = self.table.get(key) else {
            return Ok(None);
        };
        let Value::Array(array) = value else {
            return Err(self.wrong_type(key, "an array of strings", value));
        };
        array
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(self.wrong_type(key, "an array of strings", other)),
            })
            .collect::<SpecResult<Vec<_>>>()
            .map(Some)
    }

    /// A required array of strings.
    pub fn req_strings(&self, key: &str) -> SpecResult<Vec<String>> {
        let v = self.strings(key)?;
        self.require(key, v)
    }

    /// The entries of the table, in file order.
    pub fn entries(&self) -> impl Iterator<Item = (&'a String, &'a Value)> {
        self.table.iter()
    }
}

/// A TOML integer or float as f64.
pub fn as_f64(value: &Value) -> Option<f64> {
    match value {
        Value::Float(f) => Some(*f),
        Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// Converts a TOML datetime to nanoseconds since the Unix epoch, UTC, from its components:
/// missing seconds are 0, an offset is subtracted, a missing offset means UTC, a missing
/// time means midnight. A time without a date is rejected.
pub fn datetime_to_unix_nanos(dt: &Datetime) -> Result<i64, String> {
    let date = dt.date.ok_or("a time without a date is not an instant")?;
    let (hour, minute, second, nanos) = match dt.time {
        Some(t) => (
            i64::from(t.hour),
            i64::from(t.minute),
            i64::from(t.second.unwrap_or(0)),
            i64::from(t.nanosecond.unwrap_or(0)),
        ),
        None => (0, 0, 0, 0),
    };
    let offset_minutes = match dt.offset {
        Some(Offset::Custom { minutes }) => i64::from(minutes),
        Some(Offset::Z) | None => 0,
    };
    // The calendar is chrono's (a dev-dependency), not a copy of the library's own.
    let midnight = NaiveDate::from_ymd_opt(
        i32::from(date.year),
        u32::from(date.month),
        u32::from(date.day),
    )
    .ok_or_else(|| format!("{dt} is not a calendar date"))?
    .and_time(NaiveTime::MIN)
    .and_utc()
    .timestamp();
    let seconds = midnight + hour * 3600 + (minute - offset_minutes) * 60 + second;
    seconds
        .checked_mul(NANOS_PER_SECOND)
        .and_then(|ns| ns.checked_add(nanos))
        .ok_or_else(|| format!("{dt} is outside the range of 64-bit nanoseconds"))
}

/// Converts a duration in seconds to whole nanoseconds (`secs * 1e9`, rounded). Non-finite
/// values and values outside the i64 range are invalid; negative values are passed on so
/// the engine can reject them.
pub fn seconds_to_nanos(secs: f64, what: &str) -> SpecResult<i64> {
    let ns = (secs * 1e9).round();
    // The i64 range as f64: [-2^63, 2^63); 2^63 itself is out of range. NaN fails too.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(-LIMIT..LIMIT).contains(&ns) {
        return Err(SpecError::Invalid(format!(
            "`{what}` = {secs} seconds is not representable as 64-bit nanoseconds"
        )));
    }
    Ok(ns as i64)
}

/// Checks the datetime conversion (times, offsets) against chrono's own instants; run
/// once at start-up so a broken conversion cannot silently shift every timestamp.
pub fn self_check() {
    use chrono::{TimeZone, Utc};
    let cases = [
        (
            "2024-06-01T00:00Z",
            Utc.with_ymd_and_hms(2024, 6, 1, 0, 0, 0),
        ),
        (
            "2025-01-01T12:00:00Z",
            Utc.with_ymd_and_hms(2025, 1, 1, 12, 0, 0),
        ),
        (
            "2024-02-29T23:59:59+02:30",
            Utc.with_ymd_and_hms(2024, 2, 29, 21, 29, 59),
        ),
        (
            "1969-12-31T23:00-01:00",
            Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0),
        ),
        (
            "1900-03-01T00:00:00Z",
            Utc.with_ymd_and_hms(1900, 3, 1, 0, 0, 0),
        ),
    ];
    for (text, expected) in cases {
        let dt: Datetime = text.parse().expect("self-check datetime parses");
        let want = expected.single().unwrap().timestamp_nanos_opt().unwrap();
        assert_eq!(
            datetime_to_unix_nanos(&dt),
            Ok(want),
            "datetime conversion of {text}"
        );
    }
}
