//! The `maskforge` command: exit codes, outputs and error messages.

use std::process::Command;

fn maskforge(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_maskforge")).args(args).output().expect("run maskforge");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn grammar_file(name: &str, text: &str) -> String {
    let path = std::env::temp_dir().join(format!("maskforge-cli-{}-{name}.ebnf", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn check_exit_codes() {
    let ok = maskforge(&["check", "--tokenizer", "llama3", "--builtin-json", "--text", r#"{"a": [1, "é"]}"#]);
    assert_eq!(ok.0, 0, "{ok:?}");
    assert!(ok.1.contains("accepted"));
    let rejected = maskforge(&["check", "--tokenizer", "llama3", "--builtin-json", "--text", r#"{"a": [1,, 2]}"#]);
    assert_eq!(rejected.0, 1, "{rejected:?}");
    assert!(rejected.1.contains("rejected at token"));
    let incomplete = maskforge(&["check", "--tokenizer", "llama3", "--builtin-json", "--text", r#"{"a": "#]);
    assert_eq!(incomplete.0, 1);
    assert!(incomplete.1.contains("incomplete"));
}

#[test]
fn bad_input_exits_2_with_a_message() {
    let bad = grammar_file("bad", "root ::= \"a\" (\n");
    let (code, _, err) = maskforge(&["check", "--grammar", &bad, "--text", "a"]);
    assert_eq!(code, 2);
    assert!(err.contains(&bad) && err.contains("1:14: expected a matching `)`"), "{err}");
    let (code, _, err) = maskforge(&["check", "--grammar", "/nonexistent/g.ebnf", "--text", "a"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
    let (code, _, err) = maskforge(&["mask", "--tokenizer", "/nonexistent/tokenizer.json", "--builtin-json"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/tokenizer.json"), "{err}");
}

#[test]
fn mask_and_generate() {
    let g = grammar_file("digits", "root ::= [0-9]+ \";\"\n");
    let (code, out, _) = maskforge(&["mask", "--tokenizer", "llama2", "--grammar", &g, "--prefix", "12"]);
    assert_eq!(code, 0);
    let mut lines = out.lines();
    let count: usize = lines.next().unwrap().parse().unwrap();
    let ids: Vec<u32> = lines.next().unwrap().split_whitespace().map(|x| x.parse().unwrap()).collect();
    assert_eq!(count, ids.len());
    assert!(count > 10);
    let (code, out, _) = maskforge(&["generate", "--grammar", &g, "--seed", "7", "--max-tokens", "200"]);
    assert_eq!(code, 0, "{out}");
    let text = out.lines().next().unwrap();
    assert!(text.chars().all(|c| c.is_ascii_digit() || c == ';'), "{text:?}");
    assert!(out.contains("valid: yes") && out.contains("mask per step: median"), "{out}");
}

/// The README's main command prints a complete JSON document and says so.
#[test]
fn the_main_command_prints_a_complete_document() {
    for seed in ["1", "2", "3"] {
        let (code, out, err) = maskforge(&["generate", "--builtin-json", "--seed", seed, "--max-tokens", "40"]);
        assert_eq!(code, 0, "{out}{err}");
        let mut lines = out.lines();
        let document: String = lines.by_ref().take_while(|l| !l.starts_with("valid: ")).collect::<Vec<_>>().join("\n");
        assert!(serde_json::from_str::<serde_json::Value>(&document).is_ok(), "not JSON: {document:?}");
        assert!(out.contains("\nvalid: yes"), "{out}");
        assert!(out.contains("first visit to a parser state builds its token-mask cache entry"), "{out}");
    }
}

#[test]
fn mask_shows_token_texts_and_where_a_prefix_is_rejected() {
    let g = grammar_file("ab", "root ::= \"ab\" [0-9]+\n");
    let (code, out, _) =
        maskforge(&["mask", "--tokenizer", "llama3", "--grammar", &g, "--prefix", "ab", "--with-text"]);
    assert_eq!(code, 0);
    let mut lines = out.lines();
    let count: usize = lines.next().unwrap().parse().unwrap();
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), count);
    assert!(rows.iter().any(|r| r.ends_with("\t\"7\"")), "a digit token with its text: {rows:?}");
    let (code, _, err) = maskforge(&["mask", "--tokenizer", "llama3", "--grammar", &g, "--prefix", "ab1x"]);
    assert_eq!(code, 2);
    assert!(err.contains("rejected at token") && err.contains("\"x\"") && err.contains("at byte 3"), "{err}");
}

/// `maskforge mask ... | head -c 10`: the closed pipe ends the command quietly.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_maskforge"))
        .args(["mask", "--tokenizer", "llama3", "--builtin-json", "--with-text"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.is_empty(), "status {:?}, stderr {err}", out.status);
}

#[test]
fn schema_options_apply_to_schemas_only_and_values_may_start_with_a_hyphen() {
    let (code, _, err) =
        maskforge(&["check", "--tokenizer", "llama3", "--regex", "a+", "--schema-options", "{}", "--text", "aa"]);
    assert_eq!(code, 2);
    assert!(err.contains("--schema-options applies to --schema only"), "{err}");
    let (code, out, err) = maskforge(&["check", "--tokenizer", "llama3", "--builtin-json", "--text", "-12.5"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// Special-token texts in the checked text are the special tokens (a model's output), unless
/// `--special-tokens-as-text`.
#[test]
fn special_token_texts_in_checked_text_are_the_tokens() {
    let g = grammar_file("harmony", "root ::= \"<|channel|>\" \"final\" \"<|message|>\" [a-z]+\n");
    let text = "<|channel|>final<|message|>hi";
    let (code, out, _) = maskforge(&["check", "--tokenizer", "gptoss", "--grammar", &g, "--text", text]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) =
        maskforge(&["check", "--tokenizer", "gptoss", "--grammar", &g, "--special-tokens-as-text", "--text", text]);
    assert_eq!(code, 1, "spelled with ordinary tokens, the special token's text is not the token: {out}");
}

/// A big input is checked in chunks: a flat array of 4 MB across several chunks is accepted, and
/// the first rejected token ends the check with its byte offset.
#[test]
fn big_inputs_are_checked_in_chunks() {
    let dir = std::env::temp_dir();
    let body = vec!["1"; 2_000_000].join(",");
    let ok = dir.join(format!("maskforge-cli-{}-big.json", std::process::id()));
    std::fs::write(&ok, format!("[{body}]")).unwrap();
    let (code, out, err) =
        maskforge(&["check", "--tokenizer", "llama3", "--builtin-json", "--input", &ok.to_string_lossy()]);
    assert_eq!(code, 0, "{out}{err}");
    let bad = dir.join(format!("maskforge-cli-{}-bad.json", std::process::id()));
    std::fs::write(&bad, format!("[{body},,1]")).unwrap();
    let (code, out, _) =
        maskforge(&["check", "--tokenizer", "llama3", "--builtin-json", "--input", &bad.to_string_lossy()]);
    assert_eq!(code, 1);
    assert!(out.contains(&format!("at byte {}", body.len() + 1)), "{out}");
    std::fs::write(&bad, b"[1,\xff]").unwrap();
    let (code, _, err) =
        maskforge(&["check", "--tokenizer", "llama3", "--builtin-json", "--input", &bad.to_string_lossy()]);
    assert_eq!(code, 2);
    assert!(err.contains("is not UTF-8 at byte 3"), "{err}");
}

#[test]
fn structural_tag_and_protocol_sources() {
    let tag = r#"{"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "const_string", "value": "n="}, {"type": "regex", "pattern": "[0-9]+"}]}}"#;
    let path = std::env::temp_dir().join(format!("maskforge-cli-{}-tag.json", std::process::id()));
    std::fs::write(&path, tag).unwrap();
    let p = path.to_string_lossy();
    assert_eq!(maskforge(&["check", "--structural-tag", &p, "--text", "n=42"]).0, 0);
    assert_eq!(maskforge(&["check", "--structural-tag", &p, "--text", "n=x"]).0, 1);
    std::fs::write(&path, r#"{"type": "structural_tag", "format": {"type": "tag", "begin": "a", "end": "b"}}"#)
        .unwrap();
    let (code, _, err) = maskforge(&["check", "--structural-tag", &p, "--text", "a"]);
    assert_eq!(code, 2);
    assert!(err.contains("/format: missing field `content`"), "{err}");

    let tools = r#"[{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
        "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}]"#;
    let tools_path = std::env::temp_dir().join(format!("maskforge-cli-{}-tools.json", std::process::id()));
    std::fs::write(&tools_path, tools).unwrap();
    let t = tools_path.to_string_lossy();
    let call = r#"{"name": "get_time", "parameters": {"tz": "UTC"}}"#;
    let run = |choice: &str, text: &str| {
        maskforge(&[
            "check",
            "--tokenizer",
            "llama3",
            "--protocol",
            "llama",
            "--tools",
            &t,
            "--tool-choice",
            choice,
            "--text",
            text,
        ])
    };
    assert_eq!(run("auto", call).0, 0);
    assert_eq!(run("auto", "Just text.").0, 0);
    assert_eq!(run("required", "Just text.").0, 1);
    assert_eq!(run("get_time", call).0, 0);
    let (code, _, err) = run("get_weather", call);
    assert_eq!(code, 2);
    assert!(err.contains("get_weather") && err.contains("get_time"), "{err}");
    let (code, _, err) = maskforge(&["check", "--protocol", "gpt9", "--tools", &t, "--text", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown protocol `gpt9`") && err.contains("harmony"), "{err}");
}

/// `--protocol-file`: a protocol read at run time behaves as the embedded one it copies, and a
/// malformed file is a one-line error (exit 2) naming the file, before any request.
#[test]
fn protocol_files_are_read_at_run_time() {
    let dir = std::env::temp_dir().join(format!("maskforge-cli-{}-protocols", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let embedded = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../protocols/llama.json")).unwrap();
    let mine = dir.join("my_llama.json");
    std::fs::write(&mine, embedded.replacen("\"name\": \"llama\"", "\"name\": \"my_llama\"", 1)).unwrap();
    let tools = dir.join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
        "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}]"#,
    )
    .unwrap();
    let (mine, tools) = (mine.to_string_lossy().into_owned(), tools.to_string_lossy().into_owned());
    let check = |file: &str, choice: &str, text: &str| {
        maskforge(&[
            "check",
            "--tokenizer",
            "llama3",
            "--protocol-file",
            file,
            "--tools",
            &tools,
            "--tool-choice",
            choice,
            "--text",
            text,
        ])
    };
    let call = r#"{"name": "get_time", "parameters": {"tz": "UTC"}}"#;
    assert_eq!(check(&mine, "auto", call).0, 0);
    assert_eq!(check(&mine, "required", "Just text.").0, 1);

    let broken = dir.join("broken.json");
    let b = broken.to_string_lossy().into_owned();
    std::fs::write(
        &broken,
        r#"{"name": "broken", "template": {"type": "triggered_tags", "tags": [{"$if": "nonsense", "then": 1}]}}"#,
    )
    .unwrap();
    let (code, _, err) = check(&b, "auto", call);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("broken.json") && err.lines().count() == 1, "{err}");
    let (code, _, err) = check(&dir.join("missing.json").to_string_lossy(), "auto", call);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read protocol file") && err.contains("missing.json"), "{err}");
    let (code, _, err) = maskforge(&["check", "--protocol-file", &mine, "--protocol", "llama", "--tools", &tools]);
    assert_eq!(code, 2, "{err}");
}

/// Piped, `maskbench` still reports progress (a line per interval and the last file), and
/// `toolbench` states the units of its columns.
#[test]
fn runners_report_progress_and_units() {
    let corpus = maskforge::tokenizer::fixtures_dir().join("corpus");
    let mut files: Vec<_> = std::fs::read_dir(corpus.join("maskbench-dev"))
        .expect("the MaskBench corpus (scripts/fetch-corpus)")
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut args = vec!["maskbench", "--tokenizer", "llama3", "--limit-s", "0.000001"];
    args.extend(files.iter().take(2).map(String::as_str));
    let (code, out, err) = maskforge(&args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("maskbench: 2/2 files, ") && err.contains(" passing, "), "{err}");
    assert!(out.contains("2 schemas: "), "{out}");
    let tools = corpus.join("tools");
    let (code, out, err) = maskforge(&[
        "toolbench",
        "--tokenizer",
        "llama3",
        "--tools",
        &tools.to_string_lossy(),
        "--tools-per-request",
        "5",
        "--requests",
        "3",
        "--setting",
        "dynamic",
    ]);
    assert!(code == 0 || code == 1, "{err}");
    assert!(out.contains("in microseconds") && out.contains("wall: seconds"), "{out}");
}

#[test]
fn compile_saves_a_grammar_that_compiled_loads() {
    let g = grammar_file("saved", "root ::= [0-9]+ \";\"\n");
    let out = std::env::temp_dir().join(format!("maskforge-cli-{}-saved.mfg", std::process::id()));
    let out = out.to_string_lossy().into_owned();
    let (code, stdout, err) = maskforge(&["compile", "--tokenizer", "llama2", "--grammar", &g, "--out", &out]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.starts_with(&format!("wrote {out} (")), "{stdout}");
    let from_source = maskforge(&["mask", "--tokenizer", "llama2", "--grammar", &g, "--prefix", "12"]);
    let from_saved = maskforge(&["mask", "--tokenizer", "llama2", "--compiled", &out, "--prefix", "12"]);
    assert_eq!(from_saved.0, 0, "{from_saved:?}");
    assert_eq!(from_saved.1, from_source.1);
    let (code, stdout, _) = maskforge(&["check", "--tokenizer", "llama2", "--compiled", &out, "--text", "42;"]);
    assert_eq!(code, 0, "{stdout}");
    let (code, _, _) =
        maskforge(&["generate", "--tokenizer", "llama2", "--compiled", &out, "--seed", "7", "--max-tokens", "200"]);
    assert_eq!(code, 0);
    // Another tokenizer, a damaged file, a file that is not a saved grammar: exit 2 with why.
    let (code, _, err) = maskforge(&["mask", "--tokenizer", "llama3", "--compiled", &out]);
    assert_eq!(code, 2);
    assert!(err.contains("compiled for vocabulary") && err.contains("--tokenizer"), "{err}");
    let mut bytes = std::fs::read(&out).unwrap();
    bytes.truncate(bytes.len() - 1);
    std::fs::write(&out, &bytes).unwrap();
    let (code, _, err) = maskforge(&["mask", "--tokenizer", "llama2", "--compiled", &out]);
    assert_eq!(code, 2);
    assert!(err.contains("saved grammar truncated"), "{err}");
    let (code, _, err) = maskforge(&["mask", "--tokenizer", "llama2", "--compiled", &g]);
    assert_eq!(code, 2);
    assert!(err.contains("not a saved maskforge grammar"), "{err}");
    let (code, _, err) = maskforge(&["mask", "--compiled", &out, "--grammar", &g]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot be used with"), "{err}");
    let _ = std::fs::remove_file(&out);
}

#[test]
fn cache_dir_keeps_grammars_across_runs() {
    let dir = std::env::temp_dir().join(format!("maskforge-cli-{}-cache", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_arg = dir.to_string_lossy().into_owned();
    let args = ["mask", "--tokenizer", "llama2", "--regex", "[a-c]{2,5}", "--prefix", "ab", "--cache-dir", &dir_arg];
    let first = maskforge(&args);
    assert_eq!(first.0, 0, "{first:?}");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1);
    assert!(files[0].extension().is_some_and(|e| e == "mfg"));
    let second = maskforge(&args);
    assert_eq!(second.1, first.1);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "loaded, not written again");
    // Proof that the run reads the file: put another saved grammar (`x+`) under its name; the
    // same command then rejects the prefix `ab`.
    let other = dir.join("other.bin").to_string_lossy().into_owned();
    let (code, _, err) = maskforge(&["compile", "--tokenizer", "llama2", "--regex", "x+", "--out", &other]);
    assert_eq!(code, 0, "{err}");
    std::fs::rename(&other, &files[0]).unwrap();
    let (code, _, err) = maskforge(&args);
    assert_eq!(code, 2);
    assert!(err.contains("the prefix is rejected at token 0"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file of `bytes` in the temporary directory, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> Self {
        let path = std::env::temp_dir().join(format!("maskforge-cli-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Asserts `args` fail as bad input: exit code 2, one `error: ` line on stderr, no panic.
fn assert_one_line_error(args: &[&str]) -> String {
    let (code, _, err) = maskforge(args);
    let shown: String = args.iter().map(|a| a.chars().take(60).collect::<String>()).collect::<Vec<_>>().join(" ");
    assert_eq!(code, 2, "{shown}: {err}");
    assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1, "{shown}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("internal error") && !err.contains("RUST_BACKTRACE"),
        "{shown}: {err}"
    );
    err
}

#[test]
fn adversarial_inputs_exit_2_with_one_line() {
    let deep_schema =
        format!("{}{{\"type\":\"integer\"}}{}", r#"{"type":"array","items":"#.repeat(10_000), "}".repeat(10_000));
    let recursive = r##"{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/definitions/C"}}},
        "required":["c"],"definitions":{"C":{"type":"object","properties":{"id":{"type":"integer"},
        "c":{"type":"array","items":{"$ref":"#/definitions/C"}}},"required":["id","c"]}}}"##;
    let files = [
        TempFile::new("utf8.ebnf", b"root ::= \"a\xff\""),
        TempFile::new("brackets.ebnf", "[".repeat(50 << 20).as_bytes()),
        TempFile::new("brackets.json", "[".repeat(50 << 20).as_bytes()),
        TempFile::new("deep.json", deep_schema.as_bytes()),
        TempFile::new("cycle.json", br##"{"$ref": "#"}"##),
        TempFile::new("recursive.json", recursive.as_bytes()),
        TempFile::new("truncated.tokenizer.json", br#"{"model": {"type": "BPE", "vocab": {"a": 0, "b""#),
        TempFile::new(
            "inconsistent.tokenizer.json",
            br#"{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}}"#,
        ),
        TempFile::new("tag.json", "[".repeat(1 << 20).as_bytes()),
        TempFile::new("utf8.txt", b"\"a\xff\""),
        TempFile::new("ambiguous.ebnf", br#"root ::= root root | "a""#),
    ];
    let [utf8, brackets_ebnf, brackets_json, deep, cycle, recursive, truncated, inconsistent, tag, text, ambiguous] =
        &files;
    assert_one_line_error(&["check", "--regex", r#""[^"]*""#, "--input", text.path()]);
    assert_one_line_error(&["check", "--grammar", utf8.path(), "--text", "a"]);
    // 50 MB sources: over the source size limit, refused before parsing.
    for (flag, file) in [("--grammar", brackets_ebnf), ("--schema", brackets_json)] {
        let err = assert_one_line_error(&["check", flag, file.path(), "--text", "a"]);
        assert!(err.contains("too large: 52428800 bytes") && err.contains("max_source_bytes"), "{err}");
    }
    assert_one_line_error(&["check", "--schema", deep.path(), "--text", "a"]);
    assert_one_line_error(&["check", "--schema", cycle.path(), "--text", "a"]);
    // Design-notes problem 12: this recursive schema with `indent` used to grow without bound;
    // it now compiles (one rule per `$ref` target above a capped level) and gives a verdict:
    // `{}` lacks the required `c`.
    let (code, _, err) = maskforge(&[
        "check",
        "--schema",
        recursive.path(),
        "--schema-options",
        r#"{"any_whitespace": false, "indent": 2}"#,
        "--text",
        "{}",
    ]);
    assert_eq!(code, 1, "a rejection, not an error: {err}");
    assert_one_line_error(&[
        "check",
        "--schema",
        cycle.path(),
        "--schema-options",
        r#"{"indent": 4000000000}"#,
        "--text",
        "a",
    ]);
    assert_one_line_error(&["check", "--regex", "(a|b", "--text", "a"]);
    assert_one_line_error(&["check", "--regex", "a{5,2}", "--text", "a"]);
    assert_one_line_error(&["check", "--tokenizer", truncated.path(), "--builtin-json", "--text", "1"]);
    assert_one_line_error(&["check", "--tokenizer", inconsistent.path(), "--builtin-json", "--text", "1"]);
    assert_one_line_error(&["check", "--structural-tag", tag.path(), "--text", "a"]);
    let err = assert_one_line_error(&["check", "--builtin-json", "--compile-timeout", "0", "--text", "1"]);
    assert!(err.contains("timed out"), "{err}");
    assert_one_line_error(&["check", "--builtin-json", "--compile-timeout=-1", "--text", "1"]);
    let err = assert_one_line_error(&["check", "--builtin-json", "--max-compile-bytes", "1000", "--text", "1"]);
    assert!(err.contains("max_compile_bytes"), "{err}");
    // The matcher's bounds: an ambiguous grammar whose steps cost ever more, nesting too deep.
    // Errors, not rejections: the text was not judged.
    let a = "a".repeat(2_000);
    let step = ["--grammar", ambiguous.path(), "--max-step-items", "100000"];
    for args in [["check", "--text", &a], ["mask", "--prefix", &a], ["generate", "--max-tokens", "2000"]] {
        let err = assert_one_line_error(&[&args[..], &step[..]].concat());
        assert!(err.contains("max_step_items") && err.contains("over the limit of 100000"), "{err}");
    }
    let open = "[".repeat(20_000);
    let err = assert_one_line_error(&["check", "--builtin-json", "--max-state-bytes", "100000", "--text", &open]);
    assert!(err.contains("max_state_bytes") && err.contains("over the limit of 100000"), "{err}");
}
