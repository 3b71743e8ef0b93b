"""Training a Kimi Linear LM on local text: corpora and token windows (`data`), the loop with
eval loss, metrics JSONL, HF-format checkpoints and exact resume (`loop`). The command,
`kimmy train lm`, is `kimmy.commands.train`; its model sizes are `model.presets`. GRPO of a
policy on our serving engine (`grpo`): `kimmy train parl`.

    from kimmy_swarm.model.train import TrainConfig, python_docs_texts, tokenize_corpus, train
    data = tokenize_corpus(python_docs_texts(), tokenizer)
    train_part, eval_part = data.split(0.1)
    result = train(lm, train_part, eval_part, TrainConfig(steps=200), out_dir=Path("run"))

Names load on first access (`kernels.lazy_exports`), so importing this package does not
pull in torch. The run folder both trainers keep (checkpoints, resume, metrics) is
`run_folder`.
"""

from kimmy_swarm.kernels.lazy_exports import lazy_exports as _lazy_exports

__all__, __getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        ".data": [
            "TokenData",
            "TrainingCorpusError",
            "read_text_corpus",
            "tokenize_corpus",
        ],
        ".grpo": ["GRPOConfig", "GRPOResult", "Prompt", "Sample", "Scored", "train_grpo"],
        ".loop": [
            "TrainConfig",
            "TrainResult",
            "eval_loss",
            "lr_factor",
            "make_optimizer",
            "train",
        ],
        ".run_folder": ["METRICS_FILE", "TRAINER_STATE", "latest_checkpoint"],
        "kimmy_swarm.model.python_docs": ["python_docs_texts"],
    },
)
