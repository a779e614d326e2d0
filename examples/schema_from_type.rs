//! A JSON Schema derived from a Rust type with `schemars`, compiled, and used to check
//! documents; the schema report lists what the grammar cannot enforce exactly.
//!
//! `cargo run --release --example schema_from_type`
use std::collections::BTreeSet;

use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions};
use maskforge::{PropertyOrder, VocabError, Vocabulary, VocabularyBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The structure the model must produce.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Ticket {
    title: String,
    /// `range` becomes `minimum` / `maximum`.
    #[schemars(range(min = 1, max = 5))]
    severity: u8,
    /// A set gives `"uniqueItems": true`, which a grammar cannot check: a relaxation.
    labels: BTreeSet<Label>,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Label {
    Bug,
    Feature,
    Docs,
}

/// The stop token of the vocabulary below.
const EOS: u32 = 256;

/// One token per byte and a stop token: enough to check text (no real tokenizer needed).
fn byte_vocabulary() -> Result<Vocabulary, VocabError> {
    let bytes = (0..=255u8).map(|b| [b]);
    VocabularyBuilder::new().tokens(bytes).tokens(["<eos>"]).special(EOS).stop_tokens([EOS]).build()
}

/// Whether `doc` is accepted as a whole: every byte (token), then the stop token.
fn accepts(grammar: &CompiledGrammar, doc: &str) -> bool {
    let mut matcher = GrammarMatcher::new(grammar);
    doc.bytes().all(|b| matcher.accept_token(b.into())) && matcher.accept_token(EOS)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let compiler = GrammarCompiler::new(byte_vocabulary()?, CompilerConfig::default());
    // What the type says: the schema `compile_json_schema_for::<Ticket>` compiles below.
    let schema = serde_json::to_value(schemars::schema_for!(Ticket))?;
    println!("schema: {schema}");
    // schemars 0.8 lists properties alphabetically, serde writes them in field order: accept
    // any order (exact up to 3 properties; beyond, the report says a key may repeat).
    let options = JsonSchemaOptions { property_order: PropertyOrder::Any, ..JsonSchemaOptions::default() };
    let grammar = compiler.compile_json_schema_for::<Ticket>(&options)?;

    let report = grammar.json_schema_report().expect("compiled from a schema");
    for r in &report.relaxations {
        println!("relaxed: `{}` at {}: {}", r.keyword, r.pointer, r.detail);
    }
    assert_eq!(report.relaxed_keywords(), ["uniqueItems"]);

    let ticket = Ticket { title: "Login fails".into(), severity: 4, labels: [Label::Bug, Label::Docs].into() };
    let doc = serde_json::to_string_pretty(&ticket)?;
    assert!(accepts(&grammar, &doc));
    assert_eq!(serde_json::from_str::<Ticket>(&doc)?, ticket); // what passes deserializes
    println!("accepted:\n{doc}");

    for bad in [
        doc.replace("docs", "chore"),         // not a variant of the enum
        doc.replace('4', "7"),                // severity above the range
        doc.replace("\"title\"", "\"name\""), // unknown field, `title` missing
    ] {
        assert!(!accepts(&grammar, &bad), "{bad}");
    }
    // Duplicate labels pass: the relaxation above says so.
    assert!(accepts(&grammar, &doc.replace("\"docs\"", "\"bug\"")));
    println!("rejected: a wrong enum variant, a severity out of range, a wrong field name");
    Ok(())
}
