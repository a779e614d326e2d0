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
    assert!(out.contains("mask median"));
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
