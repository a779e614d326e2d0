"""TokenizerInfo: the raw constructor per vocab type, tokenizer.json, Hugging Face, errors."""

from __future__ import annotations

import pytest

import maskforge as xgr

from conftest import TOKENIZERS, tokenizer_path


def test_raw_constructor_decodes_each_vocab_type():
    raw = xgr.TokenizerInfo(["a", "é", b"\xff"], xgr.VocabType.RAW)
    assert raw.decoded_vocab == [b"a", "é".encode(), b"\xff"]
    assert raw.vocab_type == xgr.VocabType.RAW
    level = xgr.TokenizerInfo(["\u0120a", "\u010a", "b"], xgr.VocabType.BYTE_LEVEL)
    assert level.decoded_vocab == [b" a", b"\n", b"b"]
    fallback = xgr.TokenizerInfo(["\u2581a", "<0x0A>", "b"], xgr.VocabType.BYTE_FALLBACK)
    assert fallback.decoded_vocab == [b" a", b"\n", b"b"]


def test_raw_constructor_stop_special_and_padding():
    info = xgr.TokenizerInfo(["a", "b", "<eos>"], vocab_size=40, stop_token_ids=[2])
    assert info.vocab_size == 40
    assert info.stop_token_ids == [2]
    assert info.special_token_ids == [2]
    assert info.decoded_vocab[2] == b"" and info.decoded_vocab[39] == b""
    # Without stop ids, a token named like an end-of-sequence token is the stop token.
    assert xgr.TokenizerInfo(["a", "</s>"]).stop_token_ids == [1]
    assert xgr.TokenizerInfo(["a", "b"], add_prefix_space=True).add_prefix_space


def test_raw_constructor_errors():
    with pytest.raises(xgr.TokenizerError, match="str or bytes"):
        xgr.TokenizerInfo(["a", 3])
    with pytest.raises(xgr.TokenizerError):
        xgr.TokenizerInfo(["a"], stop_token_ids=[5])
    with pytest.raises(xgr.TokenizerError):
        xgr.TokenizerInfo([])
    assert issubclass(xgr.TokenizerError, ValueError)


def test_from_tokenizer_json_path_and_text(qwen3, qwen3_json_text):
    assert qwen3.vocab_type == xgr.VocabType.BYTE_LEVEL
    assert qwen3.vocab_size == 151669
    im_end = qwen3.stop_token_ids[0]
    assert im_end in qwen3.special_token_ids
    from_text = xgr.TokenizerInfo.from_tokenizer_json(qwen3_json_text, stop_token_ids=[im_end], vocab_size=151936)
    assert from_text.vocab_size == 151936
    assert from_text.stop_token_ids == [im_end]
    assert from_text.decoded_vocab[:1000] == qwen3.decoded_vocab[:1000]
    assert "BYTE_LEVEL" in repr(qwen3)


def test_from_tokenizer_json_errors(tmp_path):
    with pytest.raises(xgr.TokenizerError):
        xgr.TokenizerInfo.from_tokenizer_json("{not json")
    with pytest.raises(xgr.TokenizerError):
        xgr.TokenizerInfo.from_tokenizer_json(str(tmp_path / "missing.json"))
    with pytest.raises(xgr.TokenizerError):
        xgr.TokenizerInfo.from_tokenizer_json(str(tokenizer_path("qwen3")), stop_token_ids=[10**7])


def test_from_huggingface(tmp_path, qwen3, qwen3_json_text):
    import transformers
    path = tmp_path / "tokenizer.json"
    path.write_text(qwen3_json_text)
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), eos_token="<|im_end|>")
    info = xgr.TokenizerInfo.from_huggingface(tok)
    assert info.stop_token_ids == [tok.eos_token_id]
    assert info.vocab_size == qwen3.vocab_size
    assert info.decoded_vocab[5000:6000] == qwen3.decoded_vocab[5000:6000]
    sized = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=152064, stop_token_ids=[1, 2])
    assert sized.vocab_size == 152064 and sized.stop_token_ids == [1, 2]
    assert xgr.TokenizerInfo.from_huggingface(tok, stop_token_ids=7).stop_token_ids == [7]


def test_from_huggingface_needs_a_fast_tokenizer():
    class Slow:
        eos_token_id = 0

    with pytest.raises(xgr.TokenizerError, match="fast tokenizers"):
        xgr.TokenizerInfo.from_huggingface(Slow())


def test_llama2_is_byte_fallback():
    info = xgr.TokenizerInfo.from_tokenizer_json(str(tokenizer_path("llama2")), tokenizer_config=str(TOKENIZERS / "llama2.tokenizer_config.json"))
    assert info.vocab_type == xgr.VocabType.BYTE_FALLBACK
    assert info.decoded_vocab[13] == b"\n"  # <0x0A>
