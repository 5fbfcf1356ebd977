//! JSON text as the .NET serializer (System.Text.Json with its default settings) writes
//! it, for the policy and budget writers: an ordered tree printed compact or indented by
//! two spaces, numbers in .NET's shortest round-trip form, strings escaped by .NET's
//! default rules. Both writers produce byte-for-byte what .NET produces for the same
//! values.

use std::fmt::Write;

use crate::error::Result;
use crate::policy::policy_error;

/// An ordered JSON tree.
pub(super) enum Json {
    /// A literal written as is: number, boolean.
    Raw(String),
    /// A string, escaped on output.
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// Members of one JSON object, in writing order.
pub(super) type Members = Vec<(&'static str, Json)>;

impl Json {
    /// The spelling of an enum value, as a string.
    pub(super) fn name<E: crate::policy::json_names::JsonEnum>(value: E) -> Json {
        Json::Str(value.name().into())
    }

    /// An integer.
    pub(super) fn int(value: impl ToString) -> Json {
        Json::Raw(value.to_string())
    }

    /// An object from `(name, value)` members in order.
    pub(super) fn obj<'a>(members: impl IntoIterator<Item = (&'a str, Json)>) -> Json {
        Json::Obj(
            members
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    /// The text: compact, or indented by two spaces with `": "` after names (.NET
    /// `WriteIndented`); empty arrays and objects are `[]` and `{}` either way.
    pub(super) fn to_text(&self, pretty: bool) -> String {
        let mut out = String::new();
        self.print(pretty, 0, &mut out);
        out
    }

    fn print(&self, pretty: bool, depth: usize, out: &mut String) {
        let newline = |out: &mut String, depth: usize| {
            if pretty {
                out.push('\n');
                out.push_str(&"  ".repeat(depth));
            }
        };
        match self {
            Json::Raw(s) => out.push_str(s),
            Json::Str(s) => string(s, out),
            Json::Arr(items) if items.is_empty() => out.push_str("[]"),
            Json::Obj(members) if members.is_empty() => out.push_str("{}"),
            Json::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, depth + 1);
                    item.print(pretty, depth + 1, out);
                }
                newline(out, depth);
                out.push(']');
            }
            Json::Obj(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, depth + 1);
                    string(key, out);
                    out.push_str(if pretty { ": " } else { ":" });
                    value.print(pretty, depth + 1, out);
                }
                newline(out, depth);
                out.push('}');
            }
        }
    }
}

/// A finite number as .NET writes a `double`; JSON has no NaN or infinity, so those fail
/// with the path of the value.
pub(super) fn number(v: f64, path: &str) -> Result<Json> {
    if v.is_finite() {
        Ok(Json::Raw(dotnet_double(v)))
    } else {
        Err(policy_error(
            path,
            format!("cannot write a non-finite number ({v}) to JSON"),
        ))
    }
}

/// A finite `f64` in .NET's shortest round-trip form: the shortest digits that read back
/// to the same value (Rust's and .NET's agree), laid out in fixed notation unless the
/// decimal exponent is below -4 or the integer part needs more than max(15, digits)
/// digits, then as `d.dddE+XX` (`1E-05`, `1.5E+20`, at least two exponent digits).
pub(super) fn dotnet_double(v: f64) -> String {
    let scientific = format!("{v:e}"); // "-1.25e-7": shortest digits
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes an integer exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let count = digits.len() as i32;
    // Position of the decimal point counted from the first digit.
    let point = exponent + 1;
    if point > count.max(15) || point < -3 {
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{mantissa}E{exp_sign}{:02}", exponent.unsigned_abs());
    }
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point >= count {
        format!("{digits}{}", "0".repeat((point - count) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

/// Writes `s` as a JSON string the way .NET's default encoder does: printable ASCII as
/// is, except `"`, `&`, `'`, `+`, `<`, `>` and `` ` `` (as `\uXXXX`) and `\` (as `\\`);
/// `\n`, `\r`, `\t`, `\b`, `\f` as short escapes; every other character as `\uXXXX`
/// UTF-16 units, upper-case hexadecimal (non-ASCII text included).
fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\\' => out.push_str("\\\\"),
            '"' | '&' | '\'' | '+' | '<' | '>' | '`' => escape(c, out),
            ' '..='~' => out.push(c),
            _ => escape(c, out),
        }
    }
    out.push('"');
}

fn escape(c: char, out: &mut String) {
    let mut units = [0u16; 2];
    for unit in c.encode_utf16(&mut units) {
        // Writing to a String cannot fail.
        let _ = write!(out, "\\u{unit:04X}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_use_the_dotnet_layout() {
        // Expected texts are .NET's `double.ToString("R")` / Utf8JsonWriter output.
        for (v, text) in [
            (0.0, "0"),
            (-0.0, "-0"),
            (2.0, "2"),
            (1.5, "1.5"),
            (-60.0, "-60"),
            (0.001, "0.001"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (0.00001, "1E-05"),
            (-1.25e-7, "-1.25E-07"),
            (5e-324, "5E-324"),
            (100.0, "100"),
            (12.5, "12.5"),
            (1e14, "100000000000000"),
            (123456789012345.0, "123456789012345"),
            (1e15, "1E+15"),
            (1234567890123456.0, "1234567890123456"),
            (1.2345678901234568e20, "1.2345678901234568E+20"),
            (f64::MAX, "1.7976931348623157E+308"),
            (0.1 + 0.2, "0.30000000000000004"),
        ] {
            assert_eq!(dotnet_double(v), text, "{v:e}");
            assert_eq!(
                text.parse::<f64>().unwrap().to_bits(),
                v.to_bits(),
                "{text}"
            );
        }
    }

    #[test]
    fn strings_use_the_dotnet_escapes() {
        let mut out = String::new();
        string("a\"b&c'd+e<f>g`h\\i\nj\tk\u{1}l\u{7f}é😀 ~!", &mut out);
        assert_eq!(
            out,
            r#""a\u0022b\u0026c\u0027d\u002Be\u003Cf\u003Eg\u0060h\\i\nj\tk\u0001l\u007F\u00E9\uD83D\uDE00 ~!""#
        );
        let back: String = serde_json::from_str(&out).unwrap();
        assert_eq!(back, "a\"b&c'd+e<f>g`h\\i\nj\tk\u{1}l\u{7f}é😀 ~!");
    }

    #[test]
    fn trees_print_compact_and_indented() {
        let tree = Json::obj([
            ("a", Json::int(1)),
            ("b", Json::Obj(vec![])),
            (
                "c",
                Json::Arr(vec![
                    Json::Str("x".into()),
                    Json::obj([("d", Json::Raw("true".into()))]),
                ]),
            ),
        ]);
        assert_eq!(
            tree.to_text(false),
            r#"{"a":1,"b":{},"c":["x",{"d":true}]}"#
        );
        assert_eq!(
            tree.to_text(true),
            "{\n  \"a\": 1,\n  \"b\": {},\n  \"c\": [\n    \"x\",\n    {\n      \"d\": true\n    }\n  ]\n}"
        );
    }
}
