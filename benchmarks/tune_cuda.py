"""Sweep the Triton kernels' knobs on a GPU: the fp32 product precision and the resident limit.

For each cell, dtype and (B, T, H) of ``bench_layers.py --device cuda``: the time loop alone
(forward, and forward + backward) under each setting of
``tsrnn.kernels.common.triton_utils.FP32_PRECISION`` (float32 only; ``tf32`` means torch's
``allow_tf32``) and ``RESIDENT_BYTES`` (only the limits that change the plan of a shape), with
the error of outputs and ``d_gx`` against a float64 run of the same kernels (max abs error over
max abs value); ``--cudnn`` adds cuDNN's times. Settings that run out of shared memory are
reported and left out. Compiling is done first in parallel processes (Triton's on-disk cache),
timing afterwards in this one.

Usage (on a CUDA machine, tsrnn importable)::

    python benchmarks/tune_cuda.py                                   # results/tune_cuda.json
    python benchmarks/tune_cuda.py --precisions tf32x3 tf32 --cudnn  # tune_cuda.partial.json
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_header, write_json

SHAPES = [(1, 1024, 64), (16, 1024, 128), (64, 512, 256), (256, 256, 128)]
CELLS = ("rnn", "gru", "lstm")
GATES = {"rnn": 1, "gru": 3, "lstm": 4}


def _knobs(precision, resident_bytes):
    """Set the kernels' knobs in this process (the spawned compilers set their own)."""
    from tsrnn.kernels.common import triton_utils as tu

    tu.RESIDENT_BYTES = resident_bytes
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    if precision != "tf32":
        tu.FP32_PRECISION = precision
    return tu


def settings(precisions, limits):
    """(cell, dtype, B, T, H, precision, resident_bytes), one per distinct plan."""
    out = []
    for dtype, precs in (("float32", precisions), ("bfloat16", ("ieee",))):
        for cell, (B, T, H), prec in itertools.product(CELLS, SHAPES, precs):
            seen = set()
            for limit in limits:
                tu = _knobs(prec, limit)
                p = tu.plan(B, H, GATES[cell], getattr(torch, dtype), torch.device("cuda"))
                if p.RESIDENT not in seen:
                    seen.add(p.RESIDENT)
                    out.append((cell, dtype, B, T, H, prec, limit))
    return out


def _inputs(cell, dtype, B, T, H):
    gen = torch.Generator().manual_seed(0)
    G = GATES[cell]

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).cuda()

    args64 = [rand(T, B, G * H), rand(G * H, H, scale=H**-0.5), rand(G * H, scale=0.1),
              torch.zeros(B, H, dtype=torch.float64, device="cuda"),
              torch.zeros(B, H, dtype=torch.float64, device="cuda") if cell == "lstm" else None]
    args = [None if a is None else a.to(getattr(torch, dtype)) for a in args64]
    return args, args64, rand(T, B, H)


def _fwd_bwd(k, args, go, opts):
    out, hn, cn, saved = k.forward(*args, save=True, **opts)
    cot = (go.to(out.dtype), torch.zeros_like(hn), None if cn is None else torch.zeros_like(cn))
    return out, k.backward(*cot, *args, out, saved, **opts)


def _prepare(setting):
    from tsrnn.kernels import get_kernel

    cell, dtype, B, T, H, prec, limit = setting
    tu = _knobs(prec, limit)
    plan = tu.plan(B, H, GATES[cell], getattr(torch, dtype), torch.device("cuda"))
    opts = {"nonlinearity": "tanh"} if cell == "rnn" else {}
    return get_kernel(cell, "triton"), plan, opts, *_inputs(cell, dtype, B, T, H)


def _compile(todo):
    import triton

    for setting in todo:
        k, _, opts, args, _, go = _prepare(setting)
        try:
            k.forward(*args, save=False, **opts)
            _fwd_bwd(k, args, go, opts)
        except triton.runtime.errors.OutOfResources as e:
            print(setting, e, file=sys.stderr)
    torch.cuda.synchronize()


