//! MaskBench walks for the step benchmarks: schemas with the tokens of a valid instance.

use maskforge::tokenizer::fixtures_dir;
use maskforge::{CompiledGrammar, GrammarCompiler, JsonSchemaOptions, TextEncoder};

/// A compiled schema and the tokens of one of its valid instances.
pub struct Walk {
    pub grammar: CompiledGrammar,
    pub tokens: Vec<u32>,
}

/// Up to `n` MaskBench schemas (in file order) with a valid instance of at least `steps` tokens.
pub fn walks(compiler: &GrammarCompiler, encoder: &TextEncoder, n: usize, steps: usize) -> Vec<Walk> {
    let dir = fixtures_dir().join("corpus/maskbench-dev");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-corpus)", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let options = JsonSchemaOptions::spec_compliant();
    let mut out = Vec::new();
    for path in files {
        let Ok(file) = serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&path).unwrap()) else {
            continue;
        };
        let instance = file["tests"].as_array().and_then(|t| t.iter().find(|t| t["valid"] == true));
        let Some(instance) = instance else { continue };
        let Ok(tokens) = encoder.encode_for_matching(&serde_json::to_string(&instance["data"]).unwrap()) else {
            continue;
        };
        if tokens.len() < steps {
            continue;
        }
        let Ok(grammar) = compiler.compile_json_schema(&file["schema"], &options) else { continue };
        out.push(Walk { grammar, tokens });
        if out.len() == n {
            break;
        }
    }
    assert_eq!(out.len(), n, "not enough MaskBench schemas with an instance of {steps} tokens");
    out
}
