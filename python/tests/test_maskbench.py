"""Masks from Python equal the Rust masks bit for bit: the `maskforge mask` CLI (a separate
process, its own tokenization of the prefix) on MaskBench schemas and a protocol."""

from __future__ import annotations

import json

import pytest

import maskforge as xgr

from conftest import CLI, ROOT, allowed_ids, cli_mask, maskbench_files

# A missing CLI fails the module loudly (it is built before the Python tests run).
assert CLI.exists(), f"{CLI} is missing: cargo build --release -p maskforge-cli"


def python_mask(grammar: xgr.CompiledGrammar, prefix: str) -> list:
    m = xgr.GrammarMatcher(grammar)
    assert m.accept_string(prefix)
    bitmask = xgr.allocate_token_bitmask(1, grammar.tokenizer_info.vocab_size)
    m.fill_next_token_bitmask(bitmask)
    return allowed_ids(bitmask[0])


@pytest.mark.parametrize("path", maskbench_files(6), ids=lambda p: p.stem)
def test_schema_masks_equal_cli(path, qwen3_compiler, tmp_path):
    doc = json.loads(path.read_text())
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(doc["schema"]))
    grammar = qwen3_compiler.compile_json_schema(doc["schema"])
    instance = json.dumps(next(t["data"] for t in doc["tests"] if t["valid"]))
    for prefix in ("", instance[: len(instance) // 2], instance):
        expected = cli_mask(["--tokenizer", "qwen3", "--schema", str(schema_file)], prefix)
        got = python_mask(grammar, prefix)
        assert got == expected, (path.name, prefix)
        assert got, "a prefix of a valid instance always has a continuation"


def test_protocol_masks_equal_cli(qwen3_compiler):
    # The protocol suite's tools, in the repository (tests/data/protocols/).
    tools_file = ROOT / "tests" / "data" / "protocols" / "tools.json"
    tools = list(json.loads(tools_file.read_text()).values())
    grammar = qwen3_compiler.compile_protocol("qwen", tools, "auto")
    for prefix in ("", "Sure. <tool_call>\n", '<tool_call>\n{"name": "set_alarm", "arguments": {"ti'):
        expected = cli_mask(["--tokenizer", "qwen3", "--protocol", "qwen", "--tools", str(tools_file)], prefix)
        assert python_mask(grammar, prefix) == expected, prefix
