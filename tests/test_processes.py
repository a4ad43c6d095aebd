"""Worker processes made by ``multiprocessing`` after the kernels ran in the parent.

Each case runs a script in a fresh interpreter (its own Numba thread pool, started before the
workers are made), with a timeout: a child killed by Numba's fork guard leaves a ``Pool``
waiting forever, which must fail the test, not hang the suite.
"""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import multiprocessing as mp
    import sys
    import threading

    import numpy as np
    import pandas as pd
    import torch

    import tsrnn
    import tsrnn.nn as tnn


    def layer(seed):
        import numba

        torch.manual_seed(seed)
        gru = tnn.GRU(4, 16, batch_first=True)
        x = torch.randn(64, 50, 4, requires_grad=True)
        out = gru(x)[0]
        out.square().sum().backward()
        return (
            out.detach().numpy().tolist(), x.grad.numpy().tolist(),
            gru.weight_hh_l0.grad.numpy().tolist(), numba.get_num_threads(),
        )


    def fit(seed):
        index = pd.date_range("2020-01-01", periods=120, freq="D")
        y = pd.Series(np.sin(np.arange(120) / 5.0), index=index, name="y")
        model = tsrnn.RNNForecaster(
            hidden_size=8, window=14, max_epochs=2, random_state=seed, n_threads=2
        )
        return model.fit(y).predict(3).to_numpy().tolist()


    def layer_in_thread(seed):
        box = []
        worker = threading.Thread(target=lambda: box.append(layer(seed)))
        worker.start()
        worker.join()
        return box[0]


    if __name__ == "__main__":
        work = [(layer, [0, 1]), (fit, [0]), (layer_in_thread, [2])]
        here = [[f(s) for s in seeds] for f, seeds in work]
        with mp.get_context(sys.argv[1]).Pool(2) as pool:
            there = [pool.map(f, seeds) for f, seeds in work]
        for (f, _), a, b in zip(work, here, there):
            if f is fit:
                assert a == b, (f.__name__, a, b)
            else:
                assert [r[:3] for r in a] == [r[:3] for r in b], f.__name__
                print(f.__name__, "threads", sorted({r[3] for r in b}))
        print("same results")
    """
)


def _run(tmp_path, method, env=None):
    script = tmp_path / "workers.py"
    script.write_text(SCRIPT)
    try:
        done = subprocess.run(
            [sys.executable, str(script), method],
            capture_output=True,
            text=True,
            timeout=400,
            env=None if env is None else {**os.environ, **env},
        )
    except subprocess.TimeoutExpired as exc:  # the hang this guards against
        raise AssertionError(f"the {method} pool did not finish: {exc.stderr!r}") from None
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="Windows has no fork")
def test_forked_workers_run_the_kernels_on_one_thread(tmp_path):
    """Forked after a fit and layer calls in the parent (GNU OpenMP's pool started): each worker
    gets the parent's results bit for bit, on one thread (also from a thread it starts)."""
    out = _run(tmp_path, "fork")
    assert "same results" in out
    assert "layer threads [1]" in out
    assert "layer_in_thread threads [1]" in out


def test_spawned_workers_match(tmp_path):
    assert "same results" in _run(tmp_path, "spawn")


@pytest.mark.skipif(sys.platform == "win32", reason="Windows has no fork")
def test_forked_workers_under_numbas_workqueue_layer(tmp_path):
    """Numba's workqueue layer is fork-safe, but torch's GNU OpenMP pool is not: the workers
    waited forever at their first parallel torch op (the layer's input projection) unless
    torch is set to one thread there whatever Numba's layer."""
    assert "same results" in _run(tmp_path, "fork", env={"NUMBA_THREADING_LAYER": "workqueue"})


THREADS_SCRIPT = textwrap.dedent(
    """
    from concurrent.futures import ThreadPoolExecutor

    import numba
    import numpy as np
    import torch

    import tsrnn
    import tsrnn.nn as tnn

    torch.manual_seed(0)
    layer = tnn.GRU(3, 16)
    x = torch.randn(60, 64, 3, requires_grad=True)
    expected = layer(x)[0]

    def call(_):
        out = layer(x)[0]
        out.sum().backward()
        return out.detach()

    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(call, range(8)))
    y = np.sin(np.arange(120) / 3)
    fits = [tsrnn.RNNForecaster(hidden_size=4, max_epochs=2, random_state=0) for _ in range(3)]
    with ThreadPoolExecutor(3) as pool:
        forecasts = list(pool.map(lambda m: m.fit(y).predict(3), fits))
    assert all(torch.equal(o, expected.detach()) for o in outs)
    assert all(np.array_equal(f, forecasts[0]) for f in forecasts)
    print(numba.threading_layer(), "same results")
    """
)


def test_threads_under_numbas_workqueue_layer_take_turns(tmp_path):
    """Numba's workqueue layer (the one that needs no OpenMP or TBB runtime) ends the process
    with SIGABRT, "Concurrent access has been detected", where two threads enter a parallel
    kernel at once: a ThreadPoolExecutor over a layer did (torch.nn's runs). The kernels take
    turns there."""
    script = tmp_path / "threads.py"
    script.write_text(THREADS_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, "NUMBA_THREADING_LAYER": "workqueue"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "workqueue same results" in done.stdout
