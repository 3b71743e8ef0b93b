"""GRPO on our engine (`model.train.grpo`), on the tiny model: samples are token-in /
token-out, a step moves the policy along the advantages, the clipped loss is PPO's, and a
resumed run ends exactly where an uninterrupted one does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from kimmy_swarm.model.errors import CheckpointError, ModelConfigError
from kimmy_swarm.model.serve.factory import load_model_dir, load_tiny
from kimmy_swarm.model.train.grpo import (
    GRPOConfig,
    Prompt,
    Sample,
    Scored,
    clipped_loss,
    completion_logprobs,
    train_grpo,
    trainable_parameters,
)
from kimmy_swarm.model.train.run_folder import METRICS_FILE, TRAINER_STATE

PICK = {
    "type": "function",
    "function": {
        "name": "pick",
        "description": "Pick a number.",
        "parameters": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}},
            "required": ["n"],
            "additionalProperties": False,
        },
    },
}
PROMPTS = [
    Prompt(f"p{i}", ({"role": "user", "content": f"Pick a number for task {i}."},), (PICK,))
    for i in range(3)
]
SMALL = {"steps": 2, "tasks_per_step": 2, "group_size": 3, "max_new_tokens": 64, "lr": 1e-3}


class NumberScorer:
    """Reward: the picked number (0 without a call); advantages relative to the group."""

    def __init__(self) -> None:
        self.groups: list[list[Sample]] = []

    def __call__(self, group: Any, step: int) -> list[Scored]:
        self.groups.append(list(group))
        rewards = []
        for s in group:
            try:
                rewards.append(float(json.loads(s.text)["arguments"]["n"]))
            except (ValueError, KeyError, TypeError):
                rewards.append(0.0)
        mean = sum(rewards) / len(rewards)
        return [Scored(r, r - mean, {"picked": r}) for r in rewards]


def tiny() -> tuple[Any, Any]:
    model, tokenizer, _ = load_tiny(seed=0)
    return model, tokenizer


def test_samples_are_token_in_token_out_with_the_samplers_logprobs() -> None:
    model, tokenizer = tiny()
    scorer = NumberScorer()
    result = train_grpo(model, tokenizer, PROMPTS, scorer, GRPOConfig(**{**SMALL, "steps": 1}))
    samples = [s for g in scorer.groups for s in g]
    assert len(samples) == 2 * 3 and len(result.rows) == 1
    for s in samples:
        assert s.completion_ids and len(s.logprobs) == len(s.completion_ids)
        ids = list(s.completion_ids)
        if s.finish_reason == "stop":  # the forced call's JSON (the grammar allows no other)
            assert json.loads(s.text)["name"] == "pick"
            assert ids[-1] == tokenizer.eos_token_id  # the end token is trained on too
            ids = ids[:-1]
        assert tokenizer.decode(ids) == s.text  # no re-tokenizing: the very ids sampled
        if s.finish_reason == "stop":
            continue
        assert s.finish_reason == "length" and len(s.completion_ids) == 64
    row = result.rows[0]
    assert row["step"] == 1 and row["tasks"] == [g[0].prompt.key for g in scorer.groups]
    assert row["reward"] == pytest.approx(row["picked"])  # the mean of the scorer's figure
    # the engine's logprobs are the trainer's, up to float noise (same weights, same tokens)
    assert row["logprob_mismatch"] < 1e-3


def test_a_step_raises_the_logprob_of_a_sample_with_a_positive_advantage() -> None:
    model, tokenizer = tiny()
    scorer = NumberScorer()
    train_grpo(model, tokenizer, PROMPTS[:1], scorer, GRPOConfig(**{**SMALL, "steps": 1}))
    sample = scorer.groups[0][0]
    model2, _ = tiny()
    with torch.no_grad():
        before = float(completion_logprobs(model2, sample).sum())
    from kimmy_swarm.model.train.grpo import _policy_step

    params = trainable_parameters(model2, None)
    opt = torch.optim.SGD(params, lr=0.05)
    cfg = GRPOConfig(**SMALL)
    _policy_step(model2, params, opt, [(sample, Scored(1.0, 1.0))], cfg)
    with torch.no_grad():
        up = float(completion_logprobs(model2, sample).sum())
    _policy_step(model2, params, opt, [(sample, Scored(0.0, -1.0))], cfg)
    with torch.no_grad():
        down = float(completion_logprobs(model2, sample).sum())
    assert up > before and down < up


def test_the_clipped_surrogate_is_ppos() -> None:
    old = torch.zeros(4)
    new = torch.tensor([0.0, 0.1, 0.5, -0.5], requires_grad=True)
    loss, share = clipped_loss(new, old, 1.0, 0.2)
    ratio = new.detach().exp()
    expected = -torch.minimum(ratio, ratio.clamp(0.8, 1.2)).mean()
    assert float(loss.detach()) == pytest.approx(float(expected))
    assert share == 0.5  # 0.5 and -0.5 lie outside [0.8, 1.2]
    loss.backward()
    assert new.grad is not None and new.grad[2] == 0  # clipped above with A > 0: no push
    assert new.grad[3] != 0  # below the clip with A > 0: min picks the unclipped term


def test_train_layers_trains_only_the_last_layers() -> None:
    model, _ = tiny()
    params = trainable_parameters(model, 1)
    last = {id(p) for p in model.model.layers[-1].parameters()}
    assert last <= {id(p) for p in params}
    assert not model.model.embed_tokens.weight.requires_grad
    assert not any(p.requires_grad for p in model.model.layers[0].parameters())


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(tmp_path: Path) -> None:
    cfg = GRPOConfig(**{**SMALL, "steps": 3, "checkpoint_every": 1})
    model, tokenizer = tiny()
    straight = train_grpo(model, tokenizer, PROMPTS, NumberScorer(), cfg, out_dir=tmp_path / "a")
    model, tokenizer = tiny()
    first = GRPOConfig(**{**SMALL, "steps": 2, "checkpoint_every": 1})
    train_grpo(model, tokenizer, PROMPTS, NumberScorer(), first, out_dir=tmp_path / "b")
    model, tokenizer = tiny()  # a fresh process would start from the base weights too
    resumed = train_grpo(
        model, tokenizer, PROMPTS, NumberScorer(), cfg, out_dir=tmp_path / "b", resume=True
    )

    def same(row: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in row.items() if not k.endswith("_s")}

    assert [same(r) for r in resumed.rows] == [same(r) for r in straight.rows]
    lines = (tmp_path / "b" / METRICS_FILE).read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [1, 2, 3]
    ckpt = resumed.checkpoint
    assert ckpt is not None and ckpt.name == "checkpoint-000003"
    assert (ckpt / TRAINER_STATE).is_file() and (ckpt / "config.json").is_file()
    reloaded, _ = load_model_dir(ckpt)  # an HF-format folder our loaders read
    for a, b in zip(reloaded.parameters(), model.parameters(), strict=True):
        assert torch.equal(a.cpu(), b.detach().cpu())


def test_bad_settings_are_named(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="group_size must be an integer ≥ 2"):
        GRPOConfig(group_size=1)
    with pytest.raises(ModelConfigError, match="steps must be an integer ≥ 1; got 0"):
        GRPOConfig(steps=0)
    with pytest.raises(ModelConfigError, match=r"lr must be a finite number > 0\.0"):
        GRPOConfig(lr=float("nan"))
    model, tokenizer = tiny()
    with pytest.raises(ModelConfigError, match="at least one prompt"):
        train_grpo(model, tokenizer, [], NumberScorer(), GRPOConfig(**SMALL))
    with pytest.raises(CheckpointError, match="nothing to resume"):
        train_grpo(model, tokenizer, PROMPTS, NumberScorer(), GRPOConfig(**SMALL),
                   out_dir=tmp_path / "none", resume=True)  # fmt: skip
    cfg = GRPOConfig(**{**SMALL, "steps": 1})
    train_grpo(model, tokenizer, PROMPTS, NumberScorer(), cfg, out_dir=tmp_path / "r")
    with pytest.raises(ModelConfigError, match=r"lr: 0\.001 → 0\.01"):
        train_grpo(model, tokenizer, PROMPTS, NumberScorer(), GRPOConfig(**{**SMALL, "lr": 1e-2}),
                   out_dir=tmp_path / "r", resume=True)  # fmt: skip
