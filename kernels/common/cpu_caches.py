"""The size of a core's own cache, for kernels that size their blocks to it.

The GRU's one-pass training kernel keeps what a block of batch rows saves in its forward for
its backward (``kernels/gru/numba_cpu.py``, :func:`~tsrnn.kernels.gru.numba_cpu.train_rows`):
where that fits in the core's L2 cache, the backward reads it from there. Linux publishes the
cache sizes in sysfs (``/sys/devices/system/cpu/cpu0/cache/index*/``), also inside the VMs
and containers this was measured on; where it does not (other systems, a sandbox without
sysfs), the size is unknown and callers keep their default.
"""

from __future__ import annotations

import functools
from pathlib import Path

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size(text: str) -> int | None:
    """Bytes of a sysfs cache size (``'512K'``, ``'2048K'``, ``'1M'``, ``'32768'``), or None
    where it does not read as one."""
    text = text.strip().upper().removesuffix("B")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    digits = text[: len(text) - len(unit)]
    if not digits.isdigit():
        return None
    return int(digits) * _UNITS[unit]


def level_size(level: int, cache_dir: Path = CACHE_DIR) -> int | None:
    """Bytes of the first CPU's level-``level`` data (or unified) cache from sysfs, or None
    where sysfs does not say."""
    try:
        entries = sorted(cache_dir.glob("index*"))
        for entry in entries:
            if int((entry / "level").read_text()) != level:
                continue
            if (entry / "type").read_text().strip() not in ("Data", "Unified"):
                continue
            return parse_size((entry / "size").read_text())
    except (OSError, ValueError):
        return None
    return None


@functools.lru_cache(maxsize=1)
def l2_bytes() -> int | None:
    """The L2 cache of one core, in bytes (None: unknown), read once per process."""
    return level_size(2)
