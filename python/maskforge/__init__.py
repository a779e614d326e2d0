"""maskforge: token masks for grammars, JSON Schema, regexes and tool-calling protocols.

The API has XGrammar's shape, so that for the common path ``import maskforge as xgr`` is the
whole change::

    import maskforge as xgr
    info = xgr.TokenizerInfo.from_huggingface(tokenizer)
    compiler = xgr.GrammarCompiler(info)
    grammar = compiler.compile_json_schema('{"type": "object"}')
    matcher = xgr.GrammarMatcher(grammar)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    xgr.apply_token_bitmask_inplace(logits, bitmask)

Every error is a :class:`MaskforgeError` (a ``ValueError``) carrying the Rust message.
"""

from ._core import (
    BatchGrammarMatcher,
    BitmaskError,
    CompiledGrammar,
    CompileInterruptedError,
    GrammarCompiler,
    GrammarError,
    GrammarMatcher,
    InternalError,
    MaskforgeError,
    MatcherError,
    ProtocolError,
    RegexError,
    SchemaError,
    StructuralTagError,
    TokenizerError,
    TokenizerInfo,
    VocabType,
    __version__,
    protocol_names,
)
from .bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    bitmask_dtype,
    get_bitmask_shape,
    reset_token_bitmask,
)

__all__ = [
    "BatchGrammarMatcher",
    "BitmaskError",
    "CompiledGrammar",
    "CompileInterruptedError",
    "GrammarCompiler",
    "GrammarError",
    "GrammarMatcher",
    "InternalError",
    "MaskforgeError",
    "MatcherError",
    "ProtocolError",
    "RegexError",
    "SchemaError",
    "StructuralTagError",
    "TokenizerError",
    "TokenizerInfo",
    "VocabType",
    "__version__",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_dtype",
    "get_bitmask_shape",
    "protocol_names",
    "reset_token_bitmask",
]
