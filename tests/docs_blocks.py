"""The code blocks of README.md and docs/*.md, and how the test suite runs them as written.

A block runs as it is shown. An HTML comment on the line before its fence (invisible on
the rendered page) says how, when it is not the default:

- `<!-- test: continue -->`: the block goes on from the one before it (same process,
  same names); a continuation runs the way its first block does;
- `<!-- test: model -->`: it runs on the embedded model (a test marked `model`);
- `<!-- test: model expects "5555" -->`: it runs on the embedded model, and its answer
  must carry each quoted value (one or more, e.g. `expects "shipped" "not found"`; also
  after `continue`). A value is a tool's result (a number, a status) or the one fact an
  answer cannot do without (`Paris`), never a model's wording: the examples show a 135M
  model, whose sentences vary. Only values that held in repeated runs (fresh processes,
  greedy decoding) are asserted, since a flaky check is worse than none. It is looked for in
  what the block prints on stdout, leaving out lines that print a `ToolResult` (an
  example that prints `answer.steps` shows the result there whatever the answer says;
  `--tools-debug` writes to stderr). The page shows the reader the same value, in the
  block (a comment such as `# The answer is 5555.`, or a console block's output lines)
  or in the next code block on the page when that is a `text` block (its output);
- `<!-- test: skip REASON -->`: it is not run (it needs a key, a server or an install);
  the reason is required, and Python blocks are still checked for the names they import.

A block with a `title="FILE"` is a file the page's other blocks use: it is written into the
page's working folder first. Python blocks run with `python`, `bash` blocks with
`bash -e`, `console` blocks as their `$ ` lines (see `run`). A Python block reads `y` lines
on stdin (the answers to an `input()`); a shell block reads nothing, so `parlay prompt
"TEXT"` sees only its argument, as on a terminal. By default the embedded model cannot
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
from itertools import pairwise
from pathlib import Path

from attrs import evolve, frozen

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE = ("python", "bash", "console")
_MARKER = re.compile(r"<!--\s*test:\s*(continue)?\s*(model|skip)?\s*(.*?)\s*-->")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*(.*)$")
_TITLE = re.compile(r'title="([^"]+)"')
_EXPECTS = re.compile(r'^expects((?:\s+"[^"]+")+)$')
_QUOTED = re.compile(r'"([^"]+)"')
# What a Python block that asks (`input()`, an approval prompt) reads on its standard input.
# A shell block reads nothing, as from a terminal where nothing is piped: were it given
# these lines, `parlay prompt "TEXT"` would take them for piped text and prefix its prompt.
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
    expects: tuple[str, ...] = ()  # values its answer must carry (see the module's doc)
    shows: str = ""  # the `text` block right after it: the output a reader should expect

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
        said = marker.group(3) if marker else ""
        expects = _EXPECTS.match(said)
        found.append(
            Block(
                page=str(page.relative_to(ROOT) if page.is_relative_to(ROOT) else page),
                line=n + 1,
                lang=lang,
                source=textwrap.dedent("\n".join(lines[n + 1 : end])) + "\n",
                mode=(marker.group(2) or "run") if marker else "run",
                continues=bool(marker and marker.group(1)),
                reason="" if expects else said,
                title=title.group(1) if title else None,
                expects=tuple(_QUOTED.findall(expects.group(1))) if expects else (),
            )
        )
        n = end + 1
    return _with_output_shown(found)


def _with_output_shown(found: list[Block]) -> list[Block]:
    """Each block given the `text` block that comes next on the page (prose between them
    allowed, no other code block): the output the page shows for it."""
    shown = list(found)
    for n, (block, after) in enumerate(pairwise(found)):
        if after.lang == "text" and block.lang != "text":
            shown[n] = evolve(block, shows=after.source)
    return shown


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
    """Run `chain` in `folder`; its standard output, or an AssertionError saying where it
    failed.

    A console block's commands run one by one. One shown with an `error: ...` line must
    fail with that very message; the others must succeed (what a model answers is checked
    only for the values a block `expects`, see `missing_from_answer`).
    """
    env = _environment(folder, model=model)
    if chain[0].lang != "console":
        stdin = ANSWERS if chain[0].lang == "python" else ""
        return _run(script(chain), chain[0].where, folder, env, timeout, stdin=stdin)[0]
    outputs = []
    for block in chain:
        for command, shown in console_steps(block.source):
            errors = [line for line in shown if line.startswith("error:")]
            where = f"{block.where} `{command}`"
            if not errors:
                outputs.append(_run(["bash", "-c", command], where, folder, env, timeout)[0])
                continue
            out, err = _run(["bash", "-c", command], where, folder, env, timeout, fails=True)
            said = " ".join((out + err).split())
            for line in errors:
                assert " ".join(line.split()) in said, f"{where} said:\n{out}{err}\nnot:\n{line}"
            outputs.append(out)
    return "".join(outputs)


def answer_lines(stdout: str) -> str:
    """What a block printed, less the lines that print a `ToolResult`: a value there is the
    tool's, whatever the model then answered."""
    return "\n".join(line for line in stdout.splitlines() if "ToolResult(" not in line)


def missing_from_answer(chain: list[Block], stdout: str) -> list[str]:
    """The values the chain's blocks expect that its answer does not carry."""
    answer = answer_lines(stdout)
    return [value for block in chain for value in block.expects if value not in answer]


def _environment(folder: Path, *, model: bool) -> dict[str, str]:
    env = {
        **os.environ,
        "PARLAY_LOG_DB": str(folder / "log.db"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("PARLAY_OPENAI_BASE_URL", None)
    if env.get("PYTHONPATH"):
        # Blocks run in `folder`: `PYTHONPATH=src` must still name this checkout's code,
        # not whatever parlay the environment has installed.
        paths = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths if p)
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
    stdin: str = "",
) -> tuple[str, str]:
    """Run `command`; its standard output and error."""
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
        stdout, stderr = proc.communicate(stdin, timeout=timeout)
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
    return stdout, stderr
