"""`RunLog`: the language-model trainer's counters and metrics rows (`model.train.loop`).

Each row is completed with step, tokens, throughput and elapsed time, appended (flushed) to
the run folder's `metrics.jsonl`, then handed to the caller's `on_metrics`; a resumed run
continues the counters of its checkpoint.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kimmy_swarm.model.train.run_folder import METRICS_FILE, kept_metrics


class RunLog:
    """Counters and metrics rows of one `train` call: each row is completed with step,
    tokens, throughput and elapsed time, appended (flushed) to `metrics.jsonl`, then handed
    to `on_metrics`."""

    def __init__(
        self,
        tokens_per_step: int,
        out_dir: Path | None,
        on_metrics: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        self.tokens_per_step, self.on_metrics = tokens_per_step, on_metrics
        self.file = None if out_dir is None else out_dir / METRICS_FILE
        self.step = self.tokens = 0
        self.prior_s = 0.0  # wall time of the runs this one resumes
        self.start = time.perf_counter()
        self.rows: list[dict[str, Any]] = []
        self.window_tokens, self.window_s = 0, 0.0  # trained since the previous row
        self.call_tokens, self.call_s = 0, 0.0  # trained by this call

    def resume_from(self, state: dict[str, Any], metrics_file: Path) -> None:
        """Continue the counters of a restored trainer state and its kept metrics rows."""
        self.step, self.tokens, self.prior_s = state["step"], state["tokens"], state["elapsed_s"]
        self.rows = kept_metrics(metrics_file, self.step)

    def elapsed(self) -> float:
        return self.prior_s + time.perf_counter() - self.start

    def advance(self, step_s: float) -> None:
        """Count one optimizer step that took `step_s` seconds."""
        self.step += 1
        self.tokens += self.tokens_per_step
        self.window_tokens += self.tokens_per_step
        self.window_s += step_s
        self.call_tokens += self.tokens_per_step
        self.call_s += step_s

    def emit(self, row: dict[str, Any]) -> None:
        """Complete `row`, keep it, append it to `metrics.jsonl` and hand it on."""
        row = {"step": self.step, "tokens": self.tokens, **row}
        if self.window_tokens:
            row["tokens_per_s"] = self.window_tokens / max(self.window_s, 1e-9)
        row["elapsed_s"] = self.elapsed()
        self.window_tokens, self.window_s = 0, 0.0
        self.rows.append(row)
        if self.file is not None:
            with self.file.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
                f.flush()
        if self.on_metrics is not None:
            self.on_metrics(dict(row))

    def stats(self, row: dict[str, Any]) -> str:
        """The progress bar's text: this step's loss and the latest eval loss."""
        evals = [r["eval_loss"] for r in self.rows if "eval_loss" in r]
        return f"loss {row['loss']:.3f}" + (f"  eval {evals[-1]:.3f}" if evals else "")


__all__ = ["RunLog"]
