//! Stable serialisation: JSON with object keys sorted and no whitespace,
//! byte-identical to the reference JavaScript implementation in
//! `scripts/gen-hash-vectors.mjs` (keys from `Object.keys(o).sort()` emitted
//! in that order, every scalar as `JSON.stringify` prints it), checked by
//! `tests/hash_vectors.rs`. Not `JSON.stringify` of a sorted copy: a JS
//! object would move integer-like keys first in numeric order (`"9"` before
//! `"10"`), the sort keeps string order (`"10"` before `"9"`).
//!
//! - Keys sort by UTF-16 code units (what JS's default `Array.prototype.sort`
//!   does), not by UTF-8 bytes: they differ for astral-plane characters.
//! - Numbers print as ECMAScript `Number.prototype.toString` (`1e+21`, `0.1`,
//!   `-0` → `0`) via `ryu-js`; every number goes through f64 because that is
//!   what a JS client holds.
//! - Strings escape exactly what `JSON.stringify` escapes: `"` `\\`, the short
//!   escapes `\b \f \n \r \t`, other C0 controls as `\u00xx`; nothing else
//!   (no escaping of `/`, U+2028/2029 or non-ASCII).

use serde_json::Value;

/// Stable serialisation of `value` as a `String`.
pub fn stable_stringify(value: &Value) -> String {
    let mut out = String::with_capacity(128);
    write_value(&mut out, value);
    out
}

/// Appends the stable serialisation of `value` to `out`.
pub fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, &map[key]);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    // Integers that fit in i64/u64 are printed through f64 too: a JS client
    // only ever holds doubles, so 2**53 + 1 must print as 9007199254740992.
    let f = n.as_f64().unwrap_or(f64::NAN);
    if !f.is_finite() {
        // JSON.stringify(NaN/Infinity) === "null"; serde_json cannot hold them
        // anyway, this only guards arbitrary-precision inputs.
        out.push_str("null");
        return;
    }
    let mut buf = ryu_js::Buffer::new();
    out.push_str(buf.format_finite(f));
}

fn write_string(out: &mut String, s: &str) {
    // Long strings (tool output, file content) through serde_json, which
    // escapes exactly JSON.stringify's set with the same short forms and
    // lowercase `\u00xx` (checked by the hash vectors) via a lookup table:
    // ~2× faster than the byte loop, which stays for short strings (keys).
    if s.len() < 256 {
        return write_string_bytewise(out, s);
    }
    let mut buf = Vec::with_capacity(s.len() + s.len() / 8 + 2);
    let mut ser = serde_json::Serializer::new(&mut buf);
    serde::Serializer::serialize_str(&mut ser, s).expect("writing to a Vec cannot fail");
    out.push_str(std::str::from_utf8(&buf).expect("serde_json writes UTF-8"));
}

fn write_string_bytewise(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Byte scan: everything escaped is ASCII, and UTF-8 never uses ASCII
    // bytes inside a multi-byte character, so each hit is a char boundary.
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.push_str(&s[start..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xf) as usize] as char);
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_and_drops_whitespace() {
        assert_eq!(
            stable_stringify(&json!({"b": 1, "a": [true, null]})),
            r#"{"a":[true,null],"b":1}"#
        );
    }

    #[test]
    fn numbers_print_like_javascript() {
        let v: Value = serde_json::from_str(
            "[1e21, 0.1, -0.0, 9007199254740992, 1.5e-7, 100, 123456789012345680000]",
        )
        .unwrap();
        assert_eq!(
            stable_stringify(&v),
            "[1e+21,0.1,0,9007199254740992,1.5e-7,100,123456789012345680000]"
        );
    }

    #[test]
    fn keys_sort_by_utf16_code_units() {
        // U+FF21 (BMP, 0xFF21) sorts after U+1F600 (surrogates 0xD83D…) in UTF-16
        // but before it in UTF-8 byte order.
        let v = json!({"\u{FF21}": 1, "\u{1F600}": 2});
        assert_eq!(stable_stringify(&v), "{\"\u{1F600}\":2,\"\u{FF21}\":1}");
    }

    #[test]
    fn long_strings_escape_as_short_ones_do() {
        let tricky: String = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain("é€😀\u{2028}\u{10FFFF}".chars())
            .collect();
        let long = tricky.repeat(8);
        assert!(long.len() >= 256);
        let (mut a, mut b) = (String::new(), String::new());
        write_string(&mut a, &long);
        write_string_bytewise(&mut b, &long);
        assert_eq!(a, b);
    }

    #[test]
    fn escapes_like_json_stringify() {
        let v = json!("a\"b\\c\u{0}\u{1f}\n\u{2028}é/\u{8}\u{c}\r\t\u{7f}😀");
        assert_eq!(
            stable_stringify(&v),
            "\"a\\\"b\\\\c\\u0000\\u001f\\n\u{2028}é/\\b\\f\\r\\t\u{7f}😀\""
        );
    }
}
