"""The L2 cache size read from sysfs (``kernels/common/cpu_caches.py``), on fake sysfs trees:
the sizes Linux writes, the level and type picked, and what is unknown."""

import pytest

from tsrnn.kernels.common import cpu_caches


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512K\n", 512 * 1024),
        ("2048K", 2 << 20),
        ("1M", 1 << 20),
        ("32768", 32768),
        ("1MB", 1 << 20),
        ("", None),
        ("K", None),
        ("12Q", None),
        ("-4K", None),
    ],
)
def test_parse_size(text, size):
    assert cpu_caches.parse_size(text) == size


def _cache(root, index, level, kind, size):
    d = root / f"index{index}"
    d.mkdir(parents=True)
    (d / "level").write_text(f"{level}\n")
    (d / "type").write_text(f"{kind}\n")
    (d / "size").write_text(f"{size}\n")


def test_level_size_takes_the_data_or_unified_cache_of_that_level(tmp_path):
    _cache(tmp_path, 0, 1, "Data", "32K")
    _cache(tmp_path, 1, 1, "Instruction", "32K")
    _cache(tmp_path, 2, 2, "Unified", "512K")
    _cache(tmp_path, 3, 3, "Unified", "32768K")
    assert cpu_caches.level_size(1, tmp_path) == 32 * 1024
    assert cpu_caches.level_size(2, tmp_path) == 512 * 1024
    assert cpu_caches.level_size(3, tmp_path) == 32 << 20


def test_level_size_skips_an_instruction_cache(tmp_path):
    _cache(tmp_path, 0, 2, "Instruction", "64K")
    _cache(tmp_path, 1, 2, "Data", "1M")
    assert cpu_caches.level_size(2, tmp_path) == 1 << 20


def test_level_size_is_unknown_without_sysfs_or_with_what_it_cannot_read(tmp_path):
    assert cpu_caches.level_size(2, tmp_path / "missing") is None
    _cache(tmp_path, 0, 1, "Data", "32K")
    assert cpu_caches.level_size(2, tmp_path) is None  # no level-2 entry
    bad = tmp_path / "bad"
    (bad / "index0").mkdir(parents=True)
    (bad / "index0" / "level").write_text("two\n")
    assert cpu_caches.level_size(2, bad) is None
