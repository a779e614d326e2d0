//! Small helpers over `serde_json` values shared by the layers that read JSON (tokenizer files,
//! schemas, structural tags, cache keys).

use serde_json::Value;

/// The kind of `v` with its article, for error messages ("found a string").
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Feeds a JSON value to `h` without serializing it: a type tag per value, lengths before
/// strings, arrays and objects, object members in their order (property order is part of the
/// grammar). `1` and `1.0` hash differently (a missed share, never a wrong one). Iterative, so
/// deep values cannot overflow the stack.
pub fn hash_json(v: &Value, h: &mut xxhash_rust::xxh3::Xxh3) {
    let mut stack: Vec<(Option<&str>, &Value)> = vec![(None, v)];
    while let Some((key, v)) = stack.pop() {
        if let Some(k) = key {
            h.update(&(k.len() as u64).to_le_bytes());
            h.update(k.as_bytes());
        }
        match v {
            Value::Null => h.update(&[0]),
            Value::Bool(b) => h.update(&[1, *b as u8]),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    h.update(&[2]);
                    h.update(&u.to_le_bytes());
                } else if let Some(i) = n.as_i64() {
                    h.update(&[3]);
                    h.update(&i.to_le_bytes());
                } else {
                    h.update(&[4]);
                    h.update(&n.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes());
                }
            }
            Value::String(s) => {
                h.update(&[5]);
                h.update(&(s.len() as u64).to_le_bytes());
                h.update(s.as_bytes());
            }
            Value::Array(items) => {
                h.update(&[6]);
                h.update(&(items.len() as u64).to_le_bytes());
                stack.extend(items.iter().rev().map(|x| (None, x)));
            }
            Value::Object(map) => {
                h.update(&[7]);
                h.update(&(map.len() as u64).to_le_bytes());
                let start = stack.len();
                stack.extend(map.iter().map(|(k, x)| (Some(k.as_str()), x)));
                stack[start..].reverse();
            }
        }
    }
}

/// The length of `v` as compact JSON text, counted up to `cap + 1` at most (so a huge value
/// costs a walk of its first `cap` bytes, no allocation but the walk's stack): strings and keys
/// by their UTF-8 bytes plus quotes (escapes not counted), numbers by their digits, `null`,
/// `true` and `false` by their letters, and separators. Escapes and exponent notation make the
/// real text longer, so this is a lower bound, which is what a size limit needs: a text that
/// fits is never refused.
pub fn text_len(v: &Value, cap: usize) -> usize {
    let mut len = 0usize;
    let mut stack: Vec<&Value> = vec![v];
    while let Some(v) = stack.pop() {
        len += match v {
            Value::Null | Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(n) => number_len(n),
            Value::String(s) => s.len() + 2,
            // Brackets and the commas between items.
            Value::Array(items) => {
                stack.extend(items);
                2 + items.len().saturating_sub(1)
            }
            // Braces, per member its quoted key and a colon, and the commas between members.
            Value::Object(map) => {
                stack.extend(map.values());
                2 + map.len().saturating_sub(1) + map.keys().map(|k| k.len() + 3).sum::<usize>()
            }
        };
        if len > cap {
            return cap.saturating_add(1);
        }
    }
    len
}

/// The digits (and sign) of `n` as written by `serde_json`, at least 1.
fn number_len(n: &serde_json::Number) -> usize {
    let digits = |u: u64| u.checked_ilog10().map_or(1, |l| l as usize + 1);
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => digits(u),
        (None, Some(i)) => 1 + digits(i.unsigned_abs()),
        // Floats: at least a digit, a point and a digit.
        _ => 3,
    }
}

/// How deeply the arrays and objects of a JSON text nest, counting up to `cap + 1` at most (so
/// a hostile text costs one pass and no allocation). Brackets inside strings do not count.
/// The text need not be valid JSON: this runs before parsing, to bound the parser's recursion.
pub fn nesting_depth(text: &[u8], cap: usize) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > cap {
                    return deepest;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Parses a JSON text whose nesting was checked with [`nesting_depth`]: serde_json's own
/// recursion limit (128 levels) is lifted, since the caller's bound replaces it.
pub fn parse_bounded(text: &str) -> Result<Value, serde_json::Error> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = Value::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

#[cfg(test)]
mod depth_tests {
    use super::*;

    #[test]
    fn brackets_in_strings_do_not_count() {
        assert_eq!(nesting_depth(br#"{"a": [1, {"b": "[[[{"}], "c\"[": []}"#, 100), 3);
        assert_eq!(nesting_depth(b"", 100), 0);
        assert_eq!(nesting_depth(b"[]", 100), 1);
    }

    #[test]
    fn the_count_stops_past_the_cap() {
        let deep = "[".repeat(1_000_000);
        assert_eq!(nesting_depth(deep.as_bytes(), 10), 11);
    }

    #[test]
    fn parsing_goes_past_serde_jsons_limit() {
        let text = format!("{}1{}", "[".repeat(300), "]".repeat(300));
        assert!(serde_json::from_str::<Value>(&text).is_err(), "serde_json's default limit applies");
        let value = parse_bounded(&text).unwrap();
        assert!(value.is_array());
        assert!(parse_bounded("[1] x").is_err(), "trailing text is an error");
    }
}

#[cfg(test)]
mod text_len_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compact_text_is_counted_exactly_without_escapes() {
        for v in [
            json!(null),
            json!([true, false, 0, 17, -3, "ab"]),
            json!({"type": "object", "properties": {"a": {"enum": [1, 22, 333]}}, "x": []}),
            json!({}),
            json!(["é"]),
        ] {
            let exact = serde_json::to_string(&v).unwrap().len();
            assert_eq!(text_len(&v, usize::MAX), exact, "{v}");
        }
    }

    #[test]
    fn the_count_stops_past_the_cap() {
        let v = json!(["x".repeat(1000), "y".repeat(1000)]);
        assert_eq!(text_len(&v, 100), 101);
        // Floats and escapes are counted short: a lower bound.
        assert!(
            text_len(&json!([1.5e300, "a\"b"]), usize::MAX)
                < serde_json::to_string(&json!([1.5e300, "a\"b"])).unwrap().len()
        );
    }
}
