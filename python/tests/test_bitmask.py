"""Bitmask helpers and the checks on engines' arrays: numpy and torch, good and bad."""

from __future__ import annotations

import numpy as np
import pytest

import maskforge as xgr

import torch

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def reference_apply(logits: np.ndarray, bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Token by token: -inf where the bit of the token is clear."""
    out = logits.copy()
    words = bitmask.view(np.uint32)
    for r in range(out.shape[0]):
        for t in range(vocab_size):
            if not (int(words[r, t // 32]) >> (t % 32)) & 1:
                out[r, t] = -np.inf
    return out


def test_shape_dtype_allocate_reset():
    assert xgr.get_bitmask_shape(3, 65) == (3, 3)
    assert xgr.get_bitmask_shape(1, 64) == (1, 2)
    assert xgr.bitmask_dtype == torch.int32
    b = xgr.allocate_token_bitmask(2, 70)
    assert isinstance(b, torch.Tensor) and b.dtype == torch.int32 and tuple(b.shape) == (2, 3)
    assert (b == -1).all()
    b.zero_()
    xgr.reset_token_bitmask(b)
    assert (b == -1).all()
    n = np.zeros((2, 3), dtype=np.int32)
    xgr.reset_token_bitmask(n)
    assert (n == -1).all()
    with pytest.raises(xgr.BitmaskError):
        xgr.get_bitmask_shape(-1, 10)
    with pytest.raises(xgr.BitmaskError):
        xgr.reset_token_bitmask(np.zeros(3, dtype=np.int64))


@pytest.mark.parametrize("vocab_size", [7, 32, 75])
def test_apply_matches_reference_numpy_and_torch(vocab_size):
    rng = np.random.default_rng(vocab_size)
    words = (vocab_size + 31) // 32
    bitmask = rng.integers(-(2**31), 2**31, size=(3, words), dtype=np.int64).astype(np.int32)
    logits = rng.standard_normal((3, vocab_size)).astype(np.float32)
    expected = reference_apply(logits, bitmask, vocab_size)
    got = logits.copy()
    xgr.apply_token_bitmask_inplace(got, bitmask)
    assert np.array_equal(got, expected)
    t = torch.from_numpy(logits.copy())
    xgr.apply_token_bitmask_inplace(t, torch.from_numpy(bitmask))
    assert np.array_equal(t.numpy(), expected)


def test_apply_with_indices_vocab_size_and_1d():
    bitmask = np.zeros((3, 1), dtype=np.int32)
    bitmask[1, 0] = 0b101
    logits = np.zeros((3, 40), dtype=np.float32)
    xgr.apply_token_bitmask_inplace(logits, bitmask, indices=[1])
    assert (logits[0] == 0).all() and (logits[2] == 0).all()
    assert np.isinf(logits[1, 1]) and logits[1, 0] == 0 and logits[1, 2] == 0
    assert (logits[1, 32:] == 0).all()  # past the bitmask: untouched
    t = torch.zeros(3, 40)
    xgr.apply_token_bitmask_inplace(t, torch.from_numpy(bitmask), vocab_size=3, indices=[1, 2])
    assert torch.isinf(t[2, :3]).all() and (t[2, 3:] == 0).all() and torch.isinf(t[1, 1])
    one = torch.zeros(40)
    xgr.apply_token_bitmask_inplace(one, torch.from_numpy(bitmask[1]))
    assert torch.isinf(one[1]) and one[0] == 0


def test_apply_rejects_bad_input_without_writing():
    logits = np.zeros((2, 40), dtype=np.float32)
    good = np.zeros((2, 2), dtype=np.int32)
    bad_calls = [
        lambda: xgr.apply_token_bitmask_inplace(logits, good.astype(np.int64)),
        lambda: xgr.apply_token_bitmask_inplace(logits, good[:1]),
        lambda: xgr.apply_token_bitmask_inplace(logits, good, vocab_size=100),
        lambda: xgr.apply_token_bitmask_inplace(logits, good, indices=[5]),
        lambda: xgr.apply_token_bitmask_inplace(logits.astype(np.int32), good),
        lambda: xgr.apply_token_bitmask_inplace(torch.zeros(2, 40), good),
        lambda: xgr.apply_token_bitmask_inplace(logits, [[0, 0]]),
    ]
    for call in bad_calls:
        with pytest.raises(xgr.BitmaskError):
            call()
    assert (logits == 0).all()


@pytest.fixture()
def matcher(toy):
    return xgr.GrammarMatcher(xgr.GrammarCompiler(toy).compile_json_schema(SCHEMA))


def test_fill_accepts_numpy_torch_1d_2d(matcher):
    for bitmask in (np.zeros((2, 1), np.int32), torch.zeros(2, 1, dtype=torch.int32)):
        matcher.fill_next_token_bitmask(bitmask, 1)
        # Any whitespace by default: "{" (id 0) and " " (id 5); row 0 untouched.
        assert int(bitmask[1, 0]) == 0b100001 and int(bitmask[0, 0]) == 0
    flat = np.zeros(1, np.int32)
    matcher.fill_next_token_bitmask(flat)
    assert flat[0] == 0b100001


def test_fill_rejects_bad_bitmasks_without_writing(matcher):
    sentinel = 777
    bad = [
        np.full((2, 1), sentinel, np.int64),  # dtype
        np.full((2, 2), sentinel, np.int32),  # width
        np.full((2, 1, 1), sentinel, np.int32),  # rank
        np.full((2, 2), sentinel, np.int32)[:, :1],  # not contiguous
        torch.full((2, 2), sentinel, dtype=torch.int32)[:, :1],  # not contiguous
        torch.full((2, 1), sentinel, dtype=torch.float32),  # dtype
        np.full((2, 1), sentinel, np.uint32),  # unsigned
    ]
    for bitmask in bad:
        with pytest.raises(xgr.BitmaskError):
            matcher.fill_next_token_bitmask(bitmask)
        assert (np.asarray(bitmask) == sentinel).all()
    readonly = np.full((1, 1), sentinel, np.int32)
    readonly.flags.writeable = False
    with pytest.raises(xgr.BitmaskError):
        matcher.fill_next_token_bitmask(readonly)
    row = np.full((2, 1), sentinel, np.int32)
    with pytest.raises(xgr.BitmaskError, match="index 2"):
        matcher.fill_next_token_bitmask(row, 2)
    with pytest.raises(xgr.BitmaskError):
        matcher.fill_next_token_bitmask([[0]])
    assert (row == sentinel).all()


def test_fill_writes_torch_views_in_place(matcher):
    """A torch tensor is written through its own pointer: views at an offset, 1-D rows and
    subclasses (which go through `Tensor.numpy()`) get exactly the numpy mask."""
    expected = np.zeros(1, np.int32)
    matcher.fill_next_token_bitmask(expected)
    big = torch.zeros(3, 1, dtype=torch.int32)
    matcher.fill_next_token_bitmask(big[1])  # a 1-D view at offset 1
    assert big[:, 0].tolist() == [0, int(expected[0]), 0]
    big.zero_()
    matcher.fill_next_token_bitmask(big[1:], 1)  # a 2-D view at offset 1, its row 1
    assert big[:, 0].tolist() == [0, 0, int(expected[0])]

    class Sub(torch.Tensor):
        pass

    sub = torch.zeros(2, 1, dtype=torch.int32).as_subclass(Sub)
    matcher.fill_next_token_bitmask(sub, 1)
    assert sub[:, 0].tolist() == [0, int(expected[0])]


def test_batch_fill_into_torch_equals_numpy(matcher):
    runner = xgr.BatchGrammarMatcher(2)
    others = [matcher.fork() for _ in range(3)]
    assert others[1].accept_string("{")
    as_numpy = np.zeros((4, 1), np.int32)
    as_torch = torch.zeros(4, 1, dtype=torch.int32)
    runner.batch_fill_next_token_bitmask(others, as_numpy, [2, 0, 3])
    runner.batch_fill_next_token_bitmask(others, as_torch, [2, 0, 3])
    assert np.array_equal(as_torch.numpy(), as_numpy) and as_numpy[1, 0] == 0 and as_numpy[0, 0] != 0


def test_fill_rejects_bad_tensors_without_writing(matcher):
    sentinel = 777
    bad = {
        "dtype int64": torch.full((2, 1), sentinel, dtype=torch.int64),
        "dtype uint32": torch.full((2, 1), sentinel, dtype=torch.uint32),
        "rank 3": torch.full((1, 2, 1), sentinel, dtype=torch.int32),
        "width": torch.full((2, 2), sentinel, dtype=torch.int32),
        "strided rows": torch.full((4, 1), sentinel, dtype=torch.int32)[::2],
        "broadcast rows": torch.full((1, 1), sentinel, dtype=torch.int32).expand(3, 1),
    }
    for what, bitmask in bad.items():
        with pytest.raises(xgr.BitmaskError):
            matcher.fill_next_token_bitmask(bitmask)
        assert (bitmask == sentinel).all(), what
    # Not CPU memory, no strides, no rows, or not int32-aligned: refused before any write.
    with pytest.raises(xgr.BitmaskError, match="CPU"):
        matcher.fill_next_token_bitmask(torch.zeros(2, 1, dtype=torch.int32, device="meta"))
    with pytest.raises(xgr.BitmaskError):
        matcher.fill_next_token_bitmask(torch.zeros(2, 1, dtype=torch.int32).to_sparse())
    with pytest.raises(xgr.BitmaskError, match="index 0"):
        matcher.fill_next_token_bitmask(torch.zeros(0, 1, dtype=torch.int32))
    buffer = bytearray(b"\x55" * 13)
    misaligned = torch.frombuffer(buffer, dtype=torch.int32, offset=1, count=3).reshape(3, 1)
    assert misaligned.data_ptr() % 4 != 0  # a bytearray's buffer is malloc-aligned
    with pytest.raises(xgr.BitmaskError, match="aligned"):
        matcher.fill_next_token_bitmask(misaligned)
    assert buffer == bytearray(b"\x55" * 13)
