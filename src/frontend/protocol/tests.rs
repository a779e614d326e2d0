use super::*;
use crate::frontend::structural_tag::{structural_tag_to_grammar, NoTokens};
use serde_json::json;

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"]}}}),
        json!({"type": "function", "function": {"name": "get_forecast", "parameters": {"type": "object",
            "properties": {"location": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
            "required": ["location", "days"]}}}),
    ]
}

#[test]
fn every_protocol_lowers_for_every_choice_and_option() {
    let choices = [
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::Function("get_forecast".into()),
        ToolChoice::AllowedTools { names: vec!["get_weather".into()], required: true },
    ];
    for name in protocol_names() {
        for choice in &choices {
            for reasoning in [false, true] {
                for parallel_tool_calls in [false, true] {
                    let options = ProtocolOptions { reasoning, parallel_tool_calls };
                    let tag = protocol_structural_tag(name, &tools(), choice, &options)
                        .unwrap_or_else(|e| panic!("{name} {choice:?} {options:?}: {e}"));
                    structural_tag_to_grammar(&tag, &NoTokens)
                        .unwrap_or_else(|e| panic!("{name} {choice:?} {options:?}: {e}\n{tag:#}"));
                }
            }
        }
    }
}

#[test]
fn names_and_aliases_are_unique() {
    let mut seen = std::collections::HashSet::new();
    for (stem, text) in PROTOCOL_FILES {
        let p = Protocol::parse(stem, text).unwrap();
        assert!(!p.description.is_empty(), "{stem}: no description");
        for n in std::iter::once(&p.name).chain(&p.aliases) {
            assert!(seen.insert(n.clone()), "{n} is used twice");
        }
    }
}

#[test]
fn tool_choice_none_forbids_the_trigger() {
    let tag = protocol_structural_tag("llama", &tools(), &ToolChoice::None, &ProtocolOptions::default()).unwrap();
    let (g, _) = structural_tag_to_grammar(&tag, &NoTokens).unwrap();
    assert!(!g.to_string().contains("get_weather"), "{g}");
}

#[test]
fn bad_requests_get_typed_errors() {
    let o = ProtocolOptions::default();
    let e = protocol_structural_tag("nope", &tools(), &ToolChoice::Auto, &o).unwrap_err();
    assert!(
        matches!(e.kind(), ProtocolErrorKind::UnknownProtocol { known, .. } if known.contains("harmony") && known.contains("kimi"))
    );
    let e = protocol_structural_tag("qwen", &tools(), &ToolChoice::Function("get_stock".into()), &o).unwrap_err();
    assert!(
        matches!(e.kind(), ProtocolErrorKind::UnknownTool { name, offered } if name == "get_stock" && offered.contains("get_weather"))
    );
    let e = protocol_structural_tag("qwen", &[], &ToolChoice::Required, &o).unwrap_err();
    assert_eq!(e.kind(), &ProtocolErrorKind::NoTools);
    let mut twice = tools();
    twice.push(twice[0].clone());
    let e = protocol_structural_tag("qwen", &twice, &ToolChoice::Auto, &o).unwrap_err();
    assert_eq!(e.kind(), &ProtocolErrorKind::DuplicateTool("get_weather".into()));
    let bad_name = json!({"type": "function", "function": {"name": "a\"b"}});
    let e = protocol_structural_tag("qwen", &[bad_name], &ToolChoice::Auto, &o).unwrap_err();
    assert!(e.to_string().contains("/tools/0/function/name"), "{e}");
    let not_fn = json!({"type": "retrieval"});
    let e = protocol_structural_tag("qwen", &[not_fn], &ToolChoice::Auto, &o).unwrap_err();
    assert!(e.to_string().contains("/tools/0/type"), "{e}");
    assert!(ToolChoice::from_json(&json!({"type": "allowed_tools", "allowed_tools": {"mode": "maybe", "tools": []}}))
        .is_err());
    assert!(ToolChoice::from_json(&json!(3)).is_err());
}

#[test]
fn allowed_tools_parse() {
    let c = ToolChoice::from_json(&json!({"type": "allowed_tools", "allowed_tools": {"mode": "required",
        "tools": [{"type": "function", "function": {"name": "get_weather"}}]}}))
    .unwrap();
    assert_eq!(c, ToolChoice::AllowedTools { names: vec!["get_weather".into()], required: true });
}

#[test]
fn example_responses_fill_name_and_arguments() {
    let p = Protocol::by_name("llama").unwrap();
    let text = p.example_response("get_time", r#"{"timezone":"UTC"}"#).unwrap();
    assert!(text.ends_with(r#"{"name": "get_time", "parameters": {"timezone":"UTC"}}"#), "{text}");
    assert!(Protocol::by_name("kimi").unwrap().example_response("f", "{}").is_none());
}

#[test]
fn template_errors_name_the_place() {
    let p = Protocol {
        name: "t".into(),
        aliases: vec![],
        description: String::new(),
        template: json!({"type": "const_string", "value": {"$if": "sunny", "then": "x"}}),
        example_response: None,
    };
    let e = p.structural_tag(&tools(), &ToolChoice::Auto, &ProtocolOptions::default()).unwrap_err();
    assert!(e.to_string().contains("t.json/template/value") && e.to_string().contains("sunny"), "{e}");
    let p = Protocol { template: json!({"type": "const_string", "value": "${name}"}), ..p };
    assert!(p.structural_tag(&tools(), &ToolChoice::Auto, &ProtocolOptions::default()).is_err());
}

/// Every protocol lowers to a grammar whose EBNF prints and parses back to the same grammar
/// (`cargo test protocol_grammars_print -- --nocapture` shows them).
#[test]
fn protocol_grammars_print_and_parse_back() {
    for name in protocol_names() {
        let o = ProtocolOptions { reasoning: true, parallel_tool_calls: true };
        let tag = protocol_structural_tag(name, &tools(), &ToolChoice::Required, &o).unwrap();
        let (g, _) = structural_tag_to_grammar(&tag, &NoTokens).unwrap();
        let text = g.to_string();
        println!("== {name}\n{text}");
        let back = crate::frontend::ebnf::parse_ebnf(&text, &g.rule(g.root()).name)
            .unwrap_or_else(|e| panic!("{name}: printed grammar does not parse: {e}\n{text}"));
        assert_eq!(back.to_string(), text, "{name}");
    }
}
