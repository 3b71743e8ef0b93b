"""`kimmy train lm`: train a small Kimi Linear LM on local text, on CPU or a GPU if present;
`kimmy train parl`: GRPO of an orchestrator with PARL rewards (`kimmy.parl_training`).

    kimmy train lm --out runs/tiny                        # the Python docs, tiny preset
    kimmy train lm notes/ papers.json --out runs/p --steps 500 --optimizer adamw
    kimmy train lm --out runs/tiny --resume --steps 400   # continue from the last checkpoint

A byte-level BPE tokenizer is trained on the corpus and saved in every checkpoint; with
`--resume` the checkpoint's model config and tokenizer are used (the model flags are then
ignored). The model sizes are `model.presets`. Only typer is imported here: torch and the
model load when the command runs, so the rest of `kimmy` starts fast.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kimmy_swarm.cli.options import GROUP_HELP, command_group, fail, int_option

if TYPE_CHECKING:
    from kimmy_swarm.model.train.loop import TrainResult

__all__ = ["EVAL_FRACTION", "app", "lm_cmd", "parl_cmd"]

#: Share of the token stream held out for the eval loss.
EVAL_FRACTION = 0.1


class Preset(StrEnum):
    """`--preset`: the names of `model.presets.PRESETS` (a test pins that they agree)."""

    tiny = "tiny"
    small = "small"


class OptimizerName(StrEnum):
    muonclip = "muonclip"
    adamw = "adamw"


class DeviceName(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


class ResidualName(StrEnum):
    standard = "standard"
    full_attnres = "full_attnres"
    block_attnres = "block_attnres"


def _device(name: str) -> str:
    import torch

    from kimmy_swarm.model.errors import ModelConfigError

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ModelConfigError("--device cuda: no CUDA device is available; use auto or cpu")
    return name


def _skipped(path: Path, reason: str) -> None:
    typer.echo(f"kimmy: skipped {path}: {reason}", err=True)


def _run(paths: list[Path], out: Path, opts: dict[str, Any]) -> TrainResult:
    """Read the corpus, build or reload tokenizer and model, train; user errors propagate."""
    import torch

    from kimmy_swarm.model.config import KimiLinearConfig
    from kimmy_swarm.model.errors import CheckpointError
    from kimmy_swarm.model.modeling import KimiLinearForCausalLM
    from kimmy_swarm.model.presets import model_config
    from kimmy_swarm.model.python_docs import python_docs_texts
    from kimmy_swarm.model.tokenizer import load_tokenizer, train_bpe_tokenizer
    from kimmy_swarm.model.train.data import read_text_corpus, tokenize_corpus
    from kimmy_swarm.model.train.loop import TrainConfig, train
    from kimmy_swarm.model.train.run_folder import latest_checkpoint

    device = _device(opts.pop("device"))
    texts = read_text_corpus(paths, on_skip=_skipped) if paths else python_docs_texts()
    model_opts = {k: opts.pop(k) for k in ("preset", "layers", "hidden", "residual")}
    vocab_size = opts.pop("vocab_size")
    resume = opts.pop("resume")
    cfg = TrainConfig(**opts)  # validated before the slow parts
    if resume:
        ckpt = latest_checkpoint(out)
        if ckpt is None:
            raise CheckpointError(f"--resume: no complete checkpoint-* folder in {out}")
        tokenizer: Any = load_tokenizer(ckpt)
        config = KimiLinearConfig.from_pretrained(ckpt)
    else:
        tokenizer = train_bpe_tokenizer(texts, vocab_size=vocab_size)
        ids = (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id)
        config = model_config(vocab_size=tokenizer.vocab_size, special_ids=ids, **model_opts)
    train_part, eval_part = tokenize_corpus(texts, tokenizer).split(EVAL_FRACTION)
    torch.manual_seed(cfg.seed)  # the initial weights depend on the seed only
    model = KimiLinearForCausalLM(config).to(device)
    return train(model, train_part, eval_part, cfg, out_dir=out, tokenizer=tokenizer, resume=resume)


Paths = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Text files or folders (.txt .md .rst .json .jsonl); none: the Python "
        "documentation shipped with the interpreter.",
        show_default=False,
    ),
]
Out = Annotated[
    Path, typer.Option("--out", help="Run folder: checkpoints and metrics.jsonl.", file_okay=False)
]
Layers = Annotated[int | None, int_option("Layers (default: the preset's).")]
Hidden = Annotated[int | None, int_option("Hidden size (default: the preset's).")]


def lm_cmd(
    out: Out,
    paths: Paths = None,
    preset: Annotated[Preset, typer.Option(help="Model size.")] = Preset.tiny,
    layers: Layers = None,
    hidden: Hidden = None,
    steps: Annotated[int, int_option("Optimizer steps.")] = 200,
    batch_size: Annotated[int, int_option("Sequences per step.")] = 8,
    seq_len: Annotated[int, int_option("Tokens per sequence.")] = 128,
    optimizer: Annotated[OptimizerName, typer.Option(help="Optimizer.")] = OptimizerName.muonclip,
    lr: Annotated[float, typer.Option(help="Peak learning rate.")] = 3e-3,
    vocab_size: Annotated[int, int_option("Most BPE tokens.", low=259)] = 2048,
    eval_every: Annotated[int, int_option("Steps between eval losses.")] = 50,
    checkpoint_every: Annotated[int, int_option("Steps between checkpoints.")] = 100,
    resume: Annotated[bool, typer.Option(help="Continue from the last checkpoint.")] = False,
    seed: Annotated[int, int_option("Seed of the weights and batches.", low=0)] = 0,
    device: Annotated[DeviceName, typer.Option(help="Where to train.")] = DeviceName.auto,
    residual: Annotated[
        ResidualName, typer.Option(help="Residual stream.")
    ] = ResidualName.standard,
) -> None:
    """Train a small Kimi Linear LM on local text, with eval loss, checkpoints and resume."""
    from kimmy_swarm.model.errors import KimiModelError

    opts: dict[str, Any] = {
        "preset": preset.value, "layers": layers, "hidden": hidden, "residual": residual.value,
        "vocab_size": vocab_size, "resume": resume, "device": device.value,
        "steps": steps, "batch_size": batch_size, "seq_len": seq_len,
        "optimizer": optimizer.value, "lr": lr, "eval_every": eval_every,
        "checkpoint_every": checkpoint_every, "seed": seed,
    }  # fmt: skip
    try:
        result = _run(list(paths or []), out, opts)
    except KimiModelError as e:
        raise fail(str(e)) from e
    loss = "n/a" if result.final_eval_loss is None else f"{result.final_eval_loss:.4f}"
    typer.echo(
        f"kimmy: trained {result.steps} steps: eval loss {loss}, {result.tokens_seen} tokens, "
        f"{result.tokens_per_s:.0f} tokens/s; checkpoint: {result.checkpoint}"
    )


class RewardArm(StrEnum):
    """`--reward`: `kimmy.parl_training.REWARD_ARMS` (a test pins that they agree)."""

    parl = "parl"
    result = "result"
    no_comp = "no-comp"


def parl_cmd(
    out: Out,
    corpus: Annotated[
        Path | None,
        typer.Option(help="Documents of the tasks (default: the installed Python's docstrings)."),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            "--checkpoint",
            "--model",
            help="Starting orchestrator: smollm2, a .gguf file or a checkpoint folder "
            "(--model: the old name, deprecated).",
        ),
    ] = "smollm2",
    reward: Annotated[
        RewardArm,
        typer.Option(
            help="parl: λ1·r_inst + λ2·r_comp + r_result, λ annealed; result: r_result only; "
            "no-comp: without r_comp."
        ),
    ] = RewardArm.parl,
    steps: Annotated[int, int_option("Optimizer steps (in all, a resume included).")] = 40,
    tasks: Annotated[int, int_option("Spawn tasks drawn from the corpus.")] = 32,
    width: Annotated[
        int,
        typer.Option(
            "--docs-per-task",
            "--width",
            min=2,
            help="Documents per task (--width: the old name, deprecated).",
        ),
    ] = 6,
    tasks_per_step: Annotated[int, int_option("Tasks per step.")] = 2,
    group_size: Annotated[int, typer.Option("-k", min=2, help=GROUP_HELP)] = 4,
    lr: Annotated[float, typer.Option(help="AdamW learning rate.")] = 1e-5,
    anneal_steps: Annotated[
        int | None, int_option("Steps until λ reaches 0 (default: --steps).")
    ] = None,
    train_layers: Annotated[
        int | None, int_option("Train only the last N decoder layers (default: all weights).")
    ] = None,
    max_new_tokens: Annotated[int, int_option("Most tokens of one completion.")] = 48,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    step_latency: Annotated[
        float, typer.Option(help="Seconds of simulated work per document an extractor reads.")
    ] = 0.05,
    checkpoint_every: Annotated[int, int_option("Steps between checkpoints.")] = 10,
    resume: Annotated[
        bool, typer.Option(help="Continue from the last checkpoint (the run's own settings).")
    ] = False,
    seed: Annotated[int, int_option("Seed of the tasks and samples.", low=0)] = 0,
) -> None:
    """Train an orchestrator to spawn sub-agents with GRPO and PARL rewards (frozen sub-agents)."""
    from kimmy_swarm.cli.parl_training import ParlSettings, run_parl_training, step_line
    from kimmy_swarm.model.errors import KimiModelError
    from kimmy_swarm.model.train.grpo import GRPOConfig
    from kimmy_swarm.swarm.errors import UserError

    try:
        settings = ParlSettings(
            model=model, corpus=str(corpus) if corpus is not None else None, tasks=tasks,
            width=width, reward=reward.value, anneal_steps=anneal_steps,
            step_latency_s=step_latency, seed=seed,
        )  # fmt: skip
        cfg = GRPOConfig(
            steps=steps, tasks_per_step=tasks_per_step, group_size=group_size, lr=lr,
            temperature=temperature, max_new_tokens=max_new_tokens, train_layers=train_layers,
            checkpoint_every=checkpoint_every, seed=seed,
        )  # fmt: skip
        result = run_parl_training(
            settings, cfg, out, resume=resume,
            on_step=lambda row: typer.echo(step_line(row, steps)),
        )  # fmt: skip
    except (KimiModelError, UserError) as e:
        raise fail(str(e)) from e
    last = result.rows[-1] if result.rows else {}
    typer.echo(
        f"kimmy: trained {result.steps} step{'' if result.steps == 1 else 's'}: "
        f"reward {last.get('reward', 0):.3f}, "
        f"sub-agents {last.get('spawned', 0):.2f} per rollout; checkpoint: {result.checkpoint}"
    )


app = command_group()
#: `kimmy train …`: `lm` and `parl`.
train_app = typer.Typer(
    help="Train models on local data.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
train_app.command("lm")(lm_cmd)
train_app.command("parl")(parl_cmd)
app.add_typer(train_app, name="train")
