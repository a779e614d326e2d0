//! `GrammarMatcher::prefetch`: entries built ahead on another thread change no mask, and they
//! are the entries the next masks need.

use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler, GrammarMatcher, JsonSchemaOptions, TokenBitmask};

use crate::support::fixtures::{encode, maskbench_files, vocab};

/// A compiler of its own (no pool: nothing is shared with another compile).
fn compiler() -> GrammarCompiler {
    GrammarCompiler::new(vocab("llama3").clone(), CompilerConfig::default().pool_bytes(0))
}

fn mask(matcher: &mut GrammarMatcher) -> TokenBitmask {
    let mut mask = TokenBitmask::new(matcher.grammar().vocabulary().vocab_size());
    matcher.fill_next_token_bitmask(mask.as_words_mut());
    mask
}

/// The first valid instance of some MaskBench files, with its schema.
fn schema_walks(n: usize) -> Vec<(String, serde_json::Value, Vec<u32>)> {
    let files = maskbench_files();
    let stride = (files.len() / n).max(1);
    files
        .iter()
        .step_by(stride)
        .take(n)
        .filter_map(|(name, file)| {
            let test = file["tests"].as_array()?.iter().find(|t| t["valid"] == true)?;
            let text = serde_json::to_string(&test["data"]).ok()?;
            Some((name.clone(), file["schema"].clone(), encode("llama3", &text)))
        })
        .collect()
}

#[test]
fn masks_with_entries_built_ahead_on_another_thread_are_the_same() {
    let options = JsonSchemaOptions::spec_compliant();
    for (name, schema, ids) in schema_walks(12) {
        let (Ok(ahead), Ok(plain)) =
            (compiler().compile_json_schema(&schema, &options), compiler().compile_json_schema(&schema, &options))
        else {
            continue;
        };
        let (mut a, mut b) = (GrammarMatcher::new(&ahead), GrammarMatcher::new(&plain));
        for (i, &id) in ids.iter().enumerate() {
            // The prefetch races with the fill, as in a server whose GPU step was short.
            let prefetch = a.prefetch(8);
            let mask_a = std::thread::scope(|s| {
                s.spawn(|| prefetch.run());
                mask(&mut a)
            });
            assert!(mask_a == mask(&mut b), "{name}: masks differ at token {i}");
            assert!(a.accept_token(id) && b.accept_token(id), "{name}: token {i} rejected");
        }
    }
}

/// How many of the masks along `ids` built an entry, with or without a prefetch of `depth`
/// bytes after each token.
fn fills_that_built(grammar: &CompiledGrammar, ids: &[u32], depth: Option<usize>) -> usize {
    let mut matcher = GrammarMatcher::new(grammar);
    let mut built = 0;
    for &id in ids {
        if let Some(depth) = depth {
            matcher.prefetch(depth).run();
        }
        let before = grammar.mask_cache_stats().entries;
        mask(&mut matcher);
        built += usize::from(grammar.mask_cache_stats().entries > before);
        assert!(matcher.accept_token(id));
    }
    built
}

#[test]
fn prefetched_entries_are_the_ones_the_next_masks_need() {
    let text = r#"{"name": "maskforge", "tags": ["fast", "exact"], "stars": 1024, "ok": true, "x": {"y": null}}"#;
    let ids = encode("llama3", text);
    let cold = fills_that_built(&compiler().compile_builtin_json_grammar().unwrap(), &ids, None);
    let warm = fills_that_built(&compiler().compile_builtin_json_grammar().unwrap(), &ids, Some(8));
    assert!(cold >= 5, "the walk builds entries on demand ({cold} fills did)");
    assert!(warm * 4 <= cold, "with a prefetch {warm} fills still built an entry, against {cold} without");
}
