"""The public surface: every item of the extension module is in the type stubs with the same
parameters (names, order, positional or keyword-only) and has a docstring, and the calls
XGrammar users make take XGrammar's keyword arguments."""

from __future__ import annotations

import ast
import inspect
import pathlib
from typing import Dict, List, Tuple

import pytest

import maskforge as xgr
import maskforge._core as core

STUB = pathlib.Path(xgr.__file__).with_name("_core.pyi")


def stub_items() -> Dict[str, Dict[str, ast.AST]]:
    """Stubbed classes (and module-level names, under "") with their members."""
    items: Dict[str, Dict[str, ast.AST]] = {"": {}}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef):
            members = {}
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    members[member.name] = member
                elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
                    members[member.target.id] = member
            items[node.name] = members
            items[""][node.name] = node
        elif isinstance(node, ast.FunctionDef):
            items[""][node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            items[""][node.target.id] = node
    return items


def stub_parameters(fn: ast.FunctionDef) -> List[Tuple[str, str]]:
    args = fn.args
    named = [(a.arg, "positional") for a in args.posonlyargs + args.args if a.arg != "self"]
    return named + [(a.arg, "keyword") for a in args.kwonlyargs]


def runtime_parameters(obj) -> List[Tuple[str, str]]:
    kinds = {inspect.Parameter.KEYWORD_ONLY: "keyword"}
    return [
        (name, kinds.get(p.kind, "positional"))
        for name, p in inspect.signature(obj).parameters.items()
        if name != "self"
    ]


def public_names(obj) -> List[str]:
    return [n for n in vars(obj) if not n.startswith("_")]


def test_every_public_item_is_stubbed_and_documented():
    stubs = stub_items()
    missing, undocumented = [], []
    for name in public_names(core) + ["__version__"]:
        obj = getattr(core, name)
        if name not in stubs[""]:
            missing.append(name)
        if not isinstance(obj, str) and not (obj.__doc__ or "").strip():
            undocumented.append(name)
        if inspect.isclass(obj):
            for member in public_names(obj):
                if member not in stubs.get(name, {}):
                    missing.append(f"{name}.{member}")
                if not (getattr(obj, member).__doc__ or "").strip():
                    undocumented.append(f"{name}.{member}")
    assert missing == [] and undocumented == []


def test_stub_signatures_match_the_extension():
    mismatches = []
    for cls, members in stub_items().items():
        owner = getattr(core, cls) if cls else core
        for name, node in members.items():
            if not isinstance(node, ast.FunctionDef) or name == "__int__":
                continue
            if any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list):
                continue
            runtime = owner if name == "__init__" else getattr(owner, name)
            if runtime_parameters(runtime) != stub_parameters(node):
                mismatches.append((cls, name, runtime_parameters(runtime), stub_parameters(node)))
    assert mismatches == []


# The XGrammar calls of issue 16 with the keyword arguments engines pass.
XGRAMMAR_CALLS = [
    (xgr.TokenizerInfo.from_huggingface, ["tokenizer", "vocab_size", "stop_token_ids"]),
    (xgr.TokenizerInfo, ["encoded_vocab", "vocab_type", "vocab_size", "stop_token_ids", "add_prefix_space"]),
    (xgr.GrammarCompiler, ["tokenizer_info", "max_threads", "cache_enabled", "cache_limit_bytes"]),
    (
        xgr.GrammarCompiler.compile_json_schema,
        ["schema", "any_whitespace", "indent", "separators", "strict_mode", "max_whitespace_cnt"],
    ),
    (xgr.GrammarCompiler.compile_grammar, ["ebnf_string", "root_rule_name"]),
    (
        xgr.GrammarCompiler.compile_protocol,
        ["name", "tools", "tool_choice", "reasoning", "parallel_tool_calls"],
    ),
    (
        xgr.GrammarMatcher,
        ["compiled_grammar", "override_stop_tokens", "terminate_without_stop_token", "max_rollback_tokens"],
    ),
    (xgr.GrammarMatcher.fill_next_token_bitmask, ["bitmask", "index"]),
    (xgr.GrammarMatcher.rollback, ["num_tokens"]),
    (xgr.BatchGrammarMatcher.batch_fill_next_token_bitmask, ["matchers", "bitmask", "indices"]),
    (xgr.apply_token_bitmask_inplace, ["logits", "bitmask", "vocab_size", "indices"]),
    (xgr.allocate_token_bitmask, ["batch_size", "vocab_size"]),
    (xgr.get_bitmask_shape, ["batch_size", "vocab_size"]),
]


@pytest.mark.parametrize("call, names", XGRAMMAR_CALLS, ids=lambda x: getattr(x, "__qualname__", ""))
def test_xgrammar_keyword_arguments(call, names):
    parameters = [n for n, _ in runtime_parameters(call)]
    assert [n for n in parameters if n in names] == names
