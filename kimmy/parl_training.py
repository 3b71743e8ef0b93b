"""`kimmy train parl`: GRPO of an orchestrator on spawn tasks, PARL-rewarded, on our engine.

    kimmy train parl --out runs/parl                       # SmolLM2, the Python docstrings
    kimmy train parl --out runs/parl --corpus papers.json --reward result --steps 60
    kimmy train parl --out runs/parl --resume --steps 80   # continue (settings from the run)

The policy (`--model`, SmolLM2-135M-Instruct by default) answers spawn tasks
(`agents.parl`: which of N documents meet a condition) with one tool call, sampled by the
serving engine with token ids and logprobs; each completion is carried out by a real swarm
with frozen extractor sub-agents and scored r = λ1·r_inst + λ2·r_comp + r_result
(`--reward parl`: both λ annealed linearly from 1 to 0 over `--anneal-steps`; `result`:
λ1 = λ2 = 0; `no-comp`: λ2 = 0); `model.train.grpo` takes the clipped policy step. The run
folder holds `parl.json` (the settings), `tasks.jsonl`, `metrics.jsonl` and HF-format
`checkpoint-*` folders. This module wires the two sides (`agents` and `model` never import
each other); `benchmarks/experiments/parl.py` runs its arms through `run_parl_training`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm.errors import ConfigError

if TYPE_CHECKING:
    from kimmy_swarm.agents.parl import SpawnTask
    from kimmy_swarm.model.train.grpo import GRPOConfig, GRPOResult

#: The reward arms: which PARL terms count (see the module docstring).
REWARD_ARMS = ("parl", "result", "no-comp")
SETTINGS_FILE = "parl.json"
TASKS_FILE = "tasks.jsonl"


@dataclass(frozen=True)
class ParlSettings:
    """What a `kimmy train parl` run trains on (kept in `parl.json`; a resume reuses it).

    Attributes:
        model: the starting orchestrator (`model.serve.factory.load_source`: "smollm2",
            a .gguf file, a checkpoint folder).
        corpus: the documents of the tasks (None: the installed Python's module
            docstrings, written into the run folder).
        tasks: how many spawn tasks to draw.
        width: documents per task.
        reward: one of `REWARD_ARMS`.
        anneal_steps: steps until λ reaches 0 (None: the run's steps).
        step_latency_s: simulated work per document an extractor reads.
        seed: the draw of the tasks.
    """

    model: str = "smollm2"
    corpus: str | None = None
    tasks: int = 32
    width: int = 6
    reward: str = "parl"
    anneal_steps: int | None = None
    step_latency_s: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        if self.reward not in REWARD_ARMS:
            allowed = ", ".join(REWARD_ARMS)
            raise ConfigError(f"reward must be one of {allowed}; got {self.reward!r}")
        for name in ("tasks", "width"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (2 if name == "width" else 1):
                low = 2 if name == "width" else 1
                raise ConfigError(f"{name} must be an integer ≥ {low}; got {value!r}")
        if self.anneal_steps is not None and self.anneal_steps < 1:
            raise ConfigError(f"anneal_steps must be ≥ 1; got {self.anneal_steps!r}")
        if self.step_latency_s < 0:
            raise ConfigError(f"step_latency_s must be ≥ 0; got {self.step_latency_s!r}")

    def lambdas(self, steps: int) -> tuple[Any, Any]:
        """(λ1, λ2) of the arm: schedules or constants for `rewards.parl.score`."""
        from kimmy_swarm.rewards.parl import Schedule

        linear = Schedule(kind="linear", total_steps=self.anneal_steps or steps)
        return {"parl": (linear, linear), "result": (0.0, 0.0), "no-comp": (linear, 0.0)}[
            self.reward
        ]


def _corpus_path(settings: ParlSettings, out: Path) -> Path:
    if settings.corpus is not None:
        return Path(settings.corpus).expanduser()
    from kimmy_swarm.agents.demo import DEMO_PACKAGES
    from kimmy_swarm.agents.tools.docstring_corpus import write_docstring_corpus

    folder = out / "docs-corpus"
    if not folder.is_dir():
        write_docstring_corpus(folder, limit=400, packages=DEMO_PACKAGES)
    return folder


def _tasks(settings: ParlSettings, out: Path, corpus: Any, source: Path) -> list[SpawnTask]:
    from kimmy_swarm.agents.parl import SpawnTask, make_spawn_tasks

    file = out / TASKS_FILE
    if file.is_file():
        lines = file.read_text(encoding="utf-8").splitlines()
        return [SpawnTask.model_validate_json(line) for line in lines if line.strip()]
    tasks = make_spawn_tasks(
        corpus, count=settings.tasks, width=settings.width, seed=settings.seed, source=source
    )
    file.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    return tasks


def _settings(settings: ParlSettings, out: Path, resume: bool) -> ParlSettings:
    """The run's settings: on resume, those it was started with."""
    file = out / SETTINGS_FILE
    if resume:
        if not file.is_file():
            raise ConfigError(f"--resume: {file} is missing (not a `kimmy train parl` run)")
        return ParlSettings(**json.loads(file.read_text(encoding="utf-8"))["parl"])
    return settings


def run_parl_training(
    settings: ParlSettings,
    cfg: GRPOConfig,
    out: Path,
    *,
    resume: bool = False,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> GRPOResult:
    """Train the orchestrator; see the module docstring.

    Raises:
        ConfigError: bad settings; `--resume` of a folder that is not such a run.
        ModelConfigError, CheckpointError: from the trainer (a folder already holding a
            run without resume, a resume with other training settings).
        CorpusError, SpawnTaskError: the corpus cannot give tasks of this width.
    """
    from kimmy_swarm.agents.parl import ParlScorer, SpawnEnv, spawn_messages, spawn_tools
    from kimmy_swarm.agents.tools.corpus import load_corpus
    from kimmy_swarm.agents.widesearch.task import ICLR_DEFAULTS
    from kimmy_swarm.model.serve.factory import load_source
    from kimmy_swarm.model.train.grpo import Prompt, train_grpo

    out.mkdir(parents=True, exist_ok=True)
    settings = _settings(settings, out, resume)
    source = _corpus_path(settings, out)
    corpus = load_corpus(source, defaults=ICLR_DEFAULTS)
    tasks = _tasks(settings, out, corpus, source)
    if not resume and not (out / "metrics.jsonl").exists():
        record = {"parl": dataclasses.asdict(settings), "grpo": dataclasses.asdict(cfg)}
        (out / SETTINGS_FILE).write_text(json.dumps(record, indent=2), encoding="utf-8")
    lambda1, lambda2 = settings.lambdas(cfg.steps)
    prompts = [Prompt(t.id, tuple(spawn_messages(t)), tuple(spawn_tools(t))) for t in tasks]
    loaded = load_source(settings.model, quant="none")  # trained: PyTorch, float32
    with SpawnEnv(corpus, step_latency_s=settings.step_latency_s) as env:
        scorer = ParlScorer(env, tasks, lambda1=lambda1, lambda2=lambda2)
        return train_grpo(
            loaded.model, loaded.tokenizer, prompts, scorer, cfg,
            out_dir=out, resume=resume, on_step=on_step,
        )  # fmt: skip


def step_line(row: dict[str, Any], steps: int) -> str:
    """One progress line per step."""
    return (
        f"step {row['step']}/{steps}: reward {row['reward']:.3f}  r_result "
        f"{row.get('r_result', 0):.3f}  sub-agents {row.get('spawned', 0):.2f} "
        f"({row.get('completed', 0):.2f} completed)  critical steps "
        f"{row.get('critical_steps', 0):.2f}  λ1 {row.get('lambda1', 0):.2f}  "
        f"{row['step_s']:.1f} s"
    )


__all__ = ["REWARD_ARMS", "ParlSettings", "run_parl_training", "step_line"]
