"""The code blocks of README.md and docs/*.md, and how the test suite runs them as written.

A block runs as it is shown. An HTML comment on the line before its fence (invisible on
the rendered page) says how, when it is not the default:

- `<!-- test: continue -->`: the block goes on from the one before it (same process,
  same names); a continuation runs the way its first block does;
- `<!-- test: model -->`: it runs on the embedded model (a test marked `model`);
- `<!-- test: skip REASON -->`: it is not run (it needs a key, a server or an install);
  the reason is required, and Python blocks are still checked for the names they import.

A block with a `title="FILE"` is a file the page's other blocks use: it is written into the
page's working folder first. Python blocks run with `python`, `bash` blocks with
`bash -e`, `console` blocks as their `$ ` lines (see `run`). By default the embedded model cannot
start (`$PARLAY_LOCAL_MODEL` points nowhere), so a block that needs it and is not marked
fails with a clear error instead of running slowly.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

from attrs import frozen

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE = ("python", "bash", "console")
_MARKER = re.compile(r"<!--\s*test:\s*(continue)?\s*(model|skip)?\s*(.*?)\s*-->")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*(.*)$")
_TITLE = re.compile(r'title="([^"]+)"')
# What a block that asks (an approval prompt) reads on its standard input.
ANSWERS = "y\n" * 20


@frozen
class Block:
    page: str
    line: int
    lang: str
    source: str
    mode: str = "run"  # run | model | skip
    continues: bool = False
    reason: str = ""
    title: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's fenced code blocks, with what their markers say."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    n = 0
    while n < len(lines):
        opening = _FENCE.match(lines[n])
        if not opening or not opening.group(2):
            n += 1
            continue
        _indent, lang, info = opening.groups()
        end = n + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        marker = _MARKER.search(lines[n - 1]) if n else None
        title = _TITLE.search(info)
        found.append(
            Block(
                page=str(page.relative_to(ROOT)),
                line=n + 1,
                lang=lang,
                source=textwrap.dedent("\n".join(lines[n + 1 : end])) + "\n",
                mode=(marker.group(2) or "run") if marker else "run",
                continues=bool(marker and marker.group(1)),
                reason=marker.group(3) if marker else "",
                title=title.group(1) if title else None,
            )
        )
        n = end + 1
    return found


def chains(page_blocks: list[Block]) -> Iterator[list[Block]]:
    """Runnable blocks grouped with their continuations (files and skips left out)."""
    chain: list[Block] = []
    for block in page_blocks:
        if block.lang not in RUNNABLE or block.title or block.mode == "skip":
            continue
        if block.continues and chain:
            chain.append(block)
            continue
        if chain:
            yield chain
        chain = [block]
    if chain:
        yield chain


def script(chain: list[Block]) -> list[str]:
    """The command that runs `chain` (not a console block) as written."""
    source = "".join(b.source for b in chain)
    if chain[0].lang == "python":
        return [sys.executable, "-c", source]
    return ["bash", "-eo", "pipefail", "-c", source]


def write_files(page_blocks: list[Block], folder: Path) -> None:
    for block in page_blocks:
        if block.title:
            (folder / block.title).write_text(block.source)


def console_steps(source: str) -> list[tuple[str, list[str]]]:
    """A console block as (command, the output lines shown after it)."""
    steps: list[tuple[str, list[str]]] = []
    for line in source.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps and line.strip():
            steps[-1][1].append(line.strip())
    return steps


def run(chain: list[Block], folder: Path, *, model: bool, timeout: float) -> str:
    """Run `chain` in `folder`; its output, or an AssertionError saying where it failed.

    A console block's commands run one by one. One shown with an `error: ...` line must
    fail with that very message; the others must succeed (what a model answers is not
    compared).
    """
    env = _environment(folder, model=model)
    if chain[0].lang != "console":
        return _run(script(chain), chain[0].where, folder, env, timeout)
    outputs = []
    for block in chain:
        for command, shown in console_steps(block.source):
            errors = [line for line in shown if line.startswith("error:")]
            where = f"{block.where} `{command}`"
            if not errors:
                outputs.append(_run(["bash", "-c", command], where, folder, env, timeout))
                continue
            out = _run(["bash", "-c", command], where, folder, env, timeout, fails=True)
            said = " ".join(out.split())
            for line in errors:
                assert " ".join(line.split()) in said, f"{where} said:\n{out}\nnot:\n{line}"
            outputs.append(out)
    return "".join(outputs)


def _environment(folder: Path, *, model: bool) -> dict[str, str]:
    env = {
        **os.environ,
        "PARLAY_LOG_DB": str(folder / "log.db"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("PARLAY_OPENAI_BASE_URL", None)
    if not model:
        env["PARLAY_LOCAL_MODEL"] = str(folder / "no-model-here-mark-the-block-model.gguf")
    return env


def _run(
    command: list[str],
    where: str,
    folder: Path,
    env: dict[str, str],
    timeout: float,
    *,
    fails: bool = False,
) -> str:
    # A session of its own, so a timeout ends everything the block started (a server
    # it runs, say), not only the shell.
    proc = subprocess.Popen(
        command,
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(ANSWERS, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"{where} did not finish in {timeout:.0f} s") from exc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything it left running
    output = stdout + stderr
    if fails:
        assert proc.returncode != 0, f"{where} was shown failing, but succeeded:\n{output}"
    else:
        assert proc.returncode == 0, f"{where} failed:\n{output[-3000:]}"
    return output
