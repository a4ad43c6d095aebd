"""Cache-line-aligned arrays for the kernels (kernels/common/aligned.py)."""

import numpy as np
import pytest
import torch

from tsrnn.kernels.common import aligned, numba_grads, numba_head, numba_linalg
from tsrnn.kernels.common.numba_config import njit
from tsrnn.kernels.gru import numba_cpu as gru_cpu

SHAPES = [(0,), (1,), (5,), (3, 7), (16, 192), (0, 4), (96, 16, 64), (2, 3, 5)]


def _address(a) -> int:
    return a.__array_interface__["data"][0]


@njit
def _jitted(shape, like, zero, pad):
    # a first allocation of an odd size moves the allocator off a line for the next one
    np.empty(pad, dtype=like.dtype)[:] = 1
    a = aligned.zeros(shape, like) if zero else aligned.empty(shape, like)
    a[...] = 7  # every element writable
    b = aligned.zeros(shape, like)
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("zero", [False, True], ids=["empty", "zeros"])
def test_jitted_arrays_start_on_a_cache_line(dtype, zero):
    like = np.zeros(1, dtype=dtype)
    for shape in SHAPES:
        for pad in (1, 3, 8, 11):
            a, b = _jitted(shape, like, zero, pad)
            assert a.shape == shape and b.shape == shape
            assert a.dtype == dtype and a.flags.c_contiguous
            assert _address(a) % aligned.LINE == 0, (shape, pad)
            assert _address(b) % aligned.LINE == 0, (shape, pad)
            np.testing.assert_array_equal(a, np.full(shape, 7, dtype=dtype))
            np.testing.assert_array_equal(b, np.zeros(shape, dtype=dtype))
            assert not np.shares_memory(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_numpy_arrays_start_on_a_cache_line(dtype):
    for shape in SHAPES:
        for pad in range(4):  # shift where NumPy's own allocations end
            keep = np.empty(pad * 3 + 1, dtype=np.int8)
            e, z = aligned.empty_array(shape, dtype), aligned.zeros_array(shape, dtype)
            for a in (e, z):
                assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous
                # (NumPy gives an empty array a pointer of its own; nothing is loaded from it)
                assert a.size == 0 or _address(a) % aligned.LINE == 0, (shape, pad)
            np.testing.assert_array_equal(z, np.zeros(shape, dtype=dtype))
            del keep


def test_aligned_view_keeps_aligned_data_and_copies_the_rest():
    flat = torch.arange(100, dtype=torch.float32)  # torch's allocator: 64-byte aligned
    whole = flat[:64].view(4, 16)
    view = aligned.aligned_view(whole)
    assert _address(view) == whole.data_ptr()  # no copy
    for offset in (1, 3, 8, 16):  # a parameter's view into a flat buffer: 4 * offset bytes in
        part = flat[offset : offset + 48].view(3, 16)
        view = aligned.aligned_view(part)
        assert _address(view) % aligned.LINE == 0
        np.testing.assert_array_equal(view, part.numpy())
        if part.data_ptr() % aligned.LINE:
            assert not np.shares_memory(view, flat.numpy())
    strided = torch.arange(60, dtype=torch.float64).view(6, 10)[:, ::2]  # made contiguous
    view = aligned.aligned_view(strided)
    assert view.flags.c_contiguous and _address(view) % aligned.LINE == 0
    np.testing.assert_array_equal(view, strided.numpy())


def test_kernel_inputs_laid_out_on_the_python_side_are_aligned():
    w = torch.randn(64, 200)[1:, 3:]  # odd strides and offset
    assert _address(numba_linalg.padded_columns(w)) % aligned.LINE == 0
    _, _, part = numba_grads.plan(256, 4, 64, 192, np.float32, True, 16)
    assert _address(part) % aligned.LINE == 0
    head = (torch.randn(80)[5:69].view(1, 64), torch.randn(3, 2, 1))
    w_o, _, hacc = numba_head.head_backward_args(head, 4, 64, np.float32)
    assert _address(w_o) % aligned.LINE == 0 and _address(hacc) % aligned.LINE == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_gru_weights_laid_out_in_the_kernel_are_aligned(dtype):
    H, I = 20, 3
    flat = torch.randn(1 + 3 * H * (I + H + 2), dtype=dtype)[1:]  # views 4 or 8 bytes off
    w_ih = flat[: 3 * H * I].view(3 * H, I)
    w_hh = flat[3 * H * I : 3 * H * (I + H)].view(3 * H, H)
    b_ih = flat[3 * H * (I + H) : 3 * H * (I + H + 1)]
    b_hh = flat[3 * H * (I + H + 1) :]
    np_dtype = w_hh.numpy().dtype
    outs = gru_cpu._kernel_weights(
        w_ih.numpy(), b_ih.numpy(), w_hh.numpy(), b_hh.numpy(),
        numba_linalg.padded(3 * H, np_dtype), numba_linalg.padded(H, np_dtype),
    )
    for a in outs:
        assert _address(a) % aligned.LINE == 0


def test_one_pass_gru_results_do_not_depend_on_where_the_head_weights_lie():
    """The head's weight as a view a few bytes into a flat buffer (as in a fit) gives the same
    results, bit for bit, as the same values in an aligned tensor."""
    T, B, I, H = 6, 8, 3, 32
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(T, B, I, generator=g), torch.randn(T, B, 1, generator=g)
    w_ih, w_hh = torch.randn(3 * H, I, generator=g) * 0.3, torch.randn(3 * H, H, generator=g) * 0.3
    b_ih, b_hh = torch.randn(3 * H, generator=g), torch.randn(3 * H, generator=g)
    h0 = torch.randn(B, H, generator=g)
    buf = torch.randn(H + 2, generator=g)
    w_off, b_off = buf[1 : H + 1].view(1, H), buf[H + 1 :]  # 4 bytes off a line
    assert w_off.data_ptr() % aligned.LINE
    w_al, b_al = w_off.clone(), b_off.clone()
    a = gru_cpu.train_head(x, w_ih, b_ih, w_hh, b_hh, h0, w_off, b_off, y, 0.5)
    b = gru_cpu.train_head(x, w_ih, b_ih, w_hh, b_hh, h0, w_al, b_al, y, 0.5)
    for u, v in zip(a, b):
        if u is None:
            assert v is None
        else:
            torch.testing.assert_close(u, v, rtol=0, atol=0)
