"""Dashboard latency on stored runs of N one-step sub-agents (a root, N workers, a reduce).

    python benchmarks/bench_dashboard.py [--n 1000 10000] [--runs 5] [--out PATH]

For each N, over HTTP against the real server (uvicorn on loopback, a fresh app per round,
so the first calls build the run's view from the store): the first page load's API calls
(`/api/runs/{id}` then `/graph`), a second `/graph` (layout cached), a search by id and a
group's member list (`/agents`, 200 shown), the first event of a live stream, and one live
update: a batch of 100 `model_called` events appended to the store, until the stream
delivers the delta that shows it. The baseline is the store's own `load_run` of the same run
(what `kimmy show` reads), measured in the same process; ratios are to it. Medians of
`--runs`. The update includes the wait for the next poll (0.05 s here; 0.5 s by default).
Prints the page; `--out benchmarks/results/dashboard.md` writes the committed one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.swarm import Plan, Subtask, Swarm  # noqa: E402
from kimmy_swarm.swarm import events as ev  # noqa: E402
from kimmy_swarm.swarm.dashboard import BackgroundServer, create_app  # noqa: E402
from kimmy_swarm.swarm.schema import Usage  # noqa: E402
from kimmy_swarm.swarm.store import RunStore  # noqa: E402

RUN = "bench-dashboard"


async def _one_step(ctx: object) -> int:
    return 1


def stored_run(runs_dir: Path, n: int) -> None:
    subtasks = [Subtask(id="root", role="plan")]
    subtasks += [Subtask(id=f"w{i}", role="work", depends_on=["root"]) for i in range(n)]
    subtasks.append(Subtask(id="end", role="write", depends_on=[f"w{i}" for i in range(n)]))
    roles = dict.fromkeys(("plan", "work", "write"), _one_step)
    Swarm(runs_dir=runs_dir, max_concurrency=512, roles=roles).run_sync(
        Plan(goal=f"{n} one-step sub-agents", subtasks=subtasks), run_id=RUN
    )


def _append_calls(store: RunStore, n: int, seq: int, count: int = 100) -> int:
    batch = [
        ev.ModelCalled(run_id=RUN, seq=seq + i, ts=time.time(), subtask_id=f"w{i % n}",
                       latency_s=0.01, usage=Usage(total_tokens=10, model_calls=1))
        for i in range(count)
    ]  # fmt: skip
    store.append(RUN, batch)
    return seq + count


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def one_round(runs_dir: Path, n: int, seq: int) -> tuple[dict[str, float], int]:
    out: dict[str, float] = {}
    with RunStore(runs_dir) as store:
        out["load_run (baseline)"] = _timed(lambda: store.load_run(RUN))
    # a finished run's stream ends at once: the run is started again (as `resume` does),
    # so the stream stays open and the update is a poll of a live run
    with RunStore(runs_dir) as store:
        store.append(RUN, [ev.RunStarted(run_id=RUN, seq=seq, ts=time.time(), goal="",
                                         n_subtasks=n + 2, resumed=True)])  # fmt: skip
        seq += 1
        with (
            BackgroundServer(create_app(runs_dir, poll_s=0.05)) as srv,
            httpx.Client(base_url=srv.url, timeout=60) as http,
        ):
            t0 = time.perf_counter()
            http.get(f"/api/runs/{RUN}").raise_for_status()
            graph = http.get(f"/api/runs/{RUN}/graph").json()
            out["first load (run + graph)"] = time.perf_counter() - t0
            out["graph again"] = _timed(lambda: http.get(f"/api/runs/{RUN}/graph"))
            # a search box query and a group's member list (what a click on a group shows)
            find = f"/api/runs/{RUN}/agents?q=w{n // 2}&limit=200"
            out["find by id (200 shown)"] = _timed(lambda: http.get(find).raise_for_status())
            group = f"/api/runs/{RUN}/agents?group=s1:work&limit=200"
            out["group members (200 shown)"] = _timed(lambda: http.get(group).raise_for_status())
            url = f"/api/runs/{RUN}/stream?since={graph['seq']}&layout={graph['layout_key']}"
            t0 = time.perf_counter()
            with http.stream("GET", url) as resp:
                lines = resp.iter_lines()
                _next_data(lines)
                out["stream: first event"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                seq = _append_calls(store, n, seq)
                delta = _next_data(lines)
                out["stream: update (100 events)"] = time.perf_counter() - t0
                assert delta["seq"] == seq - 1, delta["seq"]
    return out, seq


def _next_data(lines: object) -> dict:
    for line in lines:  # type: ignore[attr-defined]
        if line.startswith("data: "):
            return json.loads(line[6:])
    raise RuntimeError("the stream ended")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=5)
    add_out_option(parser, "dashboard.md")
    args = parser.parse_args()
    rows = []
    for n in args.n:
        with tempfile.TemporaryDirectory() as tmp:
            runs_dir = Path(tmp)
            stored_run(runs_dir, n)
            with RunStore(runs_dir) as store:
                seq = store.load_run(RUN).next_seq
            samples: dict[str, list[float]] = {}
            seq = one_round(runs_dir, n, seq)[1]  # warm-up
            for _ in range(args.runs):
                figures, seq = one_round(runs_dir, n, seq)
                for k, v in figures.items():
                    samples.setdefault(k, []).append(v)
            base = statistics.median(samples["load_run (baseline)"])
            for k, v in samples.items():
                med = statistics.median(v)
                rows.append((n, k, med * 1000, med / base))
    table = ["| sub-agents | measure | median ms | × load_run |", "|---:|---|---:|---:|"]
    table += [f"| {n:,} | {k} | {ms:.1f} | {ratio:.2f} |" for n, k, ms, ratio in rows]
    text = "\n".join(table)
    publish(f"# Dashboard latency\n\n{__doc__.strip()}\n\n{text}\n", args.out)


if __name__ == "__main__":
    main()
