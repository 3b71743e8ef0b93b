"""The training loop on real text (the ICLR abstracts, else the Python docs): the loss goes
down, metrics rows and checkpoints are what they claim, and an interrupted run resumed from
its checkpoint ends bit-identical to one never stopped."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.errors import CheckpointError, ModelConfigError
from kimmy_swarm.model.modeling import KimiLinearForCausalLM
from kimmy_swarm.model.optim import MuonClip, find_mla_layers
from kimmy_swarm.model.tokenizer import load_tokenizer, train_bpe_tokenizer
from kimmy_swarm.model.train import (
    METRICS_FILE,
    TRAINER_STATE,
    TokenData,
    TrainConfig,
    latest_checkpoint,
    lr_factor,
    make_optimizer,
    python_docs_texts,
    read_text_corpus,
    tokenize_corpus,
    train,
)

ROOT = Path(__file__).resolve().parents[3]
ICLR_JSON = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"
TIMING = ("tokens_per_s", "elapsed_s")  # the only fields that may differ between equal runs


@pytest.fixture(scope="module")
def corpus() -> tuple[TokenData, TokenData, Any]:
    texts = read_text_corpus([ICLR_JSON]) if ICLR_JSON.exists() else python_docs_texts()
    tok = train_bpe_tokenizer(texts, vocab_size=512)
    train_part, eval_part = tokenize_corpus(texts, tok).split(0.1)
    return train_part, eval_part, tok


def _model(tok: Any, seed: int = 0) -> KimiLinearForCausalLM:
    torch.manual_seed(seed)
    return KimiLinearForCausalLM(KimiLinearConfig.tiny(vocab_size=tok.vocab_size))


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / METRICS_FILE).read_text().splitlines()]


def _untimed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def test_package_exports_exactly_its_public_api() -> None:
    from kimmy_swarm.model import train as train_pkg

    assert set(train_pkg.__all__) == {
        "METRICS_FILE", "TRAINER_STATE", "TrainingCorpusError", "TokenData", "TrainConfig",
        "TrainResult", "eval_loss", "latest_checkpoint", "lr_factor", "make_optimizer",
        "python_docs_texts", "read_text_corpus", "tokenize_corpus", "train",
        # GRPO on our engine (model.train.grpo)
        "GRPOConfig", "GRPOResult", "Prompt", "Sample", "Scored", "train_grpo",
    }  # fmt: skip
    assert all(getattr(train_pkg, name) is not None for name in train_pkg.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        train_pkg.nope  # noqa: B018


def test_config_rejects_bad_values_by_name() -> None:
    cases = {
        "optimizer": ("sgd", "optimizer 'sgd' is not one of"),
        "schedule": ("step", "schedule 'step' is not one of"),
        "steps": (0, "steps must be an integer ≥ 1; got 0"),
        "warmup_steps": (-1, "warmup_steps must be an integer ≥ 0"),
        "lr": (math.nan, "lr must be a finite number > 0; got nan"),
        "grad_clip": (0.0, "grad_clip must be a finite number > 0 or None; got 0.0"),
        "min_lr_ratio": (1.5, r"min_lr_ratio must be in \[0, 1\]; got 1.5"),
        "batch_size": (True, "batch_size must be an integer ≥ 1; got True"),
    }
    for field, (value, message) in cases.items():
        with pytest.raises(ModelConfigError, match=message):
            TrainConfig(**{field: value})


def test_schedule_warms_up_then_decays_to_the_floor() -> None:
    cfg = TrainConfig(steps=110, warmup_steps=10, min_lr_ratio=0.1)
    assert [lr_factor(cfg, s) for s in (0, 4, 9)] == pytest.approx([0.1, 0.5, 1.0])
    assert lr_factor(cfg, 10) == pytest.approx(1.0)
    assert lr_factor(cfg, 60) == pytest.approx(0.55)  # cosine half-way: floor + half the rest
    assert lr_factor(cfg, 110) == pytest.approx(0.1)
    linear = TrainConfig(steps=110, warmup_steps=10, schedule="linear", min_lr_ratio=0.0)
    assert lr_factor(linear, 35) == pytest.approx(0.75)
    const = TrainConfig(steps=110, warmup_steps=0, schedule="constant")
    assert {lr_factor(const, s) for s in range(110)} == {1.0}


def test_adamw_baseline_decays_only_matrices(corpus: Any) -> None:
    model = _model(corpus[2])
    opt = make_optimizer(model, TrainConfig(optimizer="adamw", weight_decay=0.1))
    names = {id(p): n for n, p in model.named_parameters()}
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.ndim >= 2 and names[id(p)].endswith(".weight") for p in decay["params"])
    assert any(names[id(p)].endswith("input_layernorm.weight") for p in no_decay["params"])
    assert any(names[id(p)].endswith("A_log") for p in no_decay["params"])
    assert isinstance(make_optimizer(model, TrainConfig()), MuonClip)


def test_loss_goes_down_and_the_run_folder_holds_what_it_claims(
    corpus: Any, tmp_path: Path
) -> None:
    train_part, eval_part, tok = corpus
    cfg = TrainConfig(
        steps=30,
        batch_size=4,
        seq_len=80,
        lr=1e-2,
        warmup_steps=3,
        eval_every=10,
        eval_batches=2,
        checkpoint_every=10,
        keep_checkpoints=2,
    )
    model = _model(tok)
    seen: list[dict[str, Any]] = []
    result = train(
        model,
        train_part,
        eval_part,
        cfg,
        out_dir=tmp_path,
        tokenizer=tok,
        on_metrics=seen.append,
        progress=False,
    )
    assert result.initial_eval_loss is not None and result.final_eval_loss is not None
    assert result.initial_eval_loss == pytest.approx(math.log(tok.vocab_size), abs=0.15)
    assert result.final_eval_loss < result.initial_eval_loss - 0.5  # measured 6.25 → 5.50
    rows = _rows(tmp_path)
    assert rows == result.metrics == seen
    assert [r["step"] for r in rows] == list(range(31))
    assert [r["step"] for r in rows if "eval_loss" in r] == [0, 10, 20, 30]
    for r in rows[1:]:
        assert r["tokens"] == r["step"] * 4 * 80
        assert r["lr"] == pytest.approx(1e-2 * lr_factor(cfg, r["step"] - 1))
        assert r["grad_norm"] > 0 and r["tokens_per_s"] > 0 and r["qk_clipped_heads"] == 0
        assert 0 < r["max_attn_logit"] < 100  # recorded by the MLA layer, under τ
    assert result.tokens_seen == 30 * 4 * 80 and result.steps == 30
    assert not any(layer.record_max_logits for _, layer in find_mla_layers(model))  # restored
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == ["checkpoint-000020", "checkpoint-000030", METRICS_FILE]  # nothing staged
    ckpt = tmp_path / "checkpoint-000030"
    assert result.checkpoint == ckpt == latest_checkpoint(tmp_path)
    loaded = KimiLinearForCausalLM.from_pretrained(ckpt)
    x = eval_part.tokens[:64][None]  # (1, 64)
    model.eval()
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))
    assert load_tokenizer(ckpt).encode("Deep networks generalize.") == tok.encode(
        "Deep networks generalize."
    )
    state = torch.load(ckpt / TRAINER_STATE, weights_only=True)
    assert state["step"] == 30 and state["config"]["seq_len"] == 80


class _Crash(Exception):
    pass


@pytest.mark.parametrize("optimizer", ["muonclip", "adamw"])
def test_interrupted_run_resumed_equals_an_uninterrupted_one(
    corpus: Any, tmp_path: Path, optimizer: str
) -> None:
    train_part, eval_part, tok = corpus
    cfg = TrainConfig(
        steps=6,
        batch_size=4,
        seq_len=72,
        optimizer=optimizer,
        warmup_steps=2,
        eval_every=2,
        eval_batches=1,
        checkpoint_every=2,
        keep_checkpoints=3,
        qk_clip_tau=0.05,
    )  # τ this low makes QK-Clip rescale heads, so its effect on the weights is replayed too
    straight = _model(tok)
    full = train(straight, train_part, eval_part, cfg, out_dir=tmp_path / "a", progress=False)

    def crash_at_5(row: dict[str, Any]) -> None:
        if row["step"] == 5:  # row 5 is on disk, its checkpoint never will be
            raise _Crash

    out = tmp_path / "b"
    with pytest.raises(_Crash):
        train(
            _model(tok),
            train_part,
            eval_part,
            cfg,
            out_dir=out,
            on_metrics=crash_at_5,
            progress=False,
        )
    assert [r["step"] for r in _rows(out)] == [0, 1, 2, 3, 4, 5]
    (out / "checkpoint-000099").mkdir()  # incomplete: no trainer state, no config.json
    (out / ".checkpoint-000006.partial").mkdir()  # a staging folder left by a crash
    resumed_model = _model(tok, seed=123)  # other initial weights: all must come from disk
    resumed = train(
        resumed_model, train_part, eval_part, cfg, out_dir=out, resume=True, progress=False
    )
    want = straight.state_dict()
    got = resumed_model.state_dict()
    assert want.keys() == got.keys()
    for name in want:  # weights, and the MoE router biases the balancing moved
        assert torch.equal(want[name], got[name]), name
    assert _untimed(_rows(out)) == _untimed(_rows(tmp_path / "a"))  # no duplicate rows
    assert _untimed(resumed.metrics) == _untimed(full.metrics)
    assert resumed.final_eval_loss == full.final_eval_loss
    clipped = [r.get("qk_clipped_heads", 0) for r in full.metrics[1:]]
    assert (sum(clipped) > 0) == (optimizer == "muonclip")
    assert not (out / ".checkpoint-000006.partial").exists()
    assert latest_checkpoint(out) == out / "checkpoint-000006"  # 000099 is incomplete


def test_resume_and_fresh_runs_refuse_the_wrong_folder(corpus: Any, tmp_path: Path) -> None:
    train_part, eval_part, tok = corpus
    cfg = TrainConfig(steps=1, batch_size=2, seq_len=72, eval_batches=1)
    with pytest.raises(CheckpointError, match=f"no complete checkpoint-\\* folder in {tmp_path}"):
        train(
            _model(tok), train_part, eval_part, cfg, out_dir=tmp_path, resume=True, progress=False
        )
    train(_model(tok), train_part, eval_part, cfg, out_dir=tmp_path, progress=False)
    with pytest.raises(ModelConfigError, match="already holds a training run"):
        train(_model(tok), train_part, eval_part, cfg, out_dir=tmp_path, progress=False)
    changed = TrainConfig(steps=2, batch_size=2, seq_len=72, eval_batches=1, lr=1e-2)
    with pytest.raises(ModelConfigError, match=r"lr: 0\.003 → 0\.01"):
        train(
            _model(tok),
            train_part,
            eval_part,
            changed,
            out_dir=tmp_path,
            resume=True,
            progress=False,
        )
    with pytest.raises(ModelConfigError, match="seq_len 1000000 needs at least 1000001 tokens"):
        train(
            _model(tok),
            train_part,
            eval_part,
            TrainConfig(seq_len=10**6),
            out_dir=None,
            progress=False,
        )
