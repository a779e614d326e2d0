//! Prints the grammar every JSON Schema file of a directory lowers to, under the
//! specification-compliant options and under the defaults, to check that a change to the
//! front-end or the grammar passes leaves every grammar as it was (diff two runs).
//!
//! `cargo run --release -p maskforge-bench --bin grammar_dump -- DIR > grammars.txt`
use maskforge::{json_schema_to_grammar, JsonSchemaOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: grammar_dump DIR")?;
    let mut files: Vec<_> = std::fs::read_dir(&dir)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    let configs = [("spec", JsonSchemaOptions::spec_compliant()), ("default", JsonSchemaOptions::default())];
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
        let schema = value.get("schema").cloned().unwrap_or(value);
        for (label, options) in &configs {
            println!("== {} ({label})", path.display());
            match json_schema_to_grammar(&schema, options) {
                Ok((grammar, report)) => {
                    println!("{grammar}");
                    println!("report: {:?}", report.relaxed_keywords());
                }
                Err(e) => println!("error: {e}"),
            }
        }
    }
    Ok(())
}
