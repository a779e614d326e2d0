//! Deeply nested JSON Schemas: valid JSON past serde_json's 128-level recursion limit compiles,
//! and nesting past the configured limits is a typed error that names the limit.

use maskforge::{
    CompilerConfig, Error, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, SchemaErrorKind, Vocabulary,
    VocabularyBuilder,
};

/// One token per printable ASCII character, and a stop token.
fn ascii_vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = (0x20u8..0x7F).map(|b| vec![b]).collect();
    tokens.push(b"</s>".to_vec());
    let stop = (tokens.len() - 1) as u32;
    VocabularyBuilder::new().tokens(tokens).special(stop).stop_tokens([stop]).build().unwrap()
}

/// `{"type":"object","properties":{"a": ... {"type":"integer"} ...},"required":["a"]}`, `levels` deep.
fn nested_properties(levels: usize) -> String {
    let mut schema = r#"{"type":"integer"}"#.to_string();
    for _ in 0..levels {
        schema = format!(r#"{{"type":"object","properties":{{"a":{schema}}},"required":["a"]}}"#);
    }
    schema
}

fn nested_instance(levels: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels))
}

#[test]
fn a_schema_nested_100_properties_deep_compiles_and_matches() {
    // 100 levels of properties are 200 levels of JSON: serde_json alone refuses it.
    let schema = nested_properties(100);
    assert!(serde_json::from_str::<serde_json::Value>(&schema).is_err());
    let compiler = GrammarCompiler::new(ascii_vocab(), CompilerConfig::default());
    let grammar = compiler.compile_json_schema_str(&schema, &JsonSchemaOptions::default()).unwrap();
    let mut matcher = GrammarMatcher::new(&grammar);
    assert!(matcher.accept_string(nested_instance(100)));
    assert!(matcher.can_terminate());
}

#[test]
fn nesting_past_the_limits_is_a_typed_error_naming_them() {
    let compiler = GrammarCompiler::new(ascii_vocab(), CompilerConfig::default());
    let options = JsonSchemaOptions::default();
    // Sub-schema nesting past max_depth (128): the lowering's check.
    let err = compiler.compile_json_schema_str(&nested_properties(200), &options).unwrap_err();
    let Error::Schema(e) = &err else { panic!("{err}") };
    assert!(matches!(e.kind(), SchemaErrorKind::TooLarge(m) if m.contains("nesting deeper than 128")), "{err}");
    // JSON nesting past 4 × max_depth, found before parsing: a million `[` end at once.
    let err = compiler.compile_json_schema_str(&"[".repeat(1_000_000), &options).unwrap_err();
    assert_eq!(
        err.to_string(),
        "#: schema too large: the schema text nests arrays and objects more than 512 levels deep \
         (4 per level of JsonSchemaLimits::max_depth = 128)"
    );
    // The limit is the caller's: a lower max_depth lowers the text bound too.
    let mut small = JsonSchemaOptions::default();
    small.limits.max_depth = 8;
    let err = compiler.compile_json_schema_str(&nested_properties(20), &small).unwrap_err();
    assert!(err.to_string().contains("more than 32 levels deep"), "{err}");
}
