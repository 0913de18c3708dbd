"""kernels/linear_forms: each pair of forms agrees on odd sizes with a fixed seed (outputs and
final states), KDA equals DPLR with the mapped a, b, and bad shapes are refused."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from flopkb.kernelpkg import kernels_root, load_op

naive = load_op("linear_forms", "reference", kernels_root(None, "linear_forms"))
chunked = load_op("linear_forms", "chunked", kernels_root(None, "linear_forms"))
B, T, H, K, V = 2, 45, 3, 7, 5


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _close(got: tuple, want: tuple) -> None:
    for a, b in zip(got, want, strict=True):
        assert torch.isfinite(a).all()
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_kda_equals_dplr_with_the_corresponding_a_and_b() -> None:
    g = _gen()
    q = torch.randn(B, T, H, K, generator=g)
    k = F.normalize(torch.randn(B, T, H, K, generator=g), dim=-1)
    v = torch.randn(B, T, H, V, generator=g)
    decay = -0.1 * F.softplus(torch.randn(B, T, H, K, generator=g))
    beta = torch.sigmoid(torch.randn(B, T, H, generator=g))
    want = naive.kda_recurrent(q, k, v, decay, beta, K ** -0.5)
    _close(naive.dplr_recurrent(*naive.kda_as_dplr(q, k, v, decay, beta), K ** -0.5), want)
    # the sign of b is the delta rule: flipped, the recurrences differ
    qq, kk, vv, a, b, gk = naive.kda_as_dplr(q, k, v, decay, beta)
    o, _ = naive.dplr_recurrent(qq, kk, vv, a, -b, gk, K ** -0.5)
    assert (o - want[0]).abs().max() > 1e-2


@pytest.mark.parametrize("block", [1, 8, 16, 64])
def test_lightning_blocks_equal_plain_linear_attention(block: int) -> None:
    g = _gen()
    q, k = (torch.randn(B, T, H, K, generator=g) for _ in range(2))
    v = torch.randn(B, T, H, V, generator=g)
    log_decay = -0.3 * torch.rand(H, generator=g)
    _close(chunked.lightning_blocked(q, k, v, log_decay, K ** -0.5, block),
           naive.decayed_linear_attention(q, k, v, log_decay, K ** -0.5))


@pytest.mark.parametrize("chunk", [1, 16, 64])
def test_hgrn2_chunked_equals_its_elementwise_scan(chunk: int) -> None:
    g = _gen()
    q = torch.randn(B, T, H, K, generator=g)
    log_f = -0.05 * torch.rand(B, T, H, K, generator=g)
    x = torch.randn(B, T, H, V, generator=g)
    _close(chunked.hgrn2_chunked(q, log_f, x, chunk), naive.hgrn2_scan(q, log_f, x))


def test_bad_shapes_and_blocks_are_refused() -> None:
    q = torch.zeros(B, T, H, K)
    with pytest.raises(ValueError, match="expected q, k"):
        naive.decayed_linear_attention(q, q[:, :-1], torch.zeros(B, T, H, V), torch.zeros(H), 1.0)
    with pytest.raises(ValueError, match="positive block"):
        chunked.lightning_blocked(q, q, torch.zeros(B, T, H, V), torch.zeros(H), 1.0, 0)


def test_the_flop_counts_follow_the_state_products() -> None:
    cost = load_op("linear_forms", "cost", kernels_root(None, "linear_forms"))
    assert cost.recurrent_flops("kda", 1, 2, 1, 4, 8) == 3 * 2 * 2 * 4 * 8
    assert cost.chunked_flops(1, 64, 1, 4, 8, 64) == 64 * (2 * 64 * 4 + 2 * 64 * 8 + 4 * 4 * 8)
    with pytest.raises(ValueError, match="expected a form"):
        cost.recurrent_flops("softmax", 1, 1, 1, 1, 1)
