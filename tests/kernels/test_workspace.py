"""Buffer reuse across training steps: never while anything uses a buffer, and no effect on
results."""

import numpy as np
import pytest
import torch

import tsrnn.nn
from tsrnn import RNNForecaster
from tsrnn.kernels.common import workspace

pytestmark = pytest.mark.skipif(
    workspace._FREE_STORAGE_USES is None,
    reason="this torch does not expose storage reference counts, so nothing is reused",
)

SHAPE = (3, 4)


def take():
    return workspace.empty(SHAPE, torch.float32)


def test_outside_the_block_every_buffer_is_new():
    a = take()
    ptr = a.data_ptr()
    del a
    kept = [take() for _ in range(4)]  # the freed block may come back from malloc once
    assert len({t.data_ptr() for t in kept}) == 4
    assert ptr not in {t.data_ptr() for t in kept[1:]}


def test_a_released_buffer_is_reused():
    with workspace.reuse_buffers():
        a = take()
        ptr = a.data_ptr()
        del a
        assert take().data_ptr() == ptr


@pytest.mark.parametrize(
    "hold",
    [
        lambda t: t,
        lambda t: t[1:],
        lambda t: t.detach(),
        lambda t: t.view(-1),
        lambda t: t.numpy(),
        lambda t: torch.from_numpy(t.numpy()),
        lambda t: torch.empty(0).set_(t.untyped_storage()),
        lambda t: t.untyped_storage(),
    ],
    ids=["tensor", "slice", "detach", "view", "numpy", "from_numpy", "set_", "storage"],
)
def test_a_buffer_in_use_is_never_handed_out(hold):
    with workspace.reuse_buffers():
        a = take()
        ptr = a.data_ptr()
        kept = hold(a)
        del a
        b = take()
        assert b.data_ptr() != ptr
        del kept, b
        assert take().data_ptr() == ptr  # released: reused again


def test_tensors_saved_by_autograd_are_in_use_until_backward():
    with workspace.reuse_buffers():
        layer = tsrnn.nn.GRU(2, 8)
        x = torch.randn(5, 16, 2)
        out, _ = layer(x)
        ptrs = {out.data_ptr()}
        out2, _ = layer(x)  # the first graph still holds its buffers
        assert out2.data_ptr() not in ptrs
        torch.testing.assert_close(out2, out, rtol=0, atol=0)
        out.sum().backward()
        out2.sum().backward()


def test_the_pool_is_bounded_and_released_after_the_block():
    with workspace.reuse_buffers():
        held = [take() for _ in range(workspace.MAX_PER_SHAPE + 3)]  # all in use at once
        assert len(workspace._local.pool.buffers[(SHAPE, torch.float32)]) == (
            workspace.MAX_PER_SHAPE
        )
        del held
    assert getattr(workspace._local, "pool", None) is None


def test_nested_blocks_restore_the_outer_pool():
    with workspace.reuse_buffers():
        outer = workspace._local.pool
        with workspace.reuse_buffers():
            assert workspace._local.pool is not outer
        assert workspace._local.pool is outer


@pytest.mark.parametrize(
    "params",
    [
        dict(cell="gru"),
        dict(cell="lstm", num_layers=2),
        dict(cell="rnn", bptt=5),  # chunks carry the state: the next chunk must not reuse it
        dict(cell="gru", bptt=5, num_layers=2),
    ],
    ids=["gru", "lstm-2-layers", "rnn-bptt", "gru-bptt-2-layers"],
)
def test_fits_are_identical_with_and_without_reuse(params, monkeypatch):
    rng = np.random.default_rng(0)
    y = np.sin(np.arange(300) / 5) + 0.1 * rng.standard_normal(300)
    kw = dict(
        hidden_size=8,
        window=12,
        batch_size=32,
        max_epochs=3,
        random_state=0,
        early_stopping=False,
        **params,
    )
    handed_out = []
    take = workspace._Pool.take

    def spy(self, shape, dtype):
        t = take(self, shape, dtype)
        handed_out.append(t.data_ptr())
        return t

    with monkeypatch.context() as m:
        m.setattr(workspace._Pool, "take", spy)
        reused = RNNForecaster(**kw).fit(y)
    assert len(set(handed_out)) < len(handed_out) / 4  # most buffers were reused
    monkeypatch.setattr(workspace, "_FREE_STORAGE_USES", None)  # nothing reused
    fresh = RNNForecaster(**kw).fit(y)
    assert [h["train_loss"] for h in reused.history_] == [h["train_loss"] for h in fresh.history_]
    np.testing.assert_array_equal(reused.predict(10), fresh.predict(10))


def test_release_free_drops_only_unused_buffers():
    """What the epoch's last, shorter batch calls: the pool keeps one set of buffers, not one
    per batch size seen."""
    with workspace.reuse_buffers():
        pool = workspace._local.pool
        a, b = take(), take()
        c = workspace.empty((5,), torch.float32)
        del a, c
        workspace.release_free()
        assert set(pool.buffers) == {(SHAPE, torch.float32)}
        assert [t.data_ptr() for t in pool.buffers[(SHAPE, torch.float32)]] == [b.data_ptr()]
        del b
    workspace.release_free()  # outside a block: nothing to do


def test_other_shapes_keep_their_buffers_on_a_miss():
    """Truncated BPTT with a shorter last chunk alternates two shapes every step: both stay
    pooled and are reused."""
    with workspace.reuse_buffers():
        ptrs = []
        for _ in range(3):
            a = take()
            b = workspace.empty((5,), torch.float32)
            ptrs.append((a.data_ptr(), b.data_ptr()))
            del a, b
        assert ptrs[0] == ptrs[1] == ptrs[2]


def test_an_epoch_releases_the_full_batches_buffers_before_its_last_batch(monkeypatch):
    calls = []
    monkeypatch.setattr(workspace, "release_free", lambda: calls.append(1))
    y = np.sin(np.arange(100) / 5)
    RNNForecaster(
        hidden_size=4, window=8, batch_size=32, max_epochs=2, random_state=0, early_stopping=False
    ).fit(y)
    # (92 windows less the validation ones) per epoch: 32 + 32 + a shorter batch
    assert len(calls) == 2
