//! The module layering of docs/ARCHITECTURE.md, enforced: each layer may only name the crate modules
//! below it, and the two external crates with a single home stay there.

use std::path::{Path, PathBuf};

/// (module, crate modules it may name)
const ALLOWED: &[(&str, &[&str])] = &[
    ("util", &["util"]),
    ("grammar", &["grammar", "util"]),
    ("tokenizer", &["tokenizer", "util"]),
    ("frontend", &["frontend", "grammar", "util"]),
    ("fsm", &["fsm", "grammar", "util"]),
    ("earley", &["earley", "fsm", "grammar", "util"]),
    // The PDA runs the same automata as the Earley parser, beside it: neither names the other.
    ("pda", &["pda", "fsm", "grammar", "util"]),
    ("cache", &["cache", "earley", "fsm", "grammar", "tokenizer", "util"]),
    // `compiled` carries the JSON Schema coverage report, a plain data type of the front-end, and
    // checks that a loaded grammar marked for the PDA is servable.
    ("compiled", &["compiled", "cache", "frontend", "fsm", "pda", "grammar", "tokenizer", "util"]),
    ("matcher", &["matcher", "compiled", "cache", "earley", "pda", "fsm", "tokenizer", "util"]),
    (
        "compiler",
        &["compiler", "compiled", "cache", "earley", "pda", "fsm", "frontend", "grammar", "tokenizer", "util", "error"],
    ),
];

const MODULES: &[&str] = &[
    "util",
    "grammar",
    "tokenizer",
    "frontend",
    "fsm",
    "earley",
    "pda",
    "cache",
    "compiled",
    "matcher",
    "compiler",
    "error",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments (doc links may name any module).
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

#[test]
fn layers_only_import_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    for (module, allowed) in ALLOWED {
        let mut files = Vec::new();
        let dir = src.join(module);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let file = src.join(format!("{module}.rs"));
        if file.is_file() {
            files.push(file);
        }
        assert!(!files.is_empty(), "no sources for module {module}");
        for f in files {
            for (n, line) in code_lines(&f) {
                for other in MODULES {
                    let named =
                        line.contains(&format!("crate::{other}::")) || line.contains(&format!("crate::{other};"));
                    if named && !allowed.contains(other) {
                        violations.push(format!("{}:{n}: `{module}` names `crate::{other}`", f.display()));
                    }
                }
            }
        }
    }
    assert!(violations.is_empty(), "layering violations:\n{}", violations.join("\n"));
}

#[test]
fn single_homes_of_external_crates() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        for (n, line) in code_lines(&f) {
            if line.contains("tokenizers::") && rel != "tokenizer/hf.rs" {
                panic!("{rel}:{n} names the `tokenizers` crate; only tokenizer/hf.rs may");
            }
            if line.contains("aho_corasick") && rel != "fsm/tag_dispatch.rs" {
                panic!("{rel}:{n} names `aho_corasick`; only fsm/tag_dispatch.rs may");
            }
        }
    }
}

/// Serving engines share compiled grammars and compilers across threads and move matchers.
#[test]
fn thread_safety_contract() {
    fn send_sync_unwind<T: Send + Sync + std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
    fn send<T: Send>() {}
    send_sync_unwind::<maskforge::CompiledGrammar>();
    send_sync_unwind::<maskforge::GrammarCompiler>();
    send_sync_unwind::<maskforge::Vocabulary>();
    send_sync_unwind::<maskforge::Grammar>();
    send::<maskforge::GrammarMatcher>();
}

/// The workspace's tools sit beside the library: its normal dependencies name no member crate and
/// none of the crates only the tools need (CLI parsing, an allocator, an RNG, compression outside
/// the default-off `gzip` feature), and its sources never name a member crate.
#[test]
fn the_library_depends_on_no_tool() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let dependencies = manifest_section(&manifest, "[dependencies]");
    for banned in ["maskforge-cli", "maskforge-bench", "clap", "mimalloc", "rand", "criterion"] {
        let named = dependencies.lines().any(|l| l.trim_start().starts_with(&format!("{banned} ")));
        assert!(!named, "the library's [dependencies] name `{banned}`:\n{dependencies}");
    }
    for line in dependencies.lines().filter(|l| l.starts_with("flate2")) {
        assert!(line.contains("optional = true"), "flate2 must stay behind the `gzip` feature: {line}");
    }
    let members = ["crates/maskforge-cli", "crates/maskforge-bench"];
    assert!(members.iter().all(|m| manifest.contains(&format!("\"{m}\""))), "the workspace lists its members");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for f in files {
        for (n, line) in code_lines(&f) {
            assert!(
                !line.contains("maskforge_cli") && !line.contains("maskforge_bench"),
                "{}:{n} names a tool crate",
                f.display()
            );
        }
    }
}

/// The text of a TOML section: from its header to the next header.
fn manifest_section<'a>(manifest: &'a str, header: &str) -> &'a str {
    let start = manifest.find(header).map(|i| i + header.len()).expect("section present");
    let rest = &manifest[start..];
    &rest[..rest.find("\n[").unwrap_or(rest.len())]
}

/// The tools depend on the library, never the other way round: each member names `maskforge`.
#[test]
fn the_tools_depend_on_the_library() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for member in ["crates/maskforge-cli", "crates/maskforge-bench"] {
        let manifest = std::fs::read_to_string(root.join(member).join("Cargo.toml")).unwrap();
        let dependencies = manifest_section(&manifest, "[dependencies]");
        assert!(dependencies.contains("maskforge = { path = \"../..\""), "{member} depends on the library");
    }
}