def _cudnn_times(cell, dtype, B, T, H):
    from triton.testing import do_bench

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    ref = getattr(torch.nn, cell.upper())(1, H).cuda().to(getattr(torch, dtype))
    x = torch.randn(T, B, 1, device="cuda", dtype=getattr(torch, dtype), requires_grad=True)
    with torch.no_grad():
        fwd = do_bench(lambda: ref(x))

    def fwd_bwd():
        out, _ = ref(x)
        torch.autograd.grad(out.float().square().sum(), [x, *ref.parameters()])
    return fwd, do_bench(fwd_bwd)


def _time(todo, cudnn):
    import triton
    from triton.testing import do_bench

    rows, ref_times = [], {}
    for setting in todo:
        cell, dtype, B, T, H, prec, _ = setting
        k, plan, opts, args, args64, go = _prepare(setting)
        try:
            fwd = do_bench(lambda k=k, a=args, o=opts: k.forward(*a, save=False, **o))
        except triton.runtime.errors.OutOfResources as e:
            print(setting, "out of resources:", e, flush=True)
            continue
        fb = do_bench(lambda k=k, a=args, g=go, o=opts: _fwd_bwd(k, a, g, o))
        (out, (d_gx, *_)), (out64, (d_gx64, *_)) = (_fwd_bwd(k, a, go, opts)
                                                    for a in (args, args64))
        r = dict(cell=cell, dtype=dtype, B=B, T=T, H=H, precision=prec, resident=plan.RESIDENT,
                 fwd_ms=fwd, fb_ms=fb,
                 out_err=((out.double() - out64).abs().max() / out64.abs().max()).item(),
                 dgx_err=((d_gx.double() - d_gx64).abs().max() / d_gx64.abs().max()).item())
        line = (f"{cell:4} {dtype:8} B={B:3} T={T:4} H={H:3} {prec:6} "
                f"resident={plan.RESIDENT!s:5} fwd {1e3 * fwd / T:7.2f} us/step  "
                f"f+b {1e3 * fb / T:7.2f} us/step  err {r['out_err']:.1e} {r['dgx_err']:.1e}")
        if cudnn:
            key = (cell, dtype, B, T, H)
            ref_times.setdefault(key, _cudnn_times(*key))
            r["cudnn_fwd_ms"], r["cudnn_fb_ms"] = ref_times[key]
            line += f"  cuDNN x {r['cudnn_fwd_ms'] / fwd:.2f} / {r['cudnn_fb_ms'] / fb:.2f}"
        rows.append(r)
        print(line, flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--precisions", nargs="+", default=["ieee", "tf32x3"],
                   choices=["ieee", "tf32x3", "tf32"])
    p.add_argument("--resident", nargs="+", type=int, default=[64 << 10, 256 << 10],
                   help="RESIDENT_BYTES limits to try")
    p.add_argument("--cudnn", action="store_true", help="time cuDNN beside each setting")
    p.add_argument("--procs", type=int, default=12, help="compiling processes")
    p.add_argument("--phase", choices=["compile", "time", "both"], default="both")
    args = p.parse_args(argv)
    todo = settings(args.precisions, args.resident)
    print(f"{len(todo)} settings", file=sys.stderr)
    if args.phase != "time":
        with mp.get_context("spawn").Pool(args.procs) as pool:
            pool.map(_compile, [todo[i::args.procs] for i in range(args.procs)])
    if args.phase != "compile":
        rows = _time(todo, args.cudnn)
        # the committed results/tune_cuda.json is the default sweep (ieee and tf32x3, both
        # resident limits, no cuDNN): any other writes results/tune_cuda.partial.json
        partial = (
            sorted(args.precisions) != ["ieee", "tf32x3"]
            or sorted(args.resident) != [64 << 10, 256 << 10]
            or args.cudnn
        )
        path = write_json(
            "tune_cuda", {"machine": machine_header(None), "rows": rows}, partial=partial
        )
        print(f"# written {path}")


if __name__ == "__main__":
    main()
