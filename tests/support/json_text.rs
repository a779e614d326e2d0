//! JSON serializations in several layouts, and syntactic mutations that break JSON.

use serde_json::Value;

/// How to lay out a JSON value.
#[derive(Clone, Copy, Debug)]
pub enum Layout {
    /// `json.dumps(v, separators=(",", ":"), ensure_ascii=False)`.
    Compact,
    /// `json.dumps(v, ensure_ascii=False)`: `", "` and `": "`.
    Python,
    /// `json.dumps(v, indent=2, ensure_ascii=True)`: newlines, indentation, `\uXXXX` escapes.
    IndentedAscii,
}

/// Serializes `v` in `layout`.
pub fn dump(v: &Value, layout: Layout) -> String {
    let mut out = String::new();
    write(&mut out, v, layout, 0);
    out
}

fn write(out: &mut String, v: &Value, layout: Layout, depth: usize) {
    let (item_sep, key_sep) = match layout {
        Layout::Compact => (",", ":"),
        Layout::Python => (", ", ": "),
        Layout::IndentedAscii => (",", ": "),
    };
    let newline = |out: &mut String, d: usize| {
        if let Layout::IndentedAscii = layout {
            out.push('\n');
            out.push_str(&"  ".repeat(d));
        }
    };
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => out.push_str(&v.to_string()),
        Value::String(s) => write_string(out, s, matches!(layout, Layout::IndentedAscii)),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                write(out, x, layout, depth + 1);
            }
            if !items.is_empty() {
                newline(out, depth);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, x)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                write_string(out, k, matches!(layout, Layout::IndentedAscii));
                out.push_str(key_sep);
                write(out, x, layout, depth + 1);
            }
            if !map.is_empty() {
                newline(out, depth);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str, ascii: bool) {
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
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ascii && !c.is_ascii() => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Texts derived from a valid JSON text that are not JSON any more (each checked by the caller
/// against serde_json, the independent judge).
pub fn mutations(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let t = text.trim_end();
    if t.len() > 1 {
        out.push(t[..t.len() - 1].to_string()); // drop the closing bracket
        out.push(format!("{t},")); // trailing comma at top level
        out.push(format!("{t} {t}")); // two values
    }
    if let Some(i) = t.find(':') {
        out.push(format!("{}={}", &t[..i], &t[i + 1..]));
    }
    if let Some(i) = t.find('"') {
        out.push(format!("{}'{}", &t[..i], &t[i + 1..]));
    }
    if let Some(i) = t.rfind(['}', ']']) {
        out.push(format!("{},{}", &t[..i], &t[i..])); // trailing comma inside
    }
    out.push(t.replacen("true", "True", 1));
    out.push(t.replacen("null", "nul", 1));
    out.push(t.replacen(": ", ": 01", 1));
    out.push(t.replacen("\"", "\"\\x", 1));
    out.push(t.replacen("\"", "\"\t", 1)); // raw control character in a string
    out.retain(|m| m != text);
    out
}
