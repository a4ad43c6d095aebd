"""Sweep the Triton kernels' launch knobs on a GPU: fp32 dot precision and the resident limit.

For each cell, dtype and (B, T, H) of ``bench_layers.py --device cuda``: the time loop alone
(forward, and forward + backward) under each setting, with cuDNN's times beside it, and the
error against a float64 run (outputs and ``d_gx``, max abs over max abs). Compiling is done
first in parallel processes (Triton's on-disk cache), timing afterwards in one process.

    python benchmarks/tune_cuda.py            # both phases, prints a table, writes JSON
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import multiprocessing as mp
import sys
from pathlib import Path

import torch

SHAPES = [(1, 1024, 64), (16, 1024, 128), (64, 512, 256), (256, 256, 128)]
CELLS = ("rnn", "gru", "lstm")
G = {"rnn": 1, "gru": 3, "lstm": 4}
RESIDENT = (64 * 1024, 256 * 1024)
FP32_PRECISIONS = ("tf32x3",)
CUDNN = False


def combos():
    from tsrnn.kernels.common import triton_utils as tu

    out = []
    for dtype, precisions in ((torch.float32, FP32_PRECISIONS), (torch.bfloat16, ("ieee",))):
        for cell, (B, T, H), prec in itertools.product(CELLS, SHAPES, precisions):
            seen = set()
            for rb in RESIDENT:
                tu.RESIDENT_BYTES = rb
                p = tu.plan(B, H, G[cell], dtype, torch.device("cuda"))
                if p.RESIDENT in seen:
                    continue
                seen.add(p.RESIDENT)
                out.append((cell, str(dtype).split(".")[-1], B, T, H, prec, rb))
    return out


def setup(cell, dtype, B, T, H, prec, rb):
    from tsrnn.kernels import get_kernel
    from tsrnn.kernels.common import triton_utils as tu

    tu.RESIDENT_BYTES = rb
    if not hasattr(tu, "_orig_plan"):
        tu._orig_plan = tu.plan
    tu.plan = lambda *a, **k: dataclasses.replace(tu._orig_plan(*a, **k), precision=prec) \
        if a[3] == torch.float32 else tu._orig_plan(*a, **k)
    k = get_kernel(cell, "triton")
    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)
    gx = torch.randn(T, B, G[cell] * H, generator=gen, dtype=torch.float64)
    w = torch.randn(G[cell] * H, H, generator=gen, dtype=torch.float64) * H**-0.5
    b = torch.randn(G[cell] * H, generator=gen, dtype=torch.float64) * 0.1
    h0 = torch.zeros(B, H, dtype=torch.float64)
    c0 = torch.zeros(B, H, dtype=torch.float64) if cell == "lstm" else None
    go = torch.randn(T, B, H, generator=gen, dtype=torch.float64)
    args64 = [None if a is None else a.cuda() for a in (gx, w, b, h0, c0)]
    args = [None if a is None else a.to(dt) for a in args64]
    opts = {"nonlinearity": "tanh"} if cell == "rnn" else {}
    return k, args, args64, go.cuda(), opts


def fwd_bwd(k, args, go, opts):
    out, hn, cn, saved = k.forward(*args, save=True, **opts)
    cot = (go.to(out.dtype), torch.zeros_like(hn), None if cn is None else torch.zeros_like(cn))
    return out, k.backward(*cot, *args, out, saved, **opts)


def compile_part(part):
    import triton

    todo, = part
    for c in todo:
        k, args, _, go, opts = setup(*c)
        try:
            k.forward(*args, save=False, **opts)
            fwd_bwd(k, args, go, opts)
        except triton.runtime.errors.OutOfResources as e:
            print(c, e, file=sys.stderr)
        torch.cuda.synchronize()
    return len(todo)


def cudnn_times(cell, dtype, B, T, H):
    import triton.testing

    mod = {"rnn": torch.nn.RNN, "gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[cell]
    ref = mod(1, H).cuda().to(getattr(torch, dtype))
    x = torch.randn(T, B, 1, device="cuda", dtype=ref.weight_hh_l0.dtype)
    with torch.no_grad():
        f = triton.testing.do_bench(lambda: ref(x))
    xx = x.clone().requires_grad_(True)

    def fb():
        out, _ = ref(xx)
        torch.autograd.grad(out.float().square().sum(), [xx, *ref.parameters()])
    return f, triton.testing.do_bench(fb)


def time_all(todo):
    import triton.testing

    rows, ref_times = [], {}
    for c in todo:
        cell, dtype, B, T, H, prec, _rb = c
        k, args, args64, go, opts = setup(*c)
        key = (cell, dtype, B, T, H)
        if key not in ref_times:
            ref_times[key] = cudnn_times(*key) if CUDNN else (float("nan"),) * 2
        try:
            f = triton.testing.do_bench(
                lambda k=k, a=args, o=opts: k.forward(*a, save=False, **o))
        except triton.runtime.errors.OutOfResources as e:
            print(c, "out of resources:", e, flush=True)
            continue
        fb = triton.testing.do_bench(lambda k=k, a=args, g=go, o=opts: fwd_bwd(k, a, g, o))
        out, (d_gx, *_) = fwd_bwd(k, args, go, opts)
        out64, (d_gx64, *_) = fwd_bwd(k, args64, go, opts)
        err = (out.double() - out64).abs().max().item() / out64.abs().max().item()
        gerr = (d_gx.double() - d_gx64).abs().max().item() / d_gx64.abs().max().item()
        p = __import__("tsrnn.kernels.common.triton_utils", fromlist=["x"]).plan(
            B, H, G[cell], getattr(torch, dtype), torch.device("cuda"))
        r = dict(cell=cell, dtype=dtype, B=B, T=T, H=H, precision=prec, resident=p.RESIDENT,
                 fwd_ms=f, fb_ms=fb, cudnn_fwd_ms=ref_times[key][0],
                 cudnn_fb_ms=ref_times[key][1], out_err=err, dgx_err=gerr)
        rows.append(r)
        print(f"{cell:4} {dtype:8} B={B:3} T={T:4} H={H:3} {prec:6} res={p.RESIDENT!s:5} "
              f"fwd {1e3 * f / T:7.2f} us/step ({r['cudnn_fwd_ms'] / f:5.2f}x cudnn)  "
              f"f+b {1e3 * fb / T:7.2f} us/step ({r['cudnn_fb_ms'] / fb:5.2f}x)  "
              f"err {err:.1e} {gerr:.1e}", flush=True)
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--procs", type=int, default=12)
    p.add_argument("--out", default="tune_cuda.json")
    p.add_argument("--cudnn", action="store_true", help="time cuDNN beside each setting")
    p.add_argument("--phase", choices=["compile", "time", "both"], default="both")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    global CUDNN
    CUDNN = args.cudnn
    todo = combos()
    print(f"{len(todo)} settings", file=sys.stderr)
    if args.phase != "time":
        parts = [(todo[i::args.procs],) for i in range(args.procs)]
        with mp.get_context("spawn").Pool(args.procs) as pool:
            pool.map(compile_part, parts)
    if args.phase == "compile":
        return
    rows = time_all(todo)
    Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
