"""Shared fixtures: the test tokenizers and corpus (scripts/fetch-*), the `maskforge` CLI, and
small vocabularies built in the test."""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import subprocess
from typing import List

import numpy as np
import pytest

import maskforge as xgr

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = pathlib.Path(os.environ.get("MASKFORGE_FIXTURES", ROOT / "fixtures"))
TOKENIZERS = FIXTURES / "tokenizers"
MASKBENCH = FIXTURES / "corpus" / "maskbench-dev"
MODEL = FIXTURES / "model" / "SmolLM2-135M-Instruct.Q4_1.gguf"
# The CLI, built by `cargo build --release` (the independent side of the mask comparisons).
CLI = pathlib.Path(os.environ.get("MASKFORGE_CLI", ROOT / "target" / "release" / "maskforge"))


def tokenizer_path(name: str) -> pathlib.Path:
    return TOKENIZERS / f"{name}.tokenizer.json.gz"


@pytest.fixture(scope="session")
def qwen3() -> xgr.TokenizerInfo:
    return xgr.TokenizerInfo.from_tokenizer_json(
        str(tokenizer_path("qwen3")), tokenizer_config=str(TOKENIZERS / "qwen3.tokenizer_config.json")
    )


@pytest.fixture(scope="session")
def qwen3_compiler(qwen3: xgr.TokenizerInfo) -> xgr.GrammarCompiler:
    return xgr.GrammarCompiler(qwen3)


@pytest.fixture(scope="session")
def qwen3_json_text() -> str:
    return gzip.decompress(tokenizer_path("qwen3").read_bytes()).decode()


# A toy byte-level vocabulary: ids 0..5 are text, 6 is the stop token.
TOY_TOKENS: List[str] = ["{", "}", '"a"', ":", "1", " ", "</s>"]


@pytest.fixture()
def toy() -> xgr.TokenizerInfo:
    return xgr.TokenizerInfo(TOY_TOKENS, xgr.VocabType.RAW, stop_token_ids=[6])


def allowed_ids(bitmask_row) -> List[int]:
    """The token ids whose bit is set in one int32 bitmask row."""
    words = np.asarray(bitmask_row, dtype=np.int32).view(np.uint32)
    return [w * 32 + b for w, word in enumerate(words.tolist()) for b in range(32) if word >> b & 1]


def cli_mask(args: List[str], prefix: str) -> List[int]:
    """The allowed ids after `prefix`, as `maskforge mask` prints them."""
    out = subprocess.run(
        [str(CLI), "mask", *args, "--prefix", prefix],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "MASKFORGE_FIXTURES": str(FIXTURES)},
    ).stdout.splitlines()
    count = int(out[0])
    ids = [int(t) for t in out[1].split()] if len(out) > 1 else []
    assert len(ids) == count
    return ids


def maskbench_files(n: int) -> List[pathlib.Path]:
    """`n` MaskBench files with a valid instance, spread over the categories (deterministic)."""
    index = [json.loads(line) for line in (FIXTURES / "corpus" / "maskbench-dev.index.jsonl").open()]
    rows = [r for r in index if r["n_valid"] > 0 and r["bytes"] < 4000]
    step = max(1, len(rows) // n)
    return [MASKBENCH / r["file"] for r in rows[::step][:n]]
