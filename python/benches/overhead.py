"""Python overhead of GrammarMatcher.fill_next_token_bitmask over the Rust call, and the
batch fill of 64 matchers from Python. Numbers go to docs/benchmarks.md.

Run: target/py-venv/bin/python python/benches/overhead.py   (after scripts/python-tests)
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import statistics
import time

import numpy as np
import torch

import maskforge as xgr

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = pathlib.Path(os.environ.get("MASKFORGE_FIXTURES", ROOT / "fixtures"))
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age", "tags"],
}
INSTANCE = '{"name": "Ada Lovelace", "age": 36, "tags": ["math", "engines", "notes"]}'
PREFIXES = [INSTANCE[:n] for n in range(0, len(INSTANCE), 5)]


def per_call(fn, calls: int = 20, batches: int = 500) -> float:
    """Seconds per call: the median over `batches` batches of the mean of `calls` calls. A
    median, so that the batches another process preempted (milliseconds each on the shared
    machine, which a mean over thousands of calls would spread over every call) do not count."""
    runs = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - start) / calls)
    return statistics.median(runs)


def rust_per_call(matcher, calls: int = 20, batches: int = 500) -> float:
    """As `per_call`, for the same fill looped inside one Rust call."""
    return statistics.median(matcher._time_rust_fill(calls) / calls for _ in range(batches))


def main() -> None:
    info = xgr.TokenizerInfo.from_tokenizer_json(
        str(FIXTURES / "tokenizers" / "llama3.tokenizer.json.gz"),
        tokenizer_config=str(FIXTURES / "tokenizers" / "llama3.tokenizer_config.json"),
    )
    grammar = xgr.GrammarCompiler(info).compile_json_schema(SCHEMA)
    matchers = []
    for prefix in PREFIXES:
        m = xgr.GrammarMatcher(grammar)
        assert m.accept_string(prefix)
        matchers.append(m)
    np_mask = np.zeros(xgr.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    torch_mask = xgr.allocate_token_bitmask(1, info.vocab_size)
    rust, via_numpy, via_torch = [], [], []
    for m in matchers:
        m.fill_next_token_bitmask(np_mask)  # warm the mask cache
        rust.append(rust_per_call(m))
        via_numpy.append(per_call(lambda: m.fill_next_token_bitmask(np_mask)))
        via_torch.append(per_call(lambda: m.fill_next_token_bitmask(torch_mask)))
    us = lambda xs: statistics.median(xs) * 1e6  # noqa: E731
    print(f"vocabulary llama3 ({info.vocab_size} tokens), {len(matchers)} states of one JSON Schema")
    print(f"fill, Rust loop           median {us(rust):6.2f} us")
    print(f"fill, Python numpy mask   median {us(via_numpy):6.2f} us  overhead {us(via_numpy) - us(rust):5.2f} us")
    print(f"fill, Python torch mask   median {us(via_torch):6.2f} us  overhead {us(via_torch) - us(rust):5.2f} us")
    for name, times in (("numpy", via_numpy), ("torch", via_torch)):
        overheads = [p - r for p, r in zip(times, rust)]
        print(f"{name} overhead per state: min {min(overheads) * 1e6:.2f} max {max(overheads) * 1e6:.2f} us")

    batch_size = 64
    batch = [matchers[i % len(matchers)].fork() for i in range(batch_size)]
    bitmask = xgr.allocate_token_bitmask(batch_size, info.vocab_size)
    rust_sum = sum(rust_per_call(m, batches=50) for m in batch)
    loop = per_call(lambda: [m.fill_next_token_bitmask(bitmask, i) for i, m in enumerate(batch)], 5, 100)
    print(f"64 matchers, sum of Rust fills            {rust_sum * 1e6:8.1f} us")
    print(f"64 matchers, Python loop of single fills  {loop * 1e6:8.1f} us")
    for threads in (1, 2):
        runner = xgr.BatchGrammarMatcher(threads)
        t = per_call(lambda: runner.batch_fill_next_token_bitmask(batch, bitmask), 5, 100)
        print(f"64 matchers, batch_fill_next_token_bitmask, {threads} thread(s) {t * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
