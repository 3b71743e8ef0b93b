"""`kimmy train lm` through `kimmy.app.main`: a short run on a small corpus, its resume,
user errors as `kimmy: error:` with exit 2, and the model presets (`model.presets`).
That the command module imports only typer at its top: tests/kimmy/test_cli_app.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kimmy_swarm.cli.app import main
from kimmy_swarm.model.modeling import KimiLinearForCausalLM
from kimmy_swarm.model.presets import model_config
from kimmy_swarm.model.python_docs import python_docs_texts


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    docs = python_docs_texts()
    (folder / "a.txt").write_text("\n\n".join(docs[:8]), encoding="utf-8")
    records = [{"title": f"Doc {i}", "abstract": d[:2000]} for i, d in enumerate(docs[8:16])]
    (folder / "sub" / "b.json").write_text(json.dumps(records), encoding="utf-8")
    return folder


ARGS = [
    "--seq-len",
    "72",
    "--batch-size",
    "2",
    "--vocab-size",
    "400",
    "--eval-every",
    "4",
    "--checkpoint-every",
    "2",
]


def _steps(out: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_train_lm_runs_checkpoints_and_resumes(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["train", "lm", str(corpus), "--out", str(out), "--steps", "4", *ARGS]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    ckpt = out / "checkpoint-000004"
    assert last.startswith("kimmy: trained 4 steps: eval loss ")
    assert f"{4 * 2 * 72} tokens" in last and last.endswith(f"checkpoint: {ckpt}")
    assert _steps(out) == [0, 1, 2, 3, 4]
    model = KimiLinearForCausalLM.from_pretrained(ckpt)
    assert model.config.vocab_size <= 400 and (ckpt / "tokenizer.json").is_file()
    assert model.config.eos_token_id == 2  # the BPE tokenizer's (pad, bos, eos) ids
    argv = ["train", "lm", str(corpus), "--out", str(out), "--steps", "6", "--resume", *ARGS]
    assert main(argv) == 0
    assert _steps(out) == [0, 1, 2, 3, 4, 5, 6]
    assert capsys.readouterr().out.strip().endswith(f"checkpoint: {out / 'checkpoint-000006'}")
    resumed = KimiLinearForCausalLM.from_pretrained(out / "checkpoint-000006")
    assert resumed.config == model.config  # the checkpoint's model, not a new one
    # Training into a folder that already holds a run is refused, naming the folder.
    assert main(["train", "lm", str(corpus), "--out", str(out), "--steps", "2", *ARGS]) == 2
    assert f"kimmy: error: {out} already holds a training run" in capsys.readouterr().err


def test_bad_input_exits_2_naming_the_value(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "run")
    missing = str(tmp_path / "no-such-corpus")
    assert main(["train", "lm", missing, "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kimmy: error: ") and f"'{missing}' does not exist" in err
    assert main(["train", "lm", str(corpus), "--out", out, "--optimizer", "sgd"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kimmy: error: ") and "'sgd'" in err and "muonclip" in err
    assert main(["train", "lm", str(corpus), "--out", out, "--steps", "0"]) == 2
    assert "--steps" in capsys.readouterr().err
    assert main(["train", "lm", str(corpus), "--out", out, "--resume"]) == 2
    assert f"no complete checkpoint-* folder in {out}" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["train", "lm", str(empty), "--out", out]) == 2
    assert f"no readable text in '{empty}'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_presets_and_size_flags_build_valid_models() -> None:
    ids = (1, 2, 0)
    small = model_config(preset="small", vocab_size=2048, special_ids=ids)
    assert (small.num_hidden_layers, small.hidden_size) == (8, 256)
    assert small.layer_types == ("kda",) * 3 + ("mla",) + ("kda",) * 3 + ("mla",)
    sized = model_config(
        preset="tiny",
        vocab_size=300,
        special_ids=ids,
        layers=2,
        hidden=32,
        residual="block_attnres",
    )
    assert (sized.num_hidden_layers, sized.hidden_size, sized.intermediate_size) == (2, 32, 64)
    assert sized.layer_types == ("kda", "mla") and sized.residual == "block_attnres"
    logits = KimiLinearForCausalLM(sized)(torch.tensor([[1, 5, 9]]))
    assert logits.shape == (1, 3, 300)
