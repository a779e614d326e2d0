"""SmolLM2-135M-Instruct on 20 MaskBench schemas, with and without maskforge: how many outputs
parse and validate. Numbers go to docs/benchmarks.md (not run by CI: minutes on a CPU).

Run: target/py-venv/bin/python python/benches/smollm2_schemas.py [--n 20] [--max-new-tokens 256]
[--threads 1] (after scripts/python-tests, which fetches the model). Greedy decoding, one schema
per prompt. Each output line says why generation stopped (`eos` or the `cap`); a constrained
output that is invalid or reached the cap is printed too (its end, and whether the grammar had
completed), to tell a cut output from a finished one that fails validation.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

import jsonschema
import torch
import transformers

import maskforge as xgr
from maskforge.contrib.hf import LogitsProcessor

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = pathlib.Path(os.environ.get("MASKFORGE_FIXTURES", ROOT / "fixtures"))
MODEL = FIXTURES / "model" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def pick_schemas(n: int) -> list:
    """`n` small MaskBench-dev schemas, spread over the categories (deterministic)."""
    index = [json.loads(line) for line in (FIXTURES / "corpus" / "maskbench-dev.index.jsonl").open()]
    rows = [r for r in index if r["bytes"] < 1500]
    step = max(1, len(rows) // n)
    return [json.loads((FIXTURES / "corpus" / "maskbench-dev" / r["file"]).read_text()) for r in rows[::step][:n]]


def validates(text: str, schema: dict) -> bool:
    try:
        jsonschema.validate(json.loads(text), schema)
        return True
    except (ValueError, jsonschema.ValidationError, jsonschema.SchemaError):
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    # One thread: on the shared 2-core machine, two torch threads spin against other builds
    # (5.2 tokens/s with one thread, 0.3 with two, at load average 10).
    parser.add_argument("--threads", type=int, default=1)
    # `--any-whitespace false`: the compact layout (no whitespace the separators do not print).
    parser.add_argument("--any-whitespace", choices=["true", "false"], default="true")
    parser.add_argument("--modes", default="constrained,unconstrained")
    # Re-runs some of the same selection (its positions, e.g. `0,11`), to look at one output.
    parser.add_argument("--only", type=lambda v: [int(i) for i in v.split(",")], default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    wall = time.perf_counter()
    tok = transformers.AutoTokenizer.from_pretrained(str(MODEL.parent), gguf_file=MODEL.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(MODEL.parent), gguf_file=MODEL.name)
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tok, vocab_size=model.config.vocab_size))
    totals = {"constrained": [0, 0, 0.0], "unconstrained": [0, 0, 0.0]}  # valid, tokens, seconds
    docs = pick_schemas(args.n)
    for i, doc in enumerate(docs):
        if args.only is not None and i not in args.only:
            continue
        schema = doc["schema"]
        prompt = f"Write one JSON value that satisfies this JSON Schema, and nothing else.\n{json.dumps(schema)}"
        ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt")
        ids = ids if isinstance(ids, torch.Tensor) else ids["input_ids"]
        grammar = compiler.compile_json_schema(schema, any_whitespace=args.any_whitespace == "true")
        line = [f"{i:2d} {doc['description'][:40]:40s}"]
        failures = []
        for mode in args.modes.split(","):
            processors = [LogitsProcessor(grammar)] if mode == "constrained" else []
            start = time.perf_counter()
            out = model.generate(ids, max_new_tokens=args.max_new_tokens, do_sample=False, logits_processor=processors)
            seconds = time.perf_counter() - start
            new = out[0, ids.shape[1] :]
            text = tok.decode(new, skip_special_tokens=True)
            ok = validates(text, schema)
            stop = "eos" if tok.eos_token_id in new.tolist() else "cap"
            t = totals[mode]
            t[0] += ok
            t[1] += len(new)
            t[2] += seconds
            line.append(f"{mode} {'valid' if ok else 'INVALID'} {stop} {len(new)} tok {len(new) / seconds:.1f} tok/s")
            if processors and (not ok or stop == "cap"):
                # `generate` does not call the processor after the last token: feed it here.
                # (A rejected last token would be a mask bug: the mask allowed it.)
                matcher = processors[0].matchers[0]
                accepted = matcher.accept_token(int(new[-1]))
                failures.append(
                    f"   constrained output: {len(text)} chars, last token accepted: {accepted}, "
                    f"grammar complete: {matcher.is_completed()}, end: {text[-160:]!r}"
                )
        print(" | ".join(line), flush=True)
        for failure in failures:
            print(failure, flush=True)
    for mode, (valid, tokens, seconds) in totals.items():
        if mode in args.modes.split(","):
            print(f"{mode}: {valid}/{len(args.only or docs)} valid, {tokens} tokens, {tokens / seconds:.2f} tokens/s")
    print(f"cap {args.max_new_tokens} tokens, any_whitespace {args.any_whitespace}, {args.threads} torch thread(s), wall {time.perf_counter() - wall:.0f} s")


if __name__ == "__main__":
    main()
