"""The run folder both trainers keep: fresh vs resumed runs, checkpoints staged and pruned,
trainer state saved and restored exactly (any trainer's dataclass config, its own resumable
fields), and the metrics rows a resume keeps."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from torch.optim.lr_scheduler import LambdaLR

from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.errors import CheckpointError, ModelConfigError
from kimmy_swarm.model.modeling import KimiLinearForCausalLM
from kimmy_swarm.model.train.run_folder import (
    METRICS_FILE,
    TRAINER_STATE,
    kept_metrics,
    latest_checkpoint,
    list_checkpoints,
    open_run,
    restore,
    save_checkpoint,
    trainer_state,
)


@dataclasses.dataclass(frozen=True)
class _Config:
    steps: int = 4
    lr: float = 0.1


_RESUMABLE = frozenset({"steps"})


def _model() -> KimiLinearForCausalLM:
    return KimiLinearForCausalLM(KimiLinearConfig.tiny(vocab_size=64))


def _trained(model: torch.nn.Module) -> tuple[torch.optim.Optimizer, LambdaLR]:
    """An optimizer and a scheduler with state: one step taken."""
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    sched = LambdaLR(opt, lambda step: 1.0 / (step + 1))
    model(torch.tensor([[1, 2, 3]])).sum().backward()
    opt.step()
    sched.step()
    return opt, sched


def test_open_run_tells_a_fresh_run_from_a_resumed_one(tmp_path: Path) -> None:
    assert open_run(None, resume=False) is None
    with pytest.raises(ModelConfigError, match="resume=True needs out_dir"):
        open_run(None, resume=True)
    out = tmp_path / "run"
    assert open_run(out, resume=False) is None and out.is_dir()
    with pytest.raises(CheckpointError, match="nothing to resume"):
        open_run(out, resume=True)
    (out / METRICS_FILE).write_text('{"step": 0}\n')
    with pytest.raises(ModelConfigError, match="already holds a training run"):
        open_run(out, resume=False)
    (out / ".checkpoint-000001.partial").mkdir()  # a crash while staging
    with pytest.raises(CheckpointError):
        open_run(out, resume=True)
    assert not (out / ".checkpoint-000001.partial").exists()  # cleaned up


def test_checkpoints_are_complete_folders_and_only_the_newest_are_kept(tmp_path: Path) -> None:
    model = _model()
    opt, _ = _trained(model)
    for step in (1, 2, 3):
        state = trainer_state(step, _Config(), optimizer=opt)
        saved = save_checkpoint(tmp_path, state, model, None, keep=2)
        assert saved == tmp_path / f"checkpoint-{step:06d}"
    (tmp_path / "checkpoint-000009").mkdir()  # no trainer state: incomplete, ignored
    assert [n for n, _ in list_checkpoints(tmp_path)] == [2, 3]
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-000003"
    assert not list(tmp_path.glob(".*partial*"))
    assert latest_checkpoint(tmp_path / "missing") is None


def test_restore_brings_back_weights_optimizer_scheduler_and_rngs(tmp_path: Path) -> None:
    model = _model()
    opt, sched = _trained(model)
    gen = torch.Generator().manual_seed(7)
    torch.rand(3, generator=gen)
    state = trainer_state(
        1, _Config(), optimizer=opt, tokens=12, elapsed_s=3.5, scheduler=sched, generator=gen
    )
    ckpt = save_checkpoint(tmp_path, state, model, None, keep=1)
    expected_draw = torch.rand(3, generator=gen)
    expected_rng = torch.rand(3)

    torch.manual_seed(123)
    fresh = _model()
    opt2 = torch.optim.AdamW(fresh.parameters(), lr=0.1)
    sched2 = LambdaLR(opt2, lambda step: 1.0 / (step + 1))
    gen2 = torch.Generator().manual_seed(0)
    config = _Config(steps=10)  # `steps` may change on resume
    got = restore(ckpt, fresh, config, _RESUMABLE, optimizer=opt2, scheduler=sched2, generator=gen2)
    assert (got["step"], got["tokens"], got["elapsed_s"]) == (1, 12, 3.5)
    for a, b in zip(fresh.parameters(), model.parameters(), strict=True):
        assert torch.equal(a, b)
    assert opt2.state_dict()["state"].keys() == opt.state_dict()["state"].keys()
    assert sched2.state_dict()["last_epoch"] == sched.state_dict()["last_epoch"] == 1
    assert torch.equal(torch.rand(3, generator=gen2), expected_draw)
    assert torch.equal(torch.rand(3), expected_rng)


def test_a_trainer_without_scheduler_or_generator_restores_what_it_saved(tmp_path: Path) -> None:
    model = _model()
    opt, _ = _trained(model)
    ckpt = save_checkpoint(tmp_path, trainer_state(2, _Config(), optimizer=opt), model, None, 1)
    assert "scheduler" not in torch.load(ckpt / TRAINER_STATE, weights_only=True)
    fresh = _model()
    state = restore(
        ckpt, fresh, _Config(), _RESUMABLE, optimizer=torch.optim.AdamW(fresh.parameters())
    )
    assert state["step"] == 2


def test_restore_refuses_a_changed_config_outside_the_resumable_fields(tmp_path: Path) -> None:
    model = _model()
    opt, _ = _trained(model)
    ckpt = save_checkpoint(tmp_path, trainer_state(1, _Config(), optimizer=opt), model, None, 1)
    with pytest.raises(ModelConfigError, match=r"lr: 0\.1 → 0\.5\); only steps may change"):
        restore(ckpt, model, _Config(lr=0.5), _RESUMABLE, optimizer=opt)
    (ckpt / TRAINER_STATE).write_bytes(b"not a torch file")
    with pytest.raises(CheckpointError, match="not readable"):
        restore(ckpt, model, _Config(), _RESUMABLE, optimizer=opt)


def test_kept_metrics_keeps_the_checkpointed_rows_only(tmp_path: Path) -> None:
    file = tmp_path / METRICS_FILE
    rows = [{"step": s, "loss": 1.0 / (s + 1)} for s in range(5)]
    file.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 5, "lo')  # cut short
    assert kept_metrics(file, 2) == rows[:3]
    assert [json.loads(x) for x in file.read_text().splitlines()] == rows[:3]
    assert kept_metrics(tmp_path / "none.jsonl", 2) == []
