"""The target functions on cases worked out by hand."""

import torch

from td3_lib import bellman_target, clip_noise, clipped_double_q, smooth_target_action, target_noise


def test_bellman_target_by_hand():
    reward = torch.tensor([[1.0], [-2.0], [0.5]])
    not_done = torch.tensor([[1.0], [0.0], [1.0]])  # the second transition is terminal
    next_q = torch.tensor([[10.0], [10.0], [-4.0]])
    y = bellman_target(reward, not_done, next_q, discount=0.9)
    # 1 + 0.9 * 10 = 10;  -2 (terminal: no bootstrap);  0.5 + 0.9 * -4 = -3.1
    torch.testing.assert_close(y, torch.tensor([[10.0], [-2.0], [-3.1]]))


def test_bellman_target_discount_zero_and_one():
    r, nd, q = torch.tensor([2.0]), torch.tensor([1.0]), torch.tensor([3.0])
    assert bellman_target(r, nd, q, 0.0).item() == 2.0
    assert bellman_target(r, nd, q, 1.0).item() == 5.0


def test_clipped_double_q_is_elementwise_min():
    q1 = torch.tensor([[1.0], [5.0], [-3.0]])
    q2 = torch.tensor([[2.0], [4.0], [-3.5]])
    torch.testing.assert_close(clipped_double_q(q1, q2), torch.tensor([[1.0], [4.0], [-3.5]]))


def test_smooth_target_action_matches_formula_with_same_generator():
    low, high = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 4.0])  # half-ranges 1 and 2
    a = torch.tensor([[0.0, 2.0], [0.9, 3.9], [-0.95, 0.1]])
    out = smooth_target_action(a, low, high, 0.2, 0.5, generator=torch.Generator().manual_seed(3))
    eps = torch.randn(a.shape, generator=torch.Generator().manual_seed(3))
    half = torch.tensor([1.0, 2.0])
    noise = (eps * 0.2 * half).clamp(-0.5 * half, 0.5 * half)
    expected = torch.maximum(torch.minimum(a + noise, high), low)
    torch.testing.assert_close(out, expected)


def test_target_noise_matches_formula_with_same_generator():
    low, high = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 4.0])  # half-ranges 1 and 2
    eps = target_noise((500, 2), low, high, 0.2, 0.5, generator=torch.Generator().manual_seed(5))
    draws = torch.randn((500, 2), generator=torch.Generator().manual_seed(5))
    half = torch.tensor([1.0, 2.0])
    torch.testing.assert_close(eps, (draws * 0.2 * half).clamp(-0.5 * half, 0.5 * half))
    assert (eps.abs().amax(0) == 0.5 * half).all()  # some draws beyond c on each dimension are clipped to it


def test_clip_noise_against_explicit_formula_with_numbers_and_per_member_tensors():
    z = torch.tensor([[-3.0, -0.5, 0.0, 0.5, 3.0]])
    torch.testing.assert_close(clip_noise(z, 0.2, 0.5), torch.tensor([[-0.5, -0.1, 0.0, 0.1, 0.5]]))
    sigma, c = torch.tensor([[0.2], [1.0]]), torch.tensor([[0.5], [1.0]])  # one row per member
    expected = torch.stack([torch.clamp(0.2 * z[0], -0.5, 0.5), torch.clamp(1.0 * z[0], -1.0, 1.0)])
    torch.testing.assert_close(clip_noise(z.expand(2, 5), sigma, c), expected)


def test_smooth_target_action_noise_is_clipped_per_dimension():
    low, high = torch.tensor([-1.0, -10.0]), torch.tensor([1.0, 10.0])
    a = torch.zeros(20000, 2)
    out = smooth_target_action(a, low, high, policy_noise=5.0, noise_clip=0.5,
                               generator=torch.Generator().manual_seed(0))
    # huge noise is clipped to 0.5 * half-range: 0.5 in dim 0, 5 in dim 1
    assert out[:, 0].abs().max().item() == 0.5
    assert out[:, 1].abs().max().item() == 5.0


def test_smooth_target_action_stays_in_bounds():
    low, high = torch.tensor([0.0, -3.0]), torch.tensor([2.0, -1.0])
    a = torch.stack([torch.full((1000,), 2.0), torch.full((1000,), -3.0)], dim=1)  # at the bounds
    out = smooth_target_action(a, low, high, 0.5, 0.5, generator=torch.Generator().manual_seed(1))
    assert bool((out >= low).all()) and bool((out <= high).all())
    assert out[:, 0].min() < 2.0 and out[:, 1].max() > -3.0  # noise did move them inward


def test_target_noise_is_drawn_where_its_bounds_are():
    """No device given: the noise is drawn on the bounds' device (here PyTorch's 'meta' device, which
    stands for a GPU on a machine without one), never on the CPU beside them."""
    low, high = torch.full((2,), -1.0, device="meta"), torch.full((2,), 1.0, device="meta")
    assert target_noise((4, 2), low, high, 0.2, 0.5).device.type == "meta"
