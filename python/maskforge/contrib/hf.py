"""A logits processor for Hugging Face transformers' ``model.generate``."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

import torch
import transformers

from .. import _core
from ..bitmask import allocate_token_bitmask, apply_token_bitmask_inplace


class LogitsProcessor(transformers.LogitsProcessor):
    """Constrains ``model.generate(..., logits_processor=[LogitsProcessor(grammar)])``.

    ``compiled_grammar`` is one grammar for every row of the batch, or a list with one per row.
    A row whose matcher has terminated gets only its stop tokens (so ``generate`` stops it).
    Greedy search and sampling with one sequence per prompt are supported (beams are not).
    """

    def __init__(self, compiled_grammar: Union[_core.CompiledGrammar, Sequence[_core.CompiledGrammar]]):
        grammars = [compiled_grammar] if isinstance(compiled_grammar, _core.CompiledGrammar) else list(compiled_grammar)
        if not grammars:
            raise _core.MaskforgeError("LogitsProcessor needs at least one compiled grammar")
        self.compiled_grammars: List[_core.CompiledGrammar] = grammars
        self.matchers: Optional[List[_core.GrammarMatcher]] = None
        self.batch_size = 0
        self.prefix_len = 0
        self.bitmask: Any = None

    def _start(self, input_ids: torch.Tensor) -> None:
        self.batch_size = int(input_ids.shape[0])
        if len(self.compiled_grammars) == 1:
            grammars = self.compiled_grammars * self.batch_size
        elif len(self.compiled_grammars) == self.batch_size:
            grammars = self.compiled_grammars
        else:
            raise _core.MaskforgeError(
                f"{len(self.compiled_grammars)} grammars for a batch of {self.batch_size} sequences"
            )
        self.matchers = [_core.GrammarMatcher(g) for g in grammars]
        self.prefix_len = int(input_ids.shape[1])
        vocab_size = grammars[0].tokenizer_info.vocab_size
        self.bitmask = allocate_token_bitmask(self.batch_size, vocab_size)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.matchers is None:
            self._start(input_ids)
        else:
            # The token sampled at the previous step is the last column.
            for i, matcher in enumerate(self.matchers):
                if not matcher.is_terminated():
                    token = int(input_ids[i, -1])
                    if not matcher.accept_token(token):
                        raise _core.MatcherError(f"row {i}: the model produced token {token}, which the grammar rejects")
        assert self.matchers is not None
        for i, matcher in enumerate(self.matchers):
            if matcher.is_terminated():
                _allow_only(self.bitmask[i], matcher.stop_token_ids)
            else:
                matcher.fill_next_token_bitmask(self.bitmask, i)
        vocab_size = min(int(scores.shape[-1]), self.bitmask.shape[1] * 32)
        apply_token_bitmask_inplace(scores, self.bitmask.to(scores.device), vocab_size=vocab_size)
        return scores

    def reset(self) -> None:
        """Forgets the batch, for the next ``generate`` call."""
        self.matchers = None


def _allow_only(row: torch.Tensor, token_ids: Sequence[int]) -> None:
    """Sets `row` (one int32 bitmask row) to allow exactly `token_ids`."""
    words = [0] * int(row.shape[0])
    for t in token_ids:
        words[t // 32] |= 1 << (t % 32)
    # Words are int32: bit 31 is the sign bit.
    row.copy_(torch.tensor([w - (1 << 32) if w >= 1 << 31 else w for w in words], dtype=torch.int32))
