use serde_json::{json, Value};

use super::*;

/// The keywords of a JSON object.
fn parse(v: &Value) -> Keywords<'_> {
    Keywords::parse(v.as_object().expect("an object"), v)
}

/// The JSON text of edited keywords (not their source).
fn text(k: &Keywords<'_>) -> String {
    serde_json::to_string(&k.clone()).unwrap()
}

#[test]
fn writes_back_the_json_it_was_read_from() {
    let v = json!({
        "type": ["string", 5], "x-vendor": {"a": 1}, "minimum": 1.0, "maximum": 7, "$ref": 3,
        "properties": {"b": true, "a": {"items": [{"const": null}], "dependencies": {"q": ["r"], "s": {}}}},
        "required": ["a", 1], "title": "t", "enum": [1, "x"], "items": {"not": 4}, "uniqueItems": "yes"
    });
    let k = parse(&v);
    assert_eq!(text(&k), serde_json::to_string(&v).unwrap());
    assert!(k.has(Kw::Type) && !k.has(Kw::Const));
    assert_eq!(k.other("x-vendor"), Some(&json!({"a": 1})));
    assert!(matches!(k.reference, Some(Field::Wrong(_))));
    assert!(matches!(k.unique_items, Some(Field::Wrong(_))));
    assert_eq!(k.names().collect::<Vec<_>>()[..3], ["type", "x-vendor", "minimum"]);
}

#[test]
fn removal_moves_the_last_key_into_place_as_a_json_object_does() {
    let v = json!({"enum": [1], "a": 1, "minLength": 2, "const": 1, "b": 2});
    let mut k = parse(&v);
    k.remove(Kw::Enum);
    k.remove(Kw::Const);
    let mut m = v.as_object().unwrap().clone();
    m.remove("enum");
    m.remove("const");
    assert_eq!(text(&k), serde_json::to_string(&m).unwrap());
    assert_eq!(text(&k), r#"{"b":2,"a":1,"minLength":2}"#);
    let mut k = parse(&v);
    k.remove_keeping_order(Kw::Enum);
    assert_eq!(text(&k), r#"{"a":1,"minLength":2,"const":1,"b":2}"#);
}

#[test]
fn equality_is_json_equality() {
    let a = json!({"type": "string", "properties": {"x": {}, "y": true}, "t": 1});
    let b = json!({"t": 1, "properties": {"y": true, "x": {}}, "type": "string"});
    let c = json!({"t": 1, "properties": {"y": true, "x": {}}, "type": ["string"]});
    let d = json!({"minimum": 1.0});
    let e = json!({"minimum": 1});
    assert!(parse(&a).json_eq(&parse(&b)));
    assert!(!parse(&a).json_eq(&parse(&c)));
    assert!(!parse(&d).json_eq(&parse(&e)));
    // A parsed object and the value it came from, and a synthesized copy.
    let parsed = Schema::object(parse(&a));
    assert!(parsed == Schema::Json(&a) && parsed == Schema::Json(&b) && parsed != Schema::Json(&c));
    assert!(Schema::object(parse(&a).clone()) == Schema::Json(&b));
}

#[test]
fn normalizes_older_forms_as_json_objects_are_edited() {
    let cases = [
        (json!({"exclusiveMinimum": true, "x": 0, "minimum": 3}), r#"{"exclusiveMinimum":3,"x":0}"#),
        (json!({"exclusiveMaximum": false, "maximum": 3, "x": 0}), r#"{"x":0,"maximum":3}"#),
        (json!({"exclusiveMaximum": true, "x": 0}), r#"{"x":0}"#),
        (
            json!({"items": [true], "x": 0, "additionalItems": false, "y": 1}),
            r#"{"y":1,"x":0,"prefixItems":[true],"items":false}"#,
        ),
        (json!({"additionalItems": false, "x": 0}), r#"{"x":0}"#),
        (
            json!({"dependencies": {"a": ["b"], "c": {"type": "string"}}, "x": 0}),
            r#"{"x":0,"dependentRequired":{"a":["b"]},"dependentSchemas":{"c":{"type":"string"}}}"#,
        ),
        (json!({"dependencies": 5, "x": 0}), r#"{"x":0}"#),
        (json!({"nullable": true, "type": "string", "x": 0}), r#"{"x":0,"type":["string","null"]}"#),
        (json!({"type": ["null"], "nullable": true}), r#"{"type":["null"]}"#),
        (json!({"type": 5, "nullable": false}), r#"{"type":5,"nullable":false}"#),
    ];
    for (v, want) in cases {
        let mut k = parse(&v).clone();
        assert!(k.needs_normalize(), "{v}");
        k.normalize();
        assert_eq!(text(&k), want, "{v}");
    }
    assert!(!parse(&json!({"items": {}, "exclusiveMinimum": 1})).needs_normalize());
}

#[test]
fn a_document_parses_each_object_once() {
    let v = json!({"properties": {"a": {"type": "integer"}}, "not": 3});
    let mut doc = Document::new(&v);
    let View::Object(root) = doc.view_json(&v) else { panic!("an object") };
    let a = root.properties.as_ref().and_then(Field::ok).and_then(|p| p.get("a")).unwrap().clone();
    let (View::Object(x), View::Object(y)) = (doc.view(&a), doc.view(&a)) else { panic!("objects") };
    assert!(Rc::ptr_eq(&x, &y));
    assert!(matches!(doc.view(root.not.as_ref().unwrap()), View::NotASchema));
}
