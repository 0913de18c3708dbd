"""Which hardware paths the kernels may take.

`FLOPKB_PORTABLE=1` makes every kernel take the paths an Ampere or Ada GPU has (no TMA tensor
descriptors, no Hopper-only schedules), also on a Hopper GPU: `flopkb verify --portable` sets it
so that the paths an A100 or RTX 4090 would run are exercised on the machine at hand.
"""

from __future__ import annotations

import os

import torch

PORTABLE_ENV = "FLOPKB_PORTABLE"


def portable() -> bool:
    return os.environ.get(PORTABLE_ENV, "") == "1"


def hopper_paths(device: torch.device) -> bool:
    """True when kernels may use Hopper-only features on `device`."""
    if portable() or device.type != "cuda":
        return False
    return torch.cuda.get_device_capability(device)[0] >= 9
