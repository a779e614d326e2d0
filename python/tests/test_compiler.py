"""GrammarCompiler: every compile_* entry point, its options, its errors, the caches."""

from __future__ import annotations

import json

import pytest

import maskforge as xgr

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def accepts(grammar: xgr.CompiledGrammar, text: str) -> bool:
    m = xgr.GrammarMatcher(grammar)
    return m.accept_string(text) and m.is_completed()


def test_json_schema_as_str_dict_and_pydantic(qwen3_compiler):
    import pydantic

    class Model(pydantic.BaseModel):
        a: int

    for schema in (json.dumps(SCHEMA), SCHEMA, Model):
        g = qwen3_compiler.compile_json_schema(schema)
        assert accepts(g, '{"a": 12}')
        assert not accepts(g, '{"a": "x"}')
        assert g.json_schema_report == []
        assert g.memory_size_bytes > 0


def test_json_schema_layout_options(qwen3_compiler):
    compact = qwen3_compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"))
    assert accepts(compact, '{"a":1}') and not accepts(compact, '{"a": 1}')
    indented = qwen3_compiler.compile_json_schema(SCHEMA, any_whitespace=False, indent=2)
    assert accepts(indented, '{\n  "a": 1\n}')
    bounded = qwen3_compiler.compile_json_schema(SCHEMA, max_whitespace_cnt=2)
    assert accepts(bounded, '{  "a": 1}') and not accepts(bounded, '{   "a": 1}')
    loose = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert not accepts(qwen3_compiler.compile_json_schema(loose), '{"b": 1}')
    assert accepts(qwen3_compiler.compile_json_schema(loose, strict_mode=False), '{"b": 1}')


def test_json_schema_report_lists_relaxations(qwen3_compiler):
    g = qwen3_compiler.compile_json_schema({"type": "array", "items": {"type": "integer"}, "uniqueItems": True})
    report = g.json_schema_report
    assert [r["keyword"] for r in report] == ["uniqueItems"]
    assert set(report[0]) == {"keyword", "pointer", "detail"}
    with pytest.raises(xgr.SchemaError, match="uniqueItems"):
        qwen3_compiler.compile_json_schema(
            {"type": "array", "uniqueItems": True}, strict_keywords=True
        )


def test_json_schema_errors(qwen3_compiler):
    with pytest.raises(xgr.SchemaError):
        qwen3_compiler.compile_json_schema('{"type": ')
    with pytest.raises(xgr.SchemaError):
        qwen3_compiler.compile_json_schema({"type": "integer", "minimum": 5, "maximum": 1})
    with pytest.raises(xgr.SchemaError, match="pydantic"):
        qwen3_compiler.compile_json_schema(int)
    with pytest.raises(xgr.MaskforgeError, match="JSON-serializable"):
        qwen3_compiler.compile_json_schema({"a": object()})
    assert issubclass(xgr.SchemaError, xgr.MaskforgeError) and issubclass(xgr.MaskforgeError, ValueError)


def test_grammar_regex_builtin(qwen3_compiler):
    g = qwen3_compiler.compile_grammar('root ::= "a" b\nb ::= "b"+')
    assert accepts(g, "abb") and not accepts(g, "ba")
    assert "root" in g.grammar
    rooted = qwen3_compiler.compile_grammar('main ::= "x" | "y"', root_rule_name="main")
    assert accepts(rooted, "y")
    with pytest.raises(xgr.GrammarError):
        qwen3_compiler.compile_grammar('root ::= "a" undefined_rule')
    with pytest.raises(xgr.GrammarError):
        qwen3_compiler.compile_grammar('main ::= "x"')  # no rule `root`
    r = qwen3_compiler.compile_regex(r"[0-9]{3}-[a-z]+")
    assert accepts(r, "123-abc") and not accepts(r, "12-abc")
    with pytest.raises(xgr.RegexError):
        qwen3_compiler.compile_regex(r"(a)\1")
    j = qwen3_compiler.compile_builtin_json_grammar()
    assert accepts(j, '[1, {"x": null}]') and not accepts(j, "[1,]")
    assert j.json_schema_report is None


def test_structural_tag(qwen3_compiler):
    tag = {
        "type": "structural_tag",
        "format": {"type": "tag", "begin": "<a>", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "</a>"},
    }
    for arg in (tag, json.dumps(tag)):
        g = qwen3_compiler.compile_structural_tag(arg)
        assert accepts(g, '<a>{"a": 1}</a>') and not accepts(g, '<a>{"a": "b"}</a>')
    with pytest.raises(xgr.StructuralTagError):
        qwen3_compiler.compile_structural_tag({"type": "structural_tag", "format": {"type": "nope"}})


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def test_protocol(qwen3_compiler):
    assert "qwen" in xgr.protocol_names()
    g = qwen3_compiler.compile_protocol("qwen", TOOLS, "required")
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert accepts(g, call)
    assert not accepts(g, call.replace("get_weather", "get_time"))
    auto = qwen3_compiler.compile_protocol("qwen", TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}}, parallel_tool_calls=False)
    assert accepts(auto, call)
    with pytest.raises(xgr.ProtocolError, match="qwen"):
        qwen3_compiler.compile_protocol("no-such-protocol", TOOLS)
    with pytest.raises(xgr.ProtocolError):
        qwen3_compiler.compile_protocol("qwen", {"not": "a list"})
    with pytest.raises(xgr.ProtocolError):
        qwen3_compiler.compile_protocol("qwen", TOOLS, tool_choice={"type": "bogus"})


