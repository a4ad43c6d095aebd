"""Speed of tsrnn.nn layers against torch.nn, forward and forward+backward, side by side.

CPU (default): tsrnn's Numba kernels vs torch.nn, float32, 2 threads, at the shapes of the
layers issue; correctness is checked before timing and Numba compile time is reported apart.
CUDA (``--device cuda``): tsrnn's Triton kernels vs torch.nn (cuDNN), float32 and bfloat16,
timed with ``triton.testing.do_bench``.

Usage::

    python benchmarks/bench_layers.py                 # CPU table, writes results/layers_cpu.json
    python benchmarks/bench_layers.py --device cuda   # GPU table, writes results/layers_cuda.json
    python benchmarks/bench_layers.py --device cuda --kernels-only   # time loop alone
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_header, print_header, table, write_json

import tsrnn.nn as tnn

CELLS = {"rnn": (tnn.RNN, torch.nn.RNN), "gru": (tnn.GRU, torch.nn.GRU),
         "lstm": (tnn.LSTM, torch.nn.LSTM)}
CPU_SHAPES = [(1, 256, 64), (32, 256, 64), (64, 48, 32), (256, 48, 64), (128, 168, 128)]
CUDA_SHAPES = [(1, 1024, 64), (16, 1024, 128), (64, 512, 256), (256, 256, 128)]


def _pair(cell, H, device, dtype, backend):
    ours_cls, ref_cls = CELLS[cell]
    ref = ref_cls(1, H).to(device=device, dtype=dtype)
    ours = ours_cls(1, H, backend=backend).to(device=device, dtype=dtype)
    ours.load_state_dict(ref.state_dict())
    return ours, ref


def _fwd(module, x):
    def run():
        with torch.no_grad():
            return module(x)
    return run


def _fwd_bwd(module, x):
    params = list(module.parameters())

    def run():
        xx = x.detach().requires_grad_(True)
        out, _ = module(xx)
        grads = torch.autograd.grad(out.float().square().sum(), [xx, *params])
        return grads
    return run


def check(ours, ref, x, rtol, atol):
    """Outputs and all gradients of ours vs ref before any timing.

    bfloat16: over hundreds of steps both sides drift from the exact result by many bf16 ulp,
    differently, so each is compared with a float32 copy of the reference instead, and ours
    must stay within twice the reference's own error (plus ``atol``).
    """
    if x.dtype == torch.bfloat16:
        exact = copy.deepcopy(ref).float()
        x32 = x.float()
        pairs = [(_fwd(ours, x)()[0], _fwd(ref, x)()[0], _fwd(exact, x32)()[0])]
        pairs += zip(_fwd_bwd(ours, x)(), _fwd_bwd(ref, x)(), _fwd_bwd(exact, x32)())
        for i, (a, b, e) in enumerate(pairs):
            err_ours = (a.float() - e).abs().max().item()
            err_ref = (b.float() - e).abs().max().item()
            if err_ours > 2 * err_ref + atol * e.abs().max().item():
                raise AssertionError(
                    f"bfloat16 {'output' if i == 0 else f'gradient {i}'}: tsrnn is "
                    f"{err_ours:.3g} from float32, torch.nn {err_ref:.3g}")
        return
    o1, o2 = _fwd(ours, x)()[0], _fwd(ref, x)()[0]
    torch.testing.assert_close(o1.float(), o2.float(), rtol=rtol, atol=atol)
    for g1, g2 in zip(_fwd_bwd(ours, x)(), _fwd_bwd(ref, x)()):
        torch.testing.assert_close(g1.float(), g2.float(), rtol=rtol * 10, atol=atol * 10)


def time_cpu(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_cpu(args):
    torch.set_num_threads(args.threads)
    import numba

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    import tsrnn

    t0 = time.perf_counter()
    tsrnn.warmup(dtypes=("float32",))
    compile_s = time.perf_counter() - t0
    rows = []
    for cell in args.cells:
        for B, T, H in CPU_SHAPES:
            torch.manual_seed(0)
            ours, ref = _pair(cell, H, "cpu", torch.float32, "numba")
            x = torch.randn(T, B, 1)
            check(ours, ref, x, rtol=1e-4, atol=1e-5)
            repeat = max(3, min(args.repeat, int(2e6 // (B * T * H) + 3)))
            # Alternate the two so drifting machine load hits both alike.
            f_ref, f_our, fb_ref, fb_our = [], [], [], []
            for _ in range(3):
                f_ref.append(time_cpu(_fwd(ref, x), repeat))
                f_our.append(time_cpu(_fwd(ours, x), repeat))
                fb_ref.append(time_cpu(_fwd_bwd(ref, x), repeat))
                fb_our.append(time_cpu(_fwd_bwd(ours, x), repeat))
            r = dict(cell=cell, B=B, T=T, H=H,
                     fwd_torch_ms=1e3 * min(f_ref), fwd_tsrnn_ms=1e3 * min(f_our),
                     fb_torch_ms=1e3 * min(fb_ref), fb_tsrnn_ms=1e3 * min(fb_our))
            r["fwd_speedup"] = r["fwd_torch_ms"] / r["fwd_tsrnn_ms"]
            r["fb_speedup"] = r["fb_torch_ms"] / r["fb_tsrnn_ms"]
            r["fwd_us_per_step"] = 1e3 * r["fwd_tsrnn_ms"] / T
            r["fb_us_per_step"] = 1e3 * r["fb_tsrnn_ms"] / T
            rows.append(r)
            print(f"  {cell} B={B} T={T} H={H}: fwd x{r['fwd_speedup']:.2f}, "
                  f"fwd+bwd x{r['fb_speedup']:.2f}", file=sys.stderr)
    return rows, {"numba_compile_or_cache_load_s": compile_s}


def bench_cuda(args):
    import triton.testing

    # Full fp32 on both sides: cuDNN RNNs follow cudnn.allow_tf32, which defaults to True.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for cell in args.cells:
            for B, T, H in CUDA_SHAPES:
                torch.manual_seed(0)
                ours, ref = _pair(cell, H, "cuda", dtype, "triton")
                x = torch.randn(T, B, 1, device="cuda", dtype=dtype)
                tol = (1e-2, 1e-2) if dtype == torch.bfloat16 else (1e-3, 1e-4)
                check(ours, ref, x, *tol)
                r = dict(cell=cell, dtype=str(dtype).replace("torch.", ""), B=B, T=T, H=H)
                r["fwd_torch_ms"] = triton.testing.do_bench(_fwd(ref, x))
                r["fwd_tsrnn_ms"] = triton.testing.do_bench(_fwd(ours, x))
                r["fb_torch_ms"] = triton.testing.do_bench(_fwd_bwd(ref, x))
                r["fb_tsrnn_ms"] = triton.testing.do_bench(_fwd_bwd(ours, x))
                r["fwd_speedup"] = r["fwd_torch_ms"] / r["fwd_tsrnn_ms"]
                r["fb_speedup"] = r["fb_torch_ms"] / r["fb_tsrnn_ms"]
                r["fwd_us_per_step"] = 1e3 * r["fwd_tsrnn_ms"] / T
                r["fb_us_per_step"] = 1e3 * r["fb_tsrnn_ms"] / T
                rows.append(r)
    return rows, {}


def _kernel_fwd(k, args, opts):
    def run():
        return k.forward(*args, save=False, **opts)
    return run


def _kernel_fwd_bwd(k, args, cotangents, opts):
    def run():
        out, _, _, saved = k.forward(*args, save=True, **opts)
        return k.backward(*cotangents, *args, out, saved, **opts)
    return run


def bench_cuda_kernels(args):
    """Triton kernels alone (the time loop: no input projection, no autograd, no dW matmul)
    vs torch.nn (cuDNN), forward and forward+backward, timed with triton.testing.do_bench."""
    import torch.nn.functional as F
    import triton.testing

    from tsrnn.kernels import get_kernel

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for cell in args.cells:
            k = get_kernel(cell, "triton")
            opts = {"nonlinearity": "tanh"} if cell == "rnn" else {}
            for B, T, H in CUDA_SHAPES:
                torch.manual_seed(0)
                _, ref = _pair(cell, H, "cuda", dtype, "triton")
                x = torch.randn(T, B, 1, device="cuda", dtype=dtype)
                with torch.no_grad():
                    gx = F.linear(x, ref.weight_ih_l0, ref.bias_ih_l0).contiguous()
                h0 = torch.zeros(B, H, device="cuda", dtype=dtype)
                c0 = torch.zeros_like(h0) if cell == "lstm" else None
                kargs = (gx, ref.weight_hh_l0.detach(), ref.bias_hh_l0.detach(), h0, c0)
                out = _kernel_fwd(k, kargs, opts)()[0]
                tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
                torch.testing.assert_close(out.float(), _fwd(ref, x)()[0].float(),
                                           rtol=tol, atol=tol)
                cot = (torch.randn_like(out), torch.zeros_like(h0),
                       None if c0 is None else torch.zeros_like(h0))
                r = dict(cell=cell, dtype=str(dtype).replace("torch.", ""), B=B, T=T, H=H)
                r["fwd_torch_ms"] = triton.testing.do_bench(_fwd(ref, x))
                r["fwd_tsrnn_ms"] = triton.testing.do_bench(_kernel_fwd(k, kargs, opts))
                r["fb_torch_ms"] = triton.testing.do_bench(_fwd_bwd(ref, x))
                r["fb_tsrnn_ms"] = triton.testing.do_bench(_kernel_fwd_bwd(k, kargs, cot, opts))
                r["fwd_speedup"] = r["fwd_torch_ms"] / r["fwd_tsrnn_ms"]
                r["fb_speedup"] = r["fb_torch_ms"] / r["fb_tsrnn_ms"]
                r["fwd_us_per_step"] = 1e3 * r["fwd_tsrnn_ms"] / T
                r["fb_us_per_step"] = 1e3 * r["fb_tsrnn_ms"] / T
                rows.append(r)
    return rows, {"tsrnn_side": "Triton kernels' time loop only"}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--kernels-only", action="store_true",
                   help="CUDA: time the Triton kernels' time loop alone, not the whole layer")
    args = p.parse_args(argv)
    # refused before any work: each of these wrote a mislabelled or duplicated full table
    if args.kernels_only and args.device != "cuda":
        p.error("--kernels-only times the Triton kernels: it needs --device cuda")
    if len(set(args.cells)) != len(args.cells):
        p.error(f"--cells names a cell twice: {' '.join(args.cells)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda needs a CUDA GPU, and torch finds none here")
    info = machine_header(args.threads if args.device == "cpu" else None)
    if args.device == "cuda":
        rows, extra = bench_cuda_kernels(args) if args.kernels_only else bench_cuda(args)
    else:
        rows, extra = bench_cpu(args)
    print_header(info | extra)
    cols = [("cell", "cell", "s")]
    if args.device == "cuda":
        cols.append(("dtype", "dtype", "s"))
    cols += [("B", "B", "d"), ("T", "T", "d"), ("H", "H", "d"),
             ("fwd_torch_ms", "fwd torch ms", ".3f"), ("fwd_tsrnn_ms", "fwd tsrnn ms", ".3f"),
             ("fwd_speedup", "fwd x", ".2f"), ("fwd_us_per_step", "fwd us/step", ".2f"),
             ("fb_torch_ms", "f+b torch ms", ".3f"), ("fb_tsrnn_ms", "f+b tsrnn ms", ".3f"),
             ("fb_speedup", "f+b x", ".2f"), ("fb_us_per_step", "f+b us/step", ".2f")]
    print(table(rows, cols))
    suffix = "_kernels" if args.kernels_only else ""
    # the committed tables are every cell, 2 threads, 20 repeats: anything else is partial
    partial = set(args.cells) != set(CELLS) or args.threads != 2 or args.repeat != 20
    path = write_json(
        f"layers_{args.device}{suffix}", {"machine": info | extra, "rows": rows}, partial=partial
    )
    print(f"# written {path}")


if __name__ == "__main__":
    main()
