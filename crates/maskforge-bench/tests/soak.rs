//! A few seconds of the soak with two threads (`maskforge_bench::soak`): requests are served,
//! masks are checked against the oracle, rollbacks and forks happen, and not one mismatch (a
//! cached mask unlike the oracle's, an allowed token refused, a replayed or forked mask that
//! changed) is found. The 30-minute run is `cargo run --release -p maskforge-bench --bin soak`
//! (docs/reliability.md, "Soak").

use std::time::Duration;

use maskforge::tokenizer::{fixtures_dir, load_tokenizer};
use maskforge::{CompilerConfig, GrammarCompiler};
use maskforge_bench::soak::{self, Churn, SoakConfig, Workload};

#[test]
fn two_threads_for_a_few_seconds_find_no_mismatch() {
    let (vocab, encoder) = load_tokenizer("llama3").expect("the llama3 fixture (scripts/fetch-tokenizers)");
    let corpus = fixtures_dir().join("corpus");
    let workload = Workload::load(&corpus.join("maskbench-dev"), &corpus.join("tools")).expect("the corpus fixtures");
    // A small pool, so that a few seconds already evict; a deadline, as a server sets one.
    let compiler = GrammarCompiler::new(
        vocab,
        CompilerConfig::default().pool_bytes(4 << 20).grammar_cache_len(8).compile_timeout(Duration::from_secs(20)),
    );
    let config = SoakConfig {
        threads: 2,
        duration: Duration::from_secs(6),
        check_every: 4,
        report_every: Duration::from_secs(2),
        churn: Churn { rollback: 0.2, fork: 0.1 },
        max_tokens: 300,
        ..SoakConfig::default()
    };
    let mut reports = 0;
    let summary = soak::run(&compiler, &encoder, &workload, &config, |_| reports += 1);
    println!("{}", summary.text());
    assert_eq!(summary.mismatches, 0, "mismatches: {:#?}", summary.mismatch_list);
    assert!(summary.requests >= 2 && summary.completed >= 1, "{}", summary.text());
    assert!(summary.oracle_checks >= 10, "{}", summary.text());
    assert!(summary.rollbacks + summary.forks >= 1, "{}", summary.text());
    assert!(!summary.errors.contains_key("worker_panic"), "{}", summary.text());
    assert_eq!((reports, summary.snapshots.len()), (2, 3), "a report every 2 s, and the final snapshot");
    assert!(summary.rss.peak_mib > 0.0, "RSS read from /proc/self/status");
}