def test_caches(qwen3):
    compiler = xgr.GrammarCompiler(qwen3, max_threads=2, cache_enabled=True, cache_limit_bytes=1 << 26)
    a = compiler.compile_json_schema(SCHEMA)
    compiler.compile_json_schema({"type": "array", "items": {"type": "string"}})
    assert compiler.get_cache_size_bytes() >= 0
    compiler.clear_cache()
    assert compiler.get_cache_size_bytes() == 0
    b = compiler.compile_json_schema(SCHEMA)
    assert a.grammar == b.grammar
    assert compiler.tokenizer_info.vocab_size == qwen3.vocab_size
    uncached = xgr.GrammarCompiler(qwen3, cache_enabled=False)
    assert accepts(uncached.compile_json_schema(SCHEMA), '{"a": 3}')


def test_serialize_round_trip_and_bad_input(qwen3, qwen3_compiler, toy):
    g = qwen3_compiler.compile_json_schema(SCHEMA, any_whitespace=False)
    # Build a few cache entries first: they travel with the grammar.
    m = xgr.GrammarMatcher(g)
    bitmask = xgr.allocate_token_bitmask(1, qwen3.vocab_size)
    m.fill_next_token_bitmask(bitmask)
    data = g.serialize()
    assert isinstance(data, bytes) and len(data) > 36
    loaded = xgr.CompiledGrammar.deserialize(data, qwen3)
    for prefix in ["", "{", '{"a": 1']:
        a, b = xgr.GrammarMatcher(g), xgr.GrammarMatcher(loaded)
        assert a.accept_string(prefix) and b.accept_string(prefix)
        ma = xgr.allocate_token_bitmask(1, qwen3.vocab_size)
        mb = xgr.allocate_token_bitmask(1, qwen3.vocab_size)
        a.fill_next_token_bitmask(ma)
        b.fill_next_token_bitmask(mb)
        assert (ma == mb).all()
    assert accepts(loaded, '{"a": 12}') and not accepts(loaded, '{"a": "x"}')
    with pytest.raises(xgr.MaskforgeError, match="truncated"):
        xgr.CompiledGrammar.deserialize(data[:20], qwen3)
    corrupted = bytearray(data)
    corrupted[-1] ^= 0x40
    with pytest.raises(xgr.MaskforgeError, match="checksum"):
        xgr.CompiledGrammar.deserialize(bytes(corrupted), qwen3)
    with pytest.raises(xgr.MaskforgeError):
        xgr.CompiledGrammar.deserialize(data, toy)
    with pytest.raises(xgr.MaskforgeError):
        xgr.CompiledGrammar.deserialize(b"not a grammar at all, not even close", qwen3)


def test_parser_option_selects_and_reports_the_path(qwen3):
    import torch  # allocate_token_bitmask's type when torch is installed, as here

    pieces = ("", '{"a', '": [1, 2', '.5, "x"], "b"', ": {}}")
    masks = {}
    for name in ("auto", "earley", "pda"):
        g = xgr.GrammarCompiler(qwen3, parser=name).compile_builtin_json_grammar()
        assert g.parser == ("earley" if name == "earley" else "pda")
        m = xgr.GrammarMatcher(g)
        rows = []
        for piece in pieces:
            assert m.accept_string(piece) or piece == ""
            bitmask = xgr.allocate_token_bitmask(1, qwen3.vocab_size)
            m.fill_next_token_bitmask(bitmask)
            exact = xgr.allocate_token_bitmask(1, qwen3.vocab_size)
            m.fill_next_token_bitmask_exact(exact)
            assert (bitmask == exact).all()
            rows.append(bitmask.clone())
        assert m.is_completed()
        masks[name] = torch.stack(rows)
    assert (masks["earley"] == masks["pda"]).all()
    # A counted repetition is beyond the PDA: an error with "pda", Earley with "auto".
    counted = 'root ::= "a"{0,100} "b"'
    with pytest.raises(xgr.GrammarError):
        xgr.GrammarCompiler(qwen3, parser="pda").compile_grammar(counted)
    assert xgr.GrammarCompiler(qwen3, parser="auto").compile_grammar(counted).parser == "earley"
    with pytest.raises(ValueError, match="parser"):
        xgr.GrammarCompiler(qwen3, parser="lr1")


def test_compile_bounds_for_untrusted_input(qwen3):
    # A 100,000-way enum: millions of automaton edges before the passes shrink them.
    schema = {"enum": [f"value-{i}" for i in range(100_000)]}
    small = xgr.GrammarCompiler(qwen3, max_compile_bytes=1 << 20)
    with pytest.raises(xgr.CompileInterruptedError, match="max_compile_bytes"):
        small.compile_json_schema(schema)
    # Nothing of it was kept: the same compiler goes on with small schemas.
    assert small.compile_json_schema({"enum": ["a", "b"]}).parser in ("pda", "earley")
    with pytest.raises(xgr.CompileInterruptedError, match="timed out"):
        xgr.GrammarCompiler(qwen3, compile_timeout=0.0).compile_builtin_json_grammar()
    with pytest.raises(ValueError, match="compile_timeout"):
        xgr.GrammarCompiler(qwen3, compile_timeout=-1.0)
    assert issubclass(xgr.CompileInterruptedError, xgr.MaskforgeError)
