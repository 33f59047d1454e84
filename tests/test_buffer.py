import numpy as np
import pytest
import torch

from td3_lib import Batch, ReplayBuffer


def _fill(buf, n, start=0, terminal_every=0):
    """Transition i: obs i, action -i, reward i, next_obs i + 1; terminal when i is a multiple of terminal_every."""
    for i in range(start, start + n):
        terminated = bool(terminal_every) and i % terminal_every == 0
        buf.add(np.full(3, i), np.full(2, -i), float(i), np.full(3, i + 1), terminated=terminated)


def test_wraparound_overwrites_oldest():
    buf = ReplayBuffer(3, 2, capacity=4)
    _fill(buf, 6)  # transitions 0..5; 0 and 1 overwritten by 4 and 5
    assert len(buf) == 4 and buf.ptr == 2
    assert buf.reward.squeeze(1).tolist() == [4.0, 5.0, 2.0, 3.0]
    assert buf.obs[:, 0].tolist() == [4.0, 5.0, 2.0, 3.0]
    assert buf.next_obs[:, 0].tolist() == [5.0, 6.0, 3.0, 4.0]


def test_terminated_is_stored_not_truncated():
    buf = ReplayBuffer(1, 1, capacity=3)
    buf.add([0.0], [0.0], 1.0, [1.0], terminated=True)   # a real terminal state
    buf.add([1.0], [0.0], 1.0, [2.0], terminated=False)  # a time-limit truncation: still bootstraps
    assert buf.not_done[:2].squeeze(1).tolist() == [0.0, 1.0]


def test_sample_shapes_device_and_only_filled_part():
    buf = ReplayBuffer(3, 2, capacity=100)
    _fill(buf, 10)
    batch = buf.sample(64, generator=torch.Generator().manual_seed(0))
    assert isinstance(batch, Batch)
    assert batch.obs.shape == (64, 3) and batch.action.shape == (64, 2)
    assert batch.reward.shape == (64, 1) and batch.not_done.shape == (64, 1)
    assert batch.obs.device == buf.device and batch.obs.dtype == torch.float32
    assert batch.reward.max().item() <= 9.0  # never the zeros past the filled part
    torch.testing.assert_close(batch.next_obs[:, 0], batch.obs[:, 0] + 1)  # rows stay together


def test_same_generator_same_batch():
    buf = ReplayBuffer(3, 2, capacity=50)
    _fill(buf, 50)
    a = buf.sample(8, generator=torch.Generator().manual_seed(5))
    b = buf.sample(8, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(a.obs, b.obs)


def test_sample_is_whole_transitions_at_uniform_indices_over_the_filled_part():
    """The batch is the stored transitions at torch.randint(0, len, n) of the same generator: every filled
    row, the newest included, can be drawn, and each row keeps its own action, reward and not_done."""
    buf = ReplayBuffer(3, 2, capacity=20)
    _fill(buf, 10, terminal_every=3)
    batch = buf.sample(64, generator=torch.Generator().manual_seed(4))
    i = torch.randint(0, 10, (64,), generator=torch.Generator().manual_seed(4)).float()[:, None]
    torch.testing.assert_close(batch.obs, i.expand(64, 3))
    torch.testing.assert_close(batch.action, -i.expand(64, 2))
    torch.testing.assert_close(batch.reward, i)
    torch.testing.assert_close(batch.next_obs, (i + 1).expand(64, 3))
    torch.testing.assert_close(batch.not_done, (i % 3 != 0).float())


def test_empty_and_invalid():
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(1, 1, 4).sample(2)
    with pytest.raises(ValueError, match="capacity=0"):
        ReplayBuffer(1, 1, 0)


def test_state_dict_round_trip():
    buf = ReplayBuffer(3, 2, capacity=8)
    _fill(buf, 11)
    other = ReplayBuffer(3, 2, capacity=8)
    other.load_state_dict(buf.state_dict())
    assert (len(other), other.ptr) == (len(buf), buf.ptr)
    torch.testing.assert_close(other.obs, buf.obs)
    with pytest.raises(ValueError, match="does not match"):
        ReplayBuffer(4, 2, capacity=8).load_state_dict(buf.state_dict())
