"""GrammarMatcher and BatchGrammarMatcher on a toy vocabulary where every mask is known."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import maskforge as xgr

from conftest import allowed_ids

# Toy ids: 0 "{", 1 "}", 2 '"a"', 3 ":", 4 "1", 5 " ", 6 "</s>" (stop).
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
ANSWER = [0, 2, 3, 5, 4, 1]  # {"a": 1}


@pytest.fixture()
def grammar(toy):
    return xgr.GrammarCompiler(toy).compile_json_schema(SCHEMA, any_whitespace=False)


def mask_of(m: xgr.GrammarMatcher) -> list:
    bitmask = xgr.allocate_token_bitmask(1, 7)
    m.fill_next_token_bitmask(bitmask)
    return allowed_ids(bitmask[0])


def test_accept_fill_terminate(grammar):
    m = xgr.GrammarMatcher(grammar)
    assert m.stop_token_ids == [6] and m.max_rollback_tokens == -1
    assert mask_of(m) == [0]
    for step, token in enumerate(ANSWER):
        assert not m.is_completed()
        assert m.accept_token(token), step
    assert m.is_completed() and m.can_terminate() and not m.is_terminated()
    assert mask_of(m) == [6]
    assert not m.accept_token(1)
    assert m.accept_token(6) and m.is_terminated()
    assert mask_of(m) == []
    assert m.num_accepted_tokens == 7
    assert "terminated=true" in repr(m)


def test_fill_returns_whether_to_apply(toy):
    anything = xgr.GrammarCompiler(toy).compile_grammar('root ::= [^\\x00]*')
    m = xgr.GrammarMatcher(anything)
    bitmask = xgr.allocate_token_bitmask(1, 7)
    assert m.fill_next_token_bitmask(bitmask) is False  # every token allowed
    grammar = xgr.GrammarCompiler(toy).compile_json_schema(SCHEMA)
    assert xgr.GrammarMatcher(grammar).fill_next_token_bitmask(bitmask) is True


def test_accept_string_rollback_reset_jump_forward(grammar):
    m = xgr.GrammarMatcher(grammar)
    assert m.find_jump_forward_string() == '{"a": '
    assert m.accept_string('{"a"')
    assert not m.accept_string("x")
    assert m.accept_string(b": ")
    assert m.num_accepted_tokens == 2
    m.rollback(1)
    assert mask_of(m) == [3]
    m.rollback()
    assert m.num_accepted_tokens == 0
    with pytest.raises(xgr.MatcherError, match="roll back"):
        m.rollback(1)
    m.accept_tokens([0, 2])
    m.reset()
    assert m.num_accepted_tokens == 0 and mask_of(m) == [0]
    with pytest.raises(xgr.MatcherError):
        m.accept_string(3)


def test_bad_token_ids(grammar):
    m = xgr.GrammarMatcher(grammar)
    for bad in (7, -1, 1 << 40):
        with pytest.raises(xgr.MatcherError, match="out of range"):
            m.accept_token(bad)
    assert m.num_accepted_tokens == 0
    with pytest.raises(xgr.MatcherError):
        xgr.GrammarMatcher(grammar, override_stop_tokens=[99])


def test_matcher_options(grammar):
    m = xgr.GrammarMatcher(grammar, override_stop_tokens=[5], terminate_without_stop_token=False)
    assert m.stop_token_ids == [5]
    m = xgr.GrammarMatcher(grammar, terminate_without_stop_token=True)
    assert all(m.accept_token(t) for t in ANSWER) and m.is_terminated()
    m = xgr.GrammarMatcher(grammar, max_rollback_tokens=2)
    assert m.max_rollback_tokens == 2
    assert m.accept_tokens(ANSWER[:4]) == 4
    with pytest.raises(xgr.MatcherError):
        m.rollback(3)
    m.rollback(2)
    assert m.compiled_grammar.grammar == grammar.grammar


def test_bounds_on_hostile_grammars_and_inputs(toy):
    compiler = xgr.GrammarCompiler(toy)
    default = xgr.GrammarMatcher(compiler.compile_grammar('root ::= "1"'))
    assert default.max_step_items == 100_000_000 and default.max_state_bytes == 128 << 20
    # Ambiguous: every "1" costs more parser work than the last, until a step is refused.
    ambiguous = compiler.compile_grammar('root ::= root root | "1"')
    m = xgr.GrammarMatcher(ambiguous, max_step_items=20_000)
    assert m.max_step_items == 20_000
    with pytest.raises(xgr.MatcherError, match="max_step_items"):
        for _ in range(2_000):
            assert m.accept_token(4) and m.last_step_items <= 20_000
            before = mask_of(m)
    accepted = m.num_accepted_tokens
    assert mask_of(m) == before and m.num_accepted_tokens == accepted, "the matcher is unchanged"
    with pytest.raises(xgr.MatcherError, match="max_step_items"):
        m.accept_string("1")
    assert m.accept_token(6) and m.is_terminated()
    # Nesting: the state grows with every open level, until a level is refused.
    nested = compiler.compile_grammar('root ::= "{" root "}" | "1"')
    m = xgr.GrammarMatcher(nested, max_state_bytes=10_000)
    with pytest.raises(xgr.MatcherError, match="max_state_bytes"):
        for _ in range(2_000):
            assert m.accept_token(0) and m.state_bytes <= 10_000
    assert mask_of(m) == [0, 4]
    m.rollback(1)
    assert m.accept_token(4) and m.accept_token(1)


def test_fork_and_drafts(grammar):
    m = xgr.GrammarMatcher(grammar)
    m.accept_token(0)
    f = m.fork()
    assert f.accept_token(2) and m.num_accepted_tokens == 1
    assert m.accept_tokens([2, 3, 4, 5]) == 2  # stops at "1" (a space must come first)
    m.rollback(2)
    draft = np.zeros((4, 1), dtype=np.int32)
    assert m.fill_draft_bitmasks([2, 3, 1], draft) == 3
    assert [allowed_ids(r) for r in draft[:3]] == [[2], [3], [5]]
    assert m.num_accepted_tokens == 1
    tree = np.zeros((4, 1), dtype=np.int32)
    assert m.fill_draft_tree_bitmasks([2, 3, 1], [None, 0, 0], tree) == [True, True, False]
    assert [allowed_ids(r) for r in tree] == [[2], [3], [5], []]
    with pytest.raises(xgr.MatcherError):
        m.fill_draft_tree_bitmasks([2], [3], tree)


def test_exact_oracle_equals_fast_path(qwen3_compiler):
    g = qwen3_compiler.compile_json_schema({"type": "object", "properties": {"name": {"type": "string"}}})
    m = xgr.GrammarMatcher(g)
    size = qwen3_compiler.tokenizer_info.vocab_size
    for piece in ("", '{"na', 'me": "x'):
        assert m.accept_string(piece) or piece == ""
        fast, exact = xgr.allocate_token_bitmask(1, size), xgr.allocate_token_bitmask(1, size)
        m.fill_next_token_bitmask(fast)
        m.fill_next_token_bitmask_exact(exact)
        assert (fast == exact).all()


def test_batch(grammar):
    batch = xgr.BatchGrammarMatcher(max_threads=2)
    assert batch.max_threads == 2
    assert xgr.BatchGrammarMatcher("auto").max_threads >= 1
    matchers = [xgr.GrammarMatcher(grammar) for _ in range(3)]
    assert xgr.BatchGrammarMatcher.batch_accept_token(matchers, [0, 0, 1]) == [True, True, False]
    assert batch.batch_accept_string(matchers, ['"a"', b'"a": ', "{"]) == [True, True, True]
    bitmask = np.full((4, 1), 12345, dtype=np.int32)
    batch.batch_fill_next_token_bitmask(matchers, bitmask, [3, 0, 1])
    assert [allowed_ids(bitmask[row]) for row in (3, 0, 1)] == [[3], [4], [2]]
    assert bitmask[2, 0] == 12345  # no matcher maps to row 2
    singles = [mask_of(m) for m in matchers]
    assert singles == [[3], [4], [2]]
    with pytest.raises(xgr.MatcherError):
        batch.batch_fill_next_token_bitmask(matchers, bitmask, [0, 0, 1])  # duplicate row
    with pytest.raises(xgr.MatcherError):
        xgr.BatchGrammarMatcher.batch_accept_token(matchers, [0])
    with pytest.raises(xgr.MatcherError):
        xgr.BatchGrammarMatcher.batch_accept_token(matchers, [0, 0, 9])
    assert [m.num_accepted_tokens for m in matchers] == [2, 2, 1]
    with pytest.raises(Exception):
        batch.batch_fill_next_token_bitmask([matchers[0], matchers[0]], bitmask)
    assert mask_of(matchers[0]) == [3]  # still usable


def test_fills_from_several_threads_agree(qwen3_compiler):
    """Matchers filled from several threads at once (fills run without the GIL) give the
    single-thread masks."""
    g = qwen3_compiler.compile_builtin_json_grammar()
    size = qwen3_compiler.tokenizer_info.vocab_size
    expected = xgr.allocate_token_bitmask(1, size)
    xgr.GrammarMatcher(g).fill_next_token_bitmask(expected)
    results = []

    def work():
        m = xgr.GrammarMatcher(g)
        b = xgr.allocate_token_bitmask(1, size)
        for _ in range(50):
            m.fill_next_token_bitmask(b)
        results.append(bool((b == expected).all()))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 4
