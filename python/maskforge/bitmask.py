"""Token bitmasks: allocation and application to logits (XGrammar's layout).

A bitmask is an ``int32`` array of shape ``(batch_size, ceil(vocab_size / 32))``: bit
``i % 32`` of word ``i // 32`` of a row allows token ``i``. The helpers return and take torch
tensors when torch is importable, and numpy arrays always; torch is optional.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ._core import BitmaskError

try:  # torch is an optional dependency
    import torch
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None  # type: ignore[assignment]

#: The dtype of bitmasks: ``torch.int32`` when torch is installed, else ``numpy.int32``.
bitmask_dtype: Any = torch.int32 if torch is not None else np.int32


def get_bitmask_shape(batch_size: int, vocab_size: int) -> Tuple[int, int]:
    """The shape of the bitmask of ``batch_size`` rows for ``vocab_size`` tokens."""
    if batch_size < 0 or vocab_size < 0:
        raise BitmaskError(f"batch_size and vocab_size must be >= 0, got {batch_size}, {vocab_size}")
    return (batch_size, (vocab_size + 31) // 32)


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> Any:
    """A bitmask with every token allowed (all bits set): a torch CPU tensor when torch is
    installed, else a numpy array."""
    shape = get_bitmask_shape(batch_size, vocab_size)
    if torch is not None:
        return torch.full(shape, -1, dtype=torch.int32)
    return np.full(shape, -1, dtype=np.int32)


def reset_token_bitmask(bitmask: Any) -> None:
    """Allows every token again (sets all bits), in place."""
    _check_bitmask(bitmask)
    if _is_tensor(bitmask):
        bitmask.fill_(-1)
    else:
        bitmask.fill(-1)


def apply_token_bitmask_inplace(
    logits: Any,
    bitmask: Any,
    *,
    vocab_size: Optional[int] = None,
    indices: Optional[Sequence[int]] = None,
) -> None:
    """Sets ``logits[i, t] = -inf`` for every token ``t`` the bitmask disallows, in place.

    ``logits`` is ``(batch, vocab)`` or ``(vocab,)`` float; ``bitmask`` is ``(batch, words)`` or
    ``(words,)`` int32, both torch (any device, the same one) or both numpy. Without
    ``indices``, row ``i`` of the bitmask applies to row ``i`` of the logits; with them, only
    the rows listed are masked (each with its own bitmask row). Tokens past ``vocab_size``
    (default: the smaller of the logits width and ``32 * words``) are left as they are.
    Everything is checked before anything is written.
    """
    torch_logits = _is_tensor(logits)
    if torch_logits != _is_tensor(bitmask):
        raise BitmaskError("logits and bitmask must both be torch tensors or both numpy arrays")
    _check_bitmask(bitmask)
    logits2 = logits.unsqueeze(0) if torch_logits and logits.dim() == 1 else logits
    if not torch_logits:
        logits2 = logits if logits.ndim == 2 else logits.reshape(1, -1)
        if not np.issubdtype(logits.dtype, np.floating):
            raise BitmaskError(f"logits must be floating point, not {logits.dtype}")
    elif not logits.is_floating_point():
        raise BitmaskError(f"logits must be floating point, not {logits.dtype}")
    mask2 = bitmask.reshape(1, -1) if len(bitmask.shape) == 1 else bitmask
    if len(logits2.shape) != 2:
        raise BitmaskError(f"logits must be 1-D or 2-D, got shape {tuple(logits.shape)}")
    rows, width = int(logits2.shape[0]), int(logits2.shape[1])
    words = int(mask2.shape[1])
    limit = min(width, words * 32) if vocab_size is None else vocab_size
    if limit < 0 or limit > width or limit > words * 32:
        raise BitmaskError(f"vocab_size {limit} exceeds the logits width {width} or the bitmask width {words * 32}")
    row_ids = _rows(indices, rows, int(mask2.shape[0]))
    if torch_logits:
        _apply_torch(logits2, mask2, limit, row_ids)
    else:
        _apply_numpy(logits2, mask2, limit, row_ids)


def _rows(indices: Optional[Sequence[int]], logit_rows: int, mask_rows: int) -> Optional[List[int]]:
    if indices is None:
        if mask_rows != logit_rows:
            raise BitmaskError(f"the bitmask has {mask_rows} rows but the logits have {logit_rows}")
        return None
    rows = [int(i) for i in indices]
    for i in rows:
        if not 0 <= i < min(logit_rows, mask_rows):
            raise BitmaskError(f"index {i} is out of range for {logit_rows} logit rows and {mask_rows} bitmask rows")
    return rows


def _apply_torch(logits: Any, bitmask: Any, limit: int, rows: Optional[List[int]]) -> None:
    if bitmask.device != logits.device:
        bitmask = bitmask.to(logits.device)
    shifts = torch.arange(32, device=bitmask.device, dtype=torch.int32)
    selected = bitmask if rows is None else bitmask[rows]
    allowed = ((selected.unsqueeze(-1) >> shifts) & 1).bool().reshape(selected.shape[0], -1)[:, :limit]
    if rows is None:
        logits[:, :limit].masked_fill_(~allowed, float("-inf"))
    else:
        index = torch.tensor(rows, device=logits.device, dtype=torch.long)
        part = logits[index, :limit].masked_fill(~allowed, float("-inf"))
        logits[index, :limit] = part


def _apply_numpy(logits: np.ndarray, bitmask: np.ndarray, limit: int, rows: Optional[List[int]]) -> None:
    selected = bitmask if rows is None else bitmask[rows]
    # Little-endian words: byte k of word w holds tokens 32w + 8k .. 32w + 8k + 7, low bit first.
    words = np.ascontiguousarray(selected.astype("<i4", copy=False))
    bits = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little")[:, :limit].astype(bool)
    target = slice(None) if rows is None else rows
    block = logits[target, :limit]
    logits[target, :limit] = np.where(bits, block, -np.inf)


def _is_tensor(x: Any) -> bool:
    return torch is not None and isinstance(x, torch.Tensor)


def _check_bitmask(bitmask: Any) -> None:
    if _is_tensor(bitmask):
        if bitmask.dtype != torch.int32:
            raise BitmaskError(f"the bitmask must have dtype int32, not {bitmask.dtype}")
        shape: Tuple[int, ...] = tuple(bitmask.shape)
    elif isinstance(bitmask, np.ndarray):
        if bitmask.dtype != np.int32:
            raise BitmaskError(f"the bitmask must have dtype int32, not {bitmask.dtype}")
        shape = bitmask.shape
    else:
        raise BitmaskError(f"the bitmask must be a numpy array or a torch tensor, not {type(bitmask).__name__}")
    if len(shape) not in (1, 2):
        raise BitmaskError(f"the bitmask must be 1-D or 2-D, got shape {shape}")

