"""The calls vLLM's and SGLang's XGrammar backends make, unchanged, with `import maskforge as xgr`."""

from __future__ import annotations

import json

import pytest

import maskforge as xgr

import torch
import transformers

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
    "required": ["city", "days"],
}


@pytest.fixture(scope="module")
def hf_tokenizer(tmp_path_factory, qwen3_json_text):
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    path.write_text(qwen3_json_text)
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), eos_token="<|im_end|>")


def allowed(bitmask, row: int, token: int) -> bool:
    return bool((int(bitmask[row, token // 32]) >> (token % 32)) & 1)


def test_vllm_sequence(hf_tokenizer):
    # vllm/v1/structured_output/backend_xgrammar.py, in order.
    vocab_size = 151936  # the model's embedding rows (larger than the tokenizer)
    tokenizer_info = xgr.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=vocab_size)
    compiler = xgr.GrammarCompiler(tokenizer_info, max_threads=8, cache_enabled=True, cache_limit_bytes=-1)
    ctx = compiler.compile_json_schema(json.dumps(SCHEMA), any_whitespace=False)
    num_speculative_tokens = 3
    matcher = xgr.GrammarMatcher(ctx, max_rollback_tokens=num_speculative_tokens)
    bitmask = xgr.allocate_token_bitmask(4, tokenizer_info.vocab_size)
    target = hf_tokenizer.encode('{"city": "Paris", "days": 3}') + [hf_tokenizer.eos_token_id]
    batch_index = 2
    for step, token in enumerate(target):
        matcher.fill_next_token_bitmask(bitmask, batch_index)
        logits = torch.zeros(4, vocab_size)
        xgr.apply_token_bitmask_inplace(logits, bitmask.to(logits.device), indices=[batch_index])
        assert allowed(bitmask, batch_index, token) and logits[batch_index, token] == 0, step
        assert torch.isinf(logits[batch_index, vocab_size - 1])  # padding ids never allowed
        assert (logits[0] == 0).all()  # other rows untouched
        # Speculative decoding: accept a draft of the next tokens, roll the rejected ones back.
        draft = target[step : step + num_speculative_tokens]
        accepted = [matcher.accept_token(t) for t in draft]
        assert all(accepted)
        matcher.rollback(len(draft) - 1)
    assert matcher.is_terminated()
    matcher.reset()
    assert not matcher.is_terminated()


def test_sglang_sequence(hf_tokenizer):
    # sglang/srt/constrained/xgrammar_backend.py, in order.
    tokenizer_info = xgr.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=151936)
    compiler = xgr.GrammarCompiler(tokenizer_info=tokenizer_info)
    ctxs = [
        compiler.compile_json_schema(schema=json.dumps(SCHEMA)),
        compiler.compile_grammar('root ::= "yes" | "no"'),
        compiler.compile_regex(r"[A-Z][a-z]{2,5}"),
        compiler.compile_builtin_json_grammar(),
    ]
    texts = ['{"city": "Oslo", "days": 14}', "yes", "Paris", "[1, 2]"]
    vocab_mask = xgr.allocate_token_bitmask(len(ctxs), tokenizer_info.vocab_size)
    logits = torch.zeros(len(ctxs), tokenizer_info.vocab_size)
    for i, (ctx, text) in enumerate(zip(ctxs, texts)):
        matcher = xgr.GrammarMatcher(ctx, max_rollback_tokens=200, override_stop_tokens=[hf_tokenizer.eos_token_id])
        for token in hf_tokenizer.encode(text):
            jump = matcher.find_jump_forward_string()
            assert isinstance(jump, str)
            xgr.reset_token_bitmask(vocab_mask)
            matcher.fill_next_token_bitmask(vocab_mask, i)
            assert allowed(vocab_mask, i, token)
            xgr.apply_token_bitmask_inplace(logits, vocab_mask, indices=[i])
            assert logits[i, token] == 0 and torch.isinf(logits[i]).any()
            logits.zero_()
            assert matcher.accept_token(token)
        assert matcher.accept_token(hf_tokenizer.eos_token_id) and matcher.is_terminated()
