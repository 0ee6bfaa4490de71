"""How many threads llama.cpp gets: what the machine can give now.

llama.cpp's worker threads spin while they wait for each other, so a thread count equal
to the cores collapses as soon as anything else runs (SmolLM2 on 2 cores: 114 tokens/s
with 2 threads idle, 33 with one core busy elsewhere, against 79 with 1 thread). The
count is therefore the cores this process may run on, less those busy right now,
and at least 1. `$PARLAY_THREADS` (or `LocalBackend(threads=...)`, `--threads`) wins.
"""

from __future__ import annotations

import math
import os
import time

from parlay.errors import ConfigurationError

THREADS_ENV = "PARLAY_THREADS"
# How long the machine is watched to see how busy it is (once, at model start).
SAMPLE_SECONDS = 0.25
# A core counts as free once less than this share of it is busy: a core half used by
# another process is not free (the spinning threads would fight over it).
_FREE_MARGIN = 0.2


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity), or all of them."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _cpu_times(cpus: list[int]) -> tuple[float, float] | None:
    """(busy, total) jiffies summed over `cpus`, from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    wanted = {f"cpu{n}" for n in cpus}
    busy = total = 0.0
    for line in lines:
        fields = line.split()
        if not fields or fields[0] not in wanted:
            continue
        values = [float(v) for v in fields[1:9]]
        idle = values[3] + values[4]  # idle + iowait
        total += sum(values)
        busy += sum(values) - idle
    return (busy, total) if total else None


def busy_cores(cpus: list[int], seconds: float = SAMPLE_SECONDS) -> float:
    """How many of `cpus` other work keeps busy now (watched for `seconds`)."""
    first = _cpu_times(cpus)
    if first is None:
        return _load_average(len(cpus))
    time.sleep(seconds)
    second = _cpu_times(cpus)
    if second is None or second[1] <= first[1]:
        return _load_average(len(cpus))
    share = (second[0] - first[0]) / (second[1] - first[1])
    return max(0.0, min(1.0, share)) * len(cpus)


def _load_average(cores: int) -> float:
    try:
        return min(float(cores), os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0


def threads_from_env() -> int | None:
    """`$PARLAY_THREADS` as a count, None when unset; a clear error when it is no count."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return None
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise ConfigurationError(f"${THREADS_ENV} must be a whole number of 1 or more, got {raw!r}")
    return count


def free_threads(cpus: list[int] | None = None, busy: float | None = None) -> int:
    """The rule: cores this process may use, less those busy now, at least 1."""
    cpus = cpus if cpus is not None else allowed_cpus()
    busy = busy_cores(cpus) if busy is None else busy
    return max(1, math.floor(len(cpus) - busy + _FREE_MARGIN))


def pick_threads(requested: int | None = None) -> int:
    """`requested` if given, else `$PARLAY_THREADS`, else `free_threads()`."""
    if requested is not None:
        if requested < 1:
            raise ConfigurationError(f"threads must be 1 or more, got {requested}")
        return requested
    return threads_from_env() or free_threads()
