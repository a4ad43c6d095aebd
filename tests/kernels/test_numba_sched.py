"""Chunks handed out one at a time from a shared counter (kernels/common/numba_sched.py)."""

import numba
import numpy as np
import pytest
from numba import prange

from tsrnn.kernels.common import numba_sched
from tsrnn.kernels.common.numba_config import njit, njit_parallel


@njit
def _take(taken, n):
    got = np.empty(n, dtype=np.int64)
    for i in range(n):
        got[i] = numba_sched.next_chunk(taken)
    return got


def test_next_chunk_counts_up_from_the_counter():
    taken = np.zeros(1, dtype=np.int64)
    np.testing.assert_array_equal(_take(taken, 5), np.arange(5))
    assert taken[0] == 5
    np.testing.assert_array_equal(_take(taken, 2), [5, 6])


@njit_parallel
def _hand_out(chunks, threads, seen, by):
    taken = np.zeros(1, dtype=np.int64)
    for w in prange(numba_sched.workers(chunks, threads)):
        c = numba_sched.next_chunk(taken)
        while c < chunks:
            seen[c] += 1
            by[c] = w
            acc = 0.0  # a little work, so that the threads overlap
            for k in range(200 + 50 * (c % 7)):
                acc += k * 0.5
            seen[c] += acc < 0
            c = numba_sched.next_chunk(taken)


@pytest.mark.parametrize("chunks", [0, 1, 3, 16, 4000])
def test_every_chunk_is_handed_out_exactly_once(chunks):
    threads = min(2, numba.config.NUMBA_NUM_THREADS)
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        for _ in range(20):  # the threads race for the counter differently each time
            seen = np.zeros(chunks, dtype=np.int64)
            by = np.full(chunks, -1, dtype=np.int64)
            _hand_out(chunks, numba.get_num_threads(), seen, by)
            np.testing.assert_array_equal(seen, np.ones(chunks, dtype=np.int64))
            assert set(by.tolist()) <= set(range(threads))
    finally:
        numba.set_num_threads(previous)


def test_one_worker_per_thread_and_never_more_than_the_chunks():
    assert numba_sched.workers.py_func(16, 2) == 2
    assert numba_sched.workers.py_func(1, 2) == 1
    assert numba_sched.workers.py_func(0, 2) == 1  # a loop that takes nothing
    assert numba_sched.workers.py_func(5, 1) == 1
