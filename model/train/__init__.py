"""Training a Kimi Linear LM on local text: corpora and token windows (`data`), the loop with
eval loss, metrics JSONL, HF-format checkpoints and exact resume (`loop`). The command,
`kimmy train lm`, is `kimmy.commands.train`; its model sizes are `model.presets`. GRPO of a
policy on our serving engine (`grpo`): `kimmy train parl`.

    from model.train import TrainConfig, python_docs_texts, tokenize_corpus, train
    data = tokenize_corpus(python_docs_texts(), tokenizer)
    train_part, eval_part = data.split(0.1)
    result = train(lm, train_part, eval_part, TrainConfig(steps=200), out_dir=Path("run"))

Names load on first access (as in `kernels`), so importing this package does not pull in
torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from model.train.data import (
        TokenData,
        TrainingCorpusError,
        python_docs_texts,
        read_text_corpus,
        tokenize_corpus,
    )
    from model.train.grpo import GRPOConfig, GRPOResult, Prompt, Sample, Scored, train_grpo
    from model.train.loop import (
        METRICS_FILE,
        TRAINER_STATE,
        TrainConfig,
        TrainResult,
        eval_loss,
        latest_checkpoint,
        lr_factor,
        make_optimizer,
        train,
    )

_HOME = {
    "GRPOConfig": "grpo",
    "GRPOResult": "grpo",
    "Prompt": "grpo",
    "Sample": "grpo",
    "Scored": "grpo",
    "train_grpo": "grpo",
    "TrainingCorpusError": "data",
    "TokenData": "data",
    "python_docs_texts": "data",
    "read_text_corpus": "data",
    "tokenize_corpus": "data",
    "METRICS_FILE": "loop",
    "TRAINER_STATE": "loop",
    "TrainConfig": "loop",
    "TrainResult": "loop",
    "eval_loss": "loop",
    "latest_checkpoint": "loop",
    "lr_factor": "loop",
    "make_optimizer": "loop",
    "train": "loop",
}

__all__ = [
    "METRICS_FILE",
    "TRAINER_STATE",
    "GRPOConfig",
    "GRPOResult",
    "Prompt",
    "Sample",
    "Scored",
    "TokenData",
    "TrainConfig",
    "TrainResult",
    "TrainingCorpusError",
    "eval_loss",
    "latest_checkpoint",
    "lr_factor",
    "make_optimizer",
    "python_docs_texts",
    "read_text_corpus",
    "tokenize_corpus",
    "train",
    "train_grpo",
]


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"model.train.{_HOME[name]}"), name)
    raise AttributeError(f"module 'model.train' has no attribute {name!r}")
