"""Model tests start from one torch seed, whatever ran before them."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)
