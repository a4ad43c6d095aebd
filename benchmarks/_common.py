"""Helpers shared by the benchmark scripts: machine header, fixed-width tables, JSON output."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


# The machine's load when the script started (imported first thing), for the header: these
# machines are shared, and a busy one slows the plain loops and torch's layers more than the
# kernels (see README.md).
_LOAD_AT_START = os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def machine_header(threads: int | None = None) -> dict:
    import numba
    import torch

    import tsrnn

    info = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_name(),
        "vectors": _vector_width(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "torch": torch.__version__,
        "numba": numba.__version__,
        "tsrnn": tsrnn.__version__,
    }
    if _LOAD_AT_START is not None:
        info["load"] = f"{_LOAD_AT_START:.2f} at start, {os.getloadavg()[0]:.2f} at end (1 min)"
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _vector_width() -> str:
    """The vector width the Numba kernels are compiled for: the figures of a machine with
    AVX-512 (512-bit vectors, an 8-row register tile) and of one without (256 bits, 4 rows)
    are not comparable (``README.md``)."""
    from tsrnn.kernels.common.numba_simd import VECTOR_BYTES

    return f"{VECTOR_BYTES * 8}-bit ({'AVX-512' if VECTOR_BYTES == 64 else 'AVX2 or less'})"


def print_header(info: dict) -> None:
    for k, v in info.items():
        if v is not None:
            print(f"# {k:<10} {v}")


def table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """Fixed-width table; ``columns`` is (key, title, format spec)."""
    cells = [[title for _, title, _ in columns]]
    for r in rows:
        cells.append([format(r[k], fmt) if r.get(k) is not None else "-" for k, _, fmt in columns])
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(name: str, payload: dict, partial: bool = False) -> Path:
    """Write ``results/<name>.json``; a partial run (a subset of the cases, ``--quick``) writes
    ``results/<name>.partial.json`` instead, so that it never replaces the full run's results
    that the README's tables show."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.partial.json" if partial else RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def _busy_cpu_seconds() -> float | None:
    """CPU seconds every process on the machine has run since boot (``/proc/stat``: user,
    nice, system, irq, softirq, steal), or None where there is no ``/proc/stat``."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class OthersLoad:
    """How many cores other processes kept busy while the ``with`` block ran: the machine's
    busy CPU time over the block (``/proc/stat``) less this process's own (every thread's),
    divided by the block's wall time. A timing taken beside another process's work is not
    the code's: torch's OpenMP threads spin-wait for a core the other process holds, and the
    plain loop's fit took 43-220 s instead of 3.6 s (tsrnn's 0.6 s hardly moved), which
    printed as a 353x "speed-up". ``cores`` is None where ``/proc/stat`` is missing."""

    def __enter__(self):
        self._busy, self._own = _busy_cpu_seconds(), time.process_time()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc):
        wall = time.perf_counter() - self._wall
        busy = _busy_cpu_seconds()
        own = time.process_time() - self._own
        self.cores = (
            None
            if busy is None or self._busy is None or wall <= 0
            else max(0.0, (busy - self._busy - own) / wall)
        )
        return False
