"""The KDA state pool: fixed slots holding every KDA layer's conv and recurrent state.

A running sequence owns one working slot (its decode mutates it). Checkpoints of shared
prefixes live in other slots, keyed by the prefix's chained page hash, in LRU order; a
prefix hit *copies* a checkpoint into the sequence's working slot. Checkpoints are evicted
independently of the MLA pages (a checkpoint without its pages is simply never matched).
"""

from __future__ import annotations

from collections import OrderedDict

import torch

__all__ = ["StatePool"]


class StatePool:
    """`conv [L_kda, slots, 3, D, W − 1]` (q, k, v conv inputs) and
    `recurrent [L_kda, slots, H, K, V]` (fp32)."""

    def __init__(
        self,
        *,
        num_slots: int,
        num_layers: int,
        conv_dim: int,
        conv_width: int,
        heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device | str = "cpu",
    ) -> None:
        n = max(num_layers, 1)
        self.num_slots = num_slots
        self.conv = torch.zeros(n, num_slots, 3, conv_dim, max(conv_width - 1, 0), dtype=dtype,
                                device=device)  # fmt: skip
        state_dtype = torch.promote_types(dtype, torch.float32)
        self.recurrent = torch.zeros(n, num_slots, heads, head_dim, head_dim, dtype=state_dtype,
                                     device=device)  # fmt: skip
        self.free: list[int] = list(range(num_slots - 1, -1, -1))
        self.checkpoints: OrderedDict[int, int] = OrderedDict()  # prefix hash → slot (LRU)
        self.working: set[int] = set()

    @property
    def num_available(self) -> int:
        return len(self.free) + len(self.checkpoints)

    @property
    def num_used(self) -> int:
        return self.num_slots - len(self.free)

    def _take(self) -> int | None:
        if self.free:
            return self.free.pop()
        if self.checkpoints:
            _, slot = self.checkpoints.popitem(last=False)
            return slot
        return None

    def allocate(self) -> int:
        """A zeroed working slot (a fresh sequence starts from the zero state).

        Raises:
            RuntimeError: every slot is a working slot (the scheduler checks first).
        """
        slot = self._take()
        if slot is None:
            raise RuntimeError("state pool exhausted")
        self.conv[:, slot].zero_()
        self.recurrent[:, slot].zero_()
        self.working.add(slot)
        return slot

    def release(self, slot: int) -> None:
        self.working.discard(slot)
        self.free.append(slot)

    def has_checkpoint(self, h: int) -> bool:
        return h in self.checkpoints

    def save_checkpoint(self, h: int, from_slot: int) -> bool:
        """Copy a working slot's state into a checkpoint for prefix `h` (if a slot can be
        had without touching working slots). Returns whether a checkpoint now exists."""
        if h in self.checkpoints:
            self.checkpoints.move_to_end(h)
            return True
        slot = self._take()
        if slot is None:
            return False
        self.conv[:, slot].copy_(self.conv[:, from_slot])
        self.recurrent[:, slot].copy_(self.recurrent[:, from_slot])
        self.checkpoints[h] = slot
        return True

    def load_checkpoint(self, h: int, to_slot: int) -> None:
        """Copy checkpoint `h` into a working slot (the checkpoint itself stays intact)."""
        slot = self.checkpoints[h]
        self.checkpoints.move_to_end(h)
        self.conv[:, to_slot].copy_(self.conv[:, slot])
        self.recurrent[:, to_slot].copy_(self.recurrent[:, slot])
