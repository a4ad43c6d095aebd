"""The register-blocked recurrent product against NumPy, at both vector widths."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tsrnn.kernels.common import numba_linalg, numba_simd
from tsrnn.kernels.common.numba_config import njit


@njit
def _product(a, w, out, nr):
    numba_linalg.rows_matmul_add(a, w, out, nr)


def check_rows_matmul_add(dtype, rtol):
    """``out[:nr] += a[:nr] @ w`` for every row count up to 19 (tiles of 8 and 4 rows, single
    rows), rows past ``nr`` untouched; raises AssertionError otherwise."""
    rng = np.random.default_rng(0)
    for K, N in ((1, 3), (7, 40), (64, 192)):
        w = numba_linalg.padded_columns(rng.standard_normal((K, N)).astype(dtype))
        for nr in range(20):
            a = rng.standard_normal((19, K)).astype(dtype)
            out = rng.standard_normal((19, w.shape[1])).astype(dtype)
            want = out.copy()
            want[:nr] += a[:nr].astype(np.float64) @ w.astype(np.float64)
            _product(a, w, out, nr)
            np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * 10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_rows_matmul_add_matches_numpy(dtype):
    check_rows_matmul_add(dtype, 1e-12 if dtype == np.float64 else 1e-5)


def check_rows_do_not_depend_on_tiling(dtype):
    """Every row of a tiled product is bitwise the row computed alone (one chain over ``k``
    in order, whatever the tile): with ``out`` rows of only 2-vector tiles, only 3-vector
    tiles (AVX-512), and both; raises AssertionError otherwise."""
    rng = np.random.default_rng(1)
    L = numba_simd.lanes(np.dtype(dtype))
    for vectors in (2, 4, 6, 10, 12):
        K, N = 37, vectors * L
        w = rng.standard_normal((K, N)).astype(dtype)
        a = rng.standard_normal((19, K)).astype(dtype)
        base = rng.standard_normal((19, N)).astype(dtype)
        for nr in (3, 4, 8, 13, 19):
            out = base.copy()
            _product(a, w, out, nr)
            for r in range(nr):
                alone = base[r : r + 1].copy()
                _product(a[r : r + 1], w, alone, 1)
                np.testing.assert_array_equal(out[r], alone[0], err_msg=f"N={N} nr={nr} row {r}")
            np.testing.assert_array_equal(out[nr:], base[nr:])


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_rows_do_not_depend_on_tiling(dtype):
    check_rows_do_not_depend_on_tiling(dtype)


def test_three_vector_tiles_where_the_columns_allow():
    """At both widths, 3-vector tiles cover as many columns as leave whole 2-vector tiles."""
    expected = {2: 0, 4: 0, 6: 6, 8: 6, 10: 6, 12: 12, 14: 12}
    for vectors, triple in expected.items():
        assert numba_linalg.triple_columns(vectors) == triple, vectors


def test_padding_is_whole_tiles_of_this_machines_vectors():
    lanes32 = numba_simd.VECTOR_BYTES // 4
    assert numba_linalg.padded(1, np.float32) == 2 * lanes32
    assert numba_linalg.padded(2 * lanes32 + 1, np.float32) == 4 * lanes32
    assert numba_linalg.padded(1, np.float64) == lanes32


@pytest.mark.parametrize(
    ("features", "host", "expected"),
    [
        ("+avx2,+fma,+avx512f", "-avx512f", 64),  # NUMBA_CPU_FEATURES decides
        ("+avx2,+fma,-avx512f", "+avx512f", 32),
        (None, "+avx2,+avx512f", 64),  # else the host's, as Numba reports them
        (None, "+avx2,-avx512f", 32),  # (NUMBA_ENABLE_AVX=0 clears the avx ones there)
    ],
)
def test_vector_width_follows_numbas_target(monkeypatch, features, host, expected):
    from numba.core import codegen, config

    monkeypatch.setattr(config, "CPU_FEATURES", features)
    monkeypatch.setattr(codegen, "get_host_cpu_features", lambda: host)
    assert numba_simd._vector_bytes() == expected


AVX2_FEATURES = (
    "+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+cx16,+f16c,+fma,+fxsr,+lzcnt,+mmx,+movbe,+popcnt,"
    "+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+xsave"
)


def test_256_bit_path_on_an_avx2_target(tmp_path):
    """Compiled for an AVX2 CPU (Haswell, its features only), the kernels use 256-bit vectors
    and 4-row tiles of 2 and 3 vectors: the product, the float32 activations (no
    ``vscalefps`` there) and a GRU forward and backward still match. Run in a fresh process,
    since the width is fixed when the kernels are first compiled."""
    code = textwrap.dedent(
        """
        import numpy as np, torch
        from tsrnn.kernels import get_kernel
        from tsrnn.kernels.common import numba_linalg, numba_simd
        sys_path_test = __import__("sys").argv[1]
        __import__("sys").path.insert(0, sys_path_test)
        import test_numba_linalg as t
        import test_activations as a
        assert numba_simd.VECTOR_BYTES == 32 and not numba_linalg.WIDE_TILE
        assert numba_linalg.triple_columns(8) == 6  # 4 x 3 tiles at this width too
        for form in (a._scalar, a._vector, a._group):  # the float32 activations' 256-bit forms
            a.test_float32_activations_match_float64(form)
        a.test_vector_and_scalar_forms_agree(a._group)
        a.test_groups_give_the_vectors_results()
        t.check_rows_matmul_add(np.float32, 1e-5)
        t.check_rows_matmul_add(np.float64, 1e-12)
        t.check_rows_do_not_depend_on_tiling(np.float32)
        gen = torch.Generator().manual_seed(0)
        gx = torch.randn(5, 23, 72, generator=gen, dtype=torch.float64)
        w_hh = torch.randn(72, 24, generator=gen, dtype=torch.float64) / 5
        b_hh, h0 = torch.randn(72, dtype=torch.float64), torch.randn(23, 24, dtype=torch.float64)
        ref, nb = get_kernel("gru", "torch"), get_kernel("gru", "numba")
        r = ref.forward(gx, w_hh, b_hh, h0)
        n = nb.forward(gx, w_hh, b_hh, h0)
        torch.testing.assert_close(n[0], r[0], rtol=1e-10, atol=1e-12)
        g = torch.randn(r[0].shape, generator=gen, dtype=torch.float64)
        want = ref.backward(g, g[-1], None, gx, w_hh, b_hh, h0, None, r[0], ())
        got = nb.backward(g, g[-1], None, gx, w_hh, b_hh, h0, None, n[0], n[3])
        for a, b in zip(got[:3], want[:3]):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
        print("ok")
        """
    )
    env = dict(
        os.environ,
        NUMBA_CPU_NAME="haswell",
        NUMBA_CPU_FEATURES=AVX2_FEATURES,
        NUMBA_CACHE_DIR=str(tmp_path),
    )
    done = subprocess.run(
        [sys.executable, "-c", code, os.path.dirname(__file__)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")
