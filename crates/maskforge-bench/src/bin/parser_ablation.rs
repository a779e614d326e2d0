//! Compares two `maskforge maskbench --json` runs of the same files, one with `--parser earley`
//! and one with `--parser pda` (the XGrammar-2 Figure 10 ablation, issue 19): per category (the
//! file-name prefix before `---`, or before the first `_` for names without one), over the files
//! the PDA serves, the TTFM and TBM percentiles of both; and, for every file both paths serve,
//! that the outcomes are equal (a timeout under either path is listed apart, not compared).
//!
//! `cargo run --release -p maskforge-bench --bin parser_ablation -- EARLEY.jsonl PDA.jsonl`
//!
//! Exits with status 1 when an outcome differs. A file the PDA does not serve is a compile
//! error whose message names the PDA (`the PDA cannot serve ...`).

use std::collections::BTreeMap;
use std::process::ExitCode;

use maskforge_bench::maskbench::{FileResult, Outcome};
use maskforge_bench::stats::Summary;

fn read(path: &str) -> Result<BTreeMap<String, FileResult>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let r: FileResult = serde_json::from_str(line).map_err(|e| format!("{path}:{}: {e}", i + 1))?;
        out.insert(r.file.clone(), r);
    }
    Ok(out)
}

/// The category of a MaskBench file name.
fn category(file: &str) -> &str {
    match file.find("---") {
        Some(i) => &file[..i],
        None => file.split('_').next().unwrap_or(file),
    }
}

/// Whether the PDA refused the file's grammar (as opposed to a compile error of both paths).
fn pda_refused(r: &FileResult) -> bool {
    r.outcome == Outcome::CompileError && r.error.as_deref().is_some_and(|e| e.contains("the PDA cannot serve"))
}

/// The samples of one path over one category's served files.
#[derive(Default)]
struct Samples {
    files: usize,
    ttfm: Vec<f64>,
    tbm: Vec<f64>,
}

impl Samples {
    fn add(&mut self, r: &FileResult) {
        self.files += 1;
        self.ttfm.extend(r.ttfm_us);
        self.tbm.extend(&r.tbm_us);
    }
}

fn row(name: &str, files: usize, served: usize, earley: &Samples, pda: &Samples) {
    let (te, tp) = (Summary::of(&earley.ttfm), Summary::of(&pda.ttfm));
    let (be, bp) = (Summary::of(&earley.tbm), Summary::of(&pda.tbm));
    let ratio = if be.avg > 0.0 { bp.avg / be.avg } else { f64::NAN };
    println!(
        "| {name} | {served}/{files} | {:.2} / {:.2} | {:.2} / {:.2} | {:.1} / {:.1} | {:.1} / {:.1} | {:.0} / {:.0} | {:.1} / {:.1} | {ratio:.2} |",
        te.p50 / 1e3,
        tp.p50 / 1e3,
        te.p90 / 1e3,
        tp.p90 / 1e3,
        be.p50,
        bp.p50,
        be.p90,
        bp.p90,
        be.p99,
        bp.p99,
        be.avg,
        bp.avg,
    );
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [earley_path, pda_path] = args.as_slice() else {
        eprintln!("usage: parser_ablation EARLEY.jsonl PDA.jsonl");
        return ExitCode::from(2);
    };
    let (earley, pda) = match (read(earley_path), read(pda_path)) {
        (Ok(e), Ok(p)) => (e, p),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // Per category: (files, served, Earley samples, PDA samples).
    let mut table: BTreeMap<&str, (usize, usize, Samples, Samples)> = BTreeMap::new();
    let mut all = (0, 0, Samples::default(), Samples::default());
    let mut differing = Vec::new();
    let mut timeouts = Vec::new();
    for (file, e) in &earley {
        let Some(p) = pda.get(file) else { continue };
        let slot = table.entry(category(file)).or_default();
        slot.0 += 1;
        all.0 += 1;
        if pda_refused(p) {
            continue;
        }
        if e.outcome == Outcome::Timeout || p.outcome == Outcome::Timeout {
            // The clock is not the parser's verdict (AOT compiles of seconds on a loaded
            // machine): counted apart, compared nowhere.
            timeouts.push(file.as_str());
        } else if e.outcome != p.outcome {
            differing.push(format!("{file}: earley {} / pda {}", e.outcome.name(), p.outcome.name()));
        }
        slot.1 += 1;
        all.1 += 1;
        for (s, r) in [(&mut slot.2, e), (&mut slot.3, p), (&mut all.2, e), (&mut all.3, p)] {
            s.add(r);
        }
    }
    println!("Earley / PDA over the files the PDA serves (TTFM in ms, TBM in µs)");
    println!();
    println!("| category | served | TTFM p50 | TTFM p90 | TBM p50 | TBM p90 | TBM p99 | TBM mean | PDA/Earley mean |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, (files, served, e, p)) in &table {
        row(name, *files, *served, e, p);
    }
    row("all", all.0, all.1, &all.2, &all.3);
    println!();
    if !timeouts.is_empty() {
        println!("{} files timed out under one path or both (not compared): {}", timeouts.len(), timeouts.join(", "));
    }
    if differing.is_empty() {
        println!("outcomes equal on the other {} files both paths serve", all.1 - timeouts.len());
        ExitCode::SUCCESS
    } else {
        println!("{} outcomes differ:", differing.len());
        for d in &differing {
            println!("  {d}");
        }
        ExitCode::from(1)
    }
}
