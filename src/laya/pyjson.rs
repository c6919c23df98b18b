//! Python-compatible text forms: `json.dumps(..., ensure_ascii=False)`, `repr`, `str`, `%g`
//! and `round(x, 4)`.
//!
//! The host contract tokenizes text that Python produced (state JSON, option texts) and quotes
//! values with `%r` in its error messages, so these forms must match CPython byte for byte.

use serde_json::Value;
use std::fmt::Write as _;

/// CPython `repr(float)`: shortest round-trip digits, scientific below 1e-4 and from 1e16.
pub fn float_repr(x: f64) -> String {
    let mut out = String::new();
    write_float_repr(&mut out, x);
    out
}

/// Append CPython `repr(float)` of `x` to `out` (`nan`, `inf` spelled as Python does).
pub fn write_float_repr(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("nan");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
        return;
    }
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    // `{:e}` gives the shortest round-trip digits as d.ddde±x.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let decpt = exp + 1; // value = 0.DIGITS × 10^decpt
    if x < 0.0 {
        out.push('-');
    }
    let n = digits.len() as i32;
    if (-3..=16).contains(&decpt) {
        if decpt <= 0 {
            out.push_str("0.");
            for _ in 0..(-decpt) {
                out.push('0');
            }
            out.push_str(&digits);
        } else if decpt >= n {
            out.push_str(&digits);
            for _ in 0..(decpt - n) {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..decpt as usize]);
            out.push('.');
            out.push_str(&digits[decpt as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
}

/// CPython `round(x, 4)`: the correctly rounded 4-decimal value (ties to even on the exact
/// binary value), which `(x * 1e4).round() / 1e4` is not.
pub fn round4(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let mut buf = String::with_capacity(24);
    let _ = write!(buf, "{x:.4}");
    buf.parse().unwrap_or(x)
}

/// CPython `'%g' % x` (6 significant digits, trailing zeros removed).
pub fn format_g(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{:.5e}", x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let m = strip_zeros(mantissa);
        format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// CPython `str.isspace()` for one character (what `str.strip()` removes).
pub fn py_isspace(c: char) -> bool {
    matches!(c, '\u{1c}'..='\u{1f}') || c.is_whitespace()
}

/// CPython `str.strip()` with no argument.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// `json.dumps(value, ensure_ascii=False)` with the default `", "` / `": "` separators.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    write_dumps(&mut out, value);
    out
}

/// Append `json.dumps(value, ensure_ascii=False)` to `out`.
pub fn write_dumps(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_json_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_dumps(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json_str(out, k);
                out.push_str(": ");
                write_dumps(out, v);
            }
            out.push('}');
        }
    }
}

/// `json.dumps(value, ensure_ascii=False, indent=2)` (the reference CLI's output form).
pub fn dumps_indent(value: &Value) -> String {
    let mut out = String::new();
    write_indent(&mut out, value, 0);
    out
}

fn write_indent(out: &mut String, value: &Value, level: usize) {
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push_str(if i > 0 { ",\n" } else { "\n" });
                push_spaces(out, (level + 1) * 2);
                write_indent(out, item, level + 1);
            }
            out.push('\n');
            push_spaces(out, level * 2);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                out.push_str(if i > 0 { ",\n" } else { "\n" });
                push_spaces(out, (level + 1) * 2);
                write_json_str(out, k);
                out.push_str(": ");
                write_indent(out, v, level + 1);
            }
            out.push('\n');
            push_spaces(out, level * 2);
            out.push('}');
        }
        other => write_dumps(out, other),
    }
}

fn push_spaces(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        write_json_float(out, f);
    }
}

/// A float as `json.dumps` writes it (`NaN`, `Infinity` for non-finite values).
pub fn write_json_float(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("NaN");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        write_float_repr(out, f);
    }
}

/// A JSON string literal as `json.dumps(..., ensure_ascii=False)` writes it.
pub fn write_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// CPython `str(v)` of a JSON scalar as Python loaded it (`True`, `None`, `2.5`, text as is).
pub fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Number(n) => number_repr(n),
        other => py_repr(other),
    }
}

fn number_repr(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        float_repr(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// CPython `repr(v)` of a value as `json.loads` built it (dict, list, str, int, float, bool, None).
pub fn py_repr(v: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, v);
    out
}

fn write_repr(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Number(n) => out.push_str(&number_repr(n)),
        Value::String(s) => write_str_repr(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str_repr(out, k);
                out.push_str(": ");
                write_repr(out, v);
            }
            out.push('}');
        }
    }
}

/// CPython `repr(str)`.
pub fn str_repr(s: &str) -> String {
    let mut out = String::new();
    write_str_repr(&mut out, s);
    out
}

fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !py_isprintable(c) => {
                let u = c as u32;
                let _ = if u <= 0xff {
                    write!(out, "\\x{u:02x}")
                } else if u <= 0xffff {
                    write!(out, "\\u{u:04x}")
                } else {
                    write!(out, "\\U{u:08x}")
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// CPython `str.isprintable()` for one character: not Cc/Cf/Cs/Co/Cn/Zl/Zp/Zs (space excepted).
/// Covers the control, format, separator and private-use ranges; unassigned code points in
/// assigned blocks are treated as printable.
fn py_isprintable(c: char) -> bool {
    let u = c as u32;
    !matches!(u,
        0x00..=0x1f | 0x7f..=0xa0 | 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x1680
        | 0x180e | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064 | 0x2066..=0x206f
        | 0x3000 | 0xd800..=0xf8ff | 0xfeff | 0xfff9..=0xfffb | 0x110bd | 0x110cd
        | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a | 0xe0001 | 0xe0020..=0xe007f
        | 0xf0000..=0x10ffff)
}

/// CPython `type(v).__name__` of a value as `json.loads` built it.
pub fn py_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// The JSON text Python gives a dict key built from this scalar (`json.dumps({k: ...})`).
pub fn json_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "true".into(),
        Value::Bool(false) => "false".into(),
        Value::Null => "null".into(),
        Value::Number(n) => number_repr(n),
        other => dumps(other),
    }
}

/// Python equality of two scalars as dict keys: numbers and bools compare by value
/// (`1 == 1.0 == True`), strings only equal strings.
pub fn py_key_eq(a: &Value, b: &Value) -> bool {
    fn int(v: &Value) -> Option<i128> {
        match v {
            Value::Bool(b) => Some(i128::from(*b)),
            Value::Number(n) if !n.is_f64() => n.as_i64().map(i128::from).or(n.as_u64().map(i128::from)),
            _ => None,
        }
    }
    fn num(v: &Value) -> Option<f64> {
        match v {
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }
    match (a, b) {
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Null, Value::Null) => true,
        _ => match (int(a), int(b)) {
            (Some(i), Some(j)) => i == j,
            _ => matches!((num(a), num(b)), (Some(x), Some(y)) if x == y),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_repr_matches_cpython() {
        for (x, want) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (2.5, "2.5"),
            (1240.5, "1240.5"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e20, "1.2345e+20"),
            (123456789.125, "123456789.125"),
            (-3.75, "-3.75"),
            (1e100, "1e+100"),
            (0.1 + 0.2, "0.30000000000000004"),
        ] {
            assert_eq!(float_repr(x), want, "{x}");
        }
    }

    #[test]
    fn round4_is_correctly_rounded_not_half_up() {
        assert_eq!(round4(0.03125), 0.0312);
        assert_eq!(round4(0.15625), 0.1562);
        assert_eq!(round4(0.46875), 0.4688);
        assert_eq!(round4(0.26894142), 0.2689);
        assert_eq!(round4(1.0), 1.0);
    }

    #[test]
    fn format_g_matches_percent_g() {
        assert_eq!(format_g(0.5), "0.5");
        assert_eq!(format_g(5.0), "5");
        assert_eq!(format_g(1.0), "1");
        assert_eq!(format_g(1.23456789), "1.23457");
        assert_eq!(format_g(0.00001234), "1.234e-05");
        assert_eq!(format_g(1234567.0), "1.23457e+06");
        assert_eq!(format_g(100000.0), "100000");
    }

    #[test]
    fn dumps_uses_python_separators_and_escapes() {
        let v = json!({"a": 1, "b": [true, null, 2.5, 1e-7], "c": "x\"y\\\n\t\u{1}é😀"});
        assert_eq!(
            dumps(&v),
            "{\"a\": 1, \"b\": [true, null, 2.5, 1e-07], \"c\": \"x\\\"y\\\\\\n\\t\\u0001é😀\"}"
        );
        assert_eq!(dumps(&json!({})), "{}");
        assert_eq!(dumps(&json!(100.0)), "100.0");
    }

    #[test]
    fn dumps_indent_matches_python_indent_2() {
        let v = json!({"a": {}, "b": [1, {"c": []}]});
        assert_eq!(
            dumps_indent(&v),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    {\n      \"c\": []\n    }\n  ]\n}"
        );
    }

    #[test]
    fn repr_quotes_like_cpython() {
        assert_eq!(str_repr("abc"), "'abc'");
        assert_eq!(str_repr("it's"), "\"it's\"");
        assert_eq!(str_repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(str_repr("tab\tnl\n\u{7f}é"), "'tab\\tnl\\n\\x7fé'");
        assert_eq!(py_repr(&json!([1, "a", null, true, 2.0])), "[1, 'a', None, True, 2.0]");
        assert_eq!(py_repr(&json!({"k": [0]})), "{'k': [0]}");
    }

    #[test]
    fn str_and_keys_follow_python() {
        assert_eq!(py_str(&json!(false)), "False");
        assert_eq!(py_str(&json!(1.0)), "1.0");
        assert_eq!(json_key(&json!(false)), "false");
        assert_eq!(json_key(&json!(2.5)), "2.5");
        assert!(py_key_eq(&json!(1), &json!(1.0)));
        assert!(py_key_eq(&json!(1), &json!(true)));
        assert!(py_key_eq(&json!(0.0), &json!(false)));
        assert!(!py_key_eq(&json!("1"), &json!(1)));
        assert!(!py_key_eq(&json!(2), &json!(true)));
    }

    #[test]
    fn strip_uses_python_whitespace() {
        assert_eq!(py_strip("\u{1c} a \u{a0}"), "a");
        assert_eq!(py_strip("   "), "");
    }
}
