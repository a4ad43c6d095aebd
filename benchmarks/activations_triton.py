"""Accuracy of the Triton kernels' float32 activations against float64 torch, compiled or not.

The kernels' ``exp``, ``sigmoid`` and ``tanh`` (``tsrnn.kernels.common.triton_utils``) over a
dense grid of float32 inputs, beside Triton's own ``tl.exp`` (compiled: the GPU's
``ex2.approx``) and, on a GPU, libdevice's ``tanh``. Worst and median relative error, and where
the worst is. In the interpreter (``TRITON_INTERPRET=1``, no GPU) ``tl.exp`` is NumPy's exact
``exp``, which is why CI cannot see the compiled ``tl.exp``'s error: run this on a GPU.

Usage::

    python benchmarks/activations_triton.py                     # CUDA
    TRITON_INTERPRET=1 python benchmarks/activations_triton.py  # CPU, Triton's interpreter
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_header, print_header, table, write_json

from tsrnn.kernels.common import triton_utils as tu
from tsrnn.kernels.common.registry import triton_interpreted

BLOCK = 1024


@triton.jit
def _apply(x, y, n, WHICH: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    v = tl.load(x + r, mask=m, other=0.0)
    if WHICH == 0:
        out = tu.exp(v)
    elif WHICH == 1:
        out = tu.sigmoid(v)
    elif WHICH == 2:
        out = tu.tanh(v)
    else:
        out = tl.exp(v)
    tl.store(y + r, out, mask=m)


def _libdevice_tanh_kernel():
    from triton.language.extra import libdevice

    @triton.jit
    def apply(x, y, n, BLOCK: tl.constexpr):
        r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = r < n
        tl.store(y + r, libdevice.tanh(tl.load(x + r, mask=m, other=0.0)), mask=m)

    return apply


def grid(n: int) -> torch.Tensor:
    """float32 inputs in [-20, 20]: half log-spaced magnitudes from 1e-8, half evenly spaced."""
    mags = torch.cat([torch.logspace(-8, 1.3, n // 4, dtype=torch.float64),
                      torch.linspace(0, 20, n // 4, dtype=torch.float64)])
    return torch.cat([mags, -mags]).float()


def errors(got: torch.Tensor, x: torch.Tensor, fn) -> dict:
    want = fn(x.double().cpu())
    rel = (got.double().cpu() - want).abs() / want.abs().clamp_min(1e-300)
    i = int(rel.argmax())
    return {"max_rel": rel.max().item(), "median_rel": rel.median().item(),
            "at": x.cpu()[i].item()}


def main(argv=None) -> None:
    # no options: --help, or a mistyped one, ran the whole benchmark over its results file
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    device = "cpu" if triton_interpreted() else "cuda"
    n = 200_000 if device == "cpu" else 4_000_000
    x = grid(n).to(device)
    x_exp = (x * 4).clamp(-80, 80)  # exp over [-80, 80]
    rows = []
    cases = [("exp (tsrnn)", 0, x_exp, torch.exp), ("sigmoid (tsrnn)", 1, x, torch.sigmoid),
             ("tanh (tsrnn)", 2, x, torch.tanh), ("tl.exp (Triton)", 3, x_exp, torch.exp)]
    for name, which, xs, fn in cases:
        y = torch.empty_like(xs)
        _apply[(triton.cdiv(xs.numel(), BLOCK),)](xs, y, xs.numel(), which, BLOCK)
        rows.append({"function": name, "inputs": xs.numel(), **errors(y, xs, fn)})
    if device == "cuda":
        y = torch.empty_like(x)
        _libdevice_tanh_kernel()[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK)
        rows.append({"function": "tanh (libdevice)", "inputs": x.numel(),
                     **errors(y, x, torch.tanh)})
    info = machine_header()
    info["triton"] = triton.__version__
    info["mode"] = "interpreter (CPU)" if device == "cpu" else "compiled"
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
    print_header(info)
    print(table(rows, [("function", "function", ""), ("inputs", "inputs", ""),
                       ("max_rel", "max rel err", ".2e"), ("at", "at x", ".4g"),
                       ("median_rel", "median rel err", ".2e")]))
    print(f"# float32 epsilon (half an ulp at 1): {2**-24:.2e}")
    path = write_json(f"activations_{device}", {"machine": info, "rows": rows})
    print(f"# written {path.relative_to(Path(__file__).resolve().parent.parent)}")


if __name__ == "__main__":
    main()
