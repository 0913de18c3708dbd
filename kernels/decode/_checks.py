"""Argument checks shared by the decode-step wrappers (shapes, dtypes, one device)."""

from __future__ import annotations

import torch

from .._ssm_common import FLOAT_DTYPES, check_tensor


def check_optional(name: str, t: torch.Tensor | None, shape: list[int],
                   device: torch.device) -> None:
    if t is not None:
        check_tensor(name, t, shape, FLOAT_DTYPES, device)


def check_state(state: object, shape: list[int], device: torch.device) -> torch.Tensor:
    # fp32 only: the kernels update it in place and a bf16 state loses slow decays
    return check_tensor("state", state, shape, (torch.float32,), device)
