"""The distribution installs under one import root, `kimmy_swarm`: every folder of the
package is listed in pyproject.toml, nothing imports the bare folder names, and the wheel
installs beside the OpenAI Agents SDK (a top-level `agents`) and current transformers (which
imports Hugging Face's top-level `kernels`) without either breaking."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The repository's package folders, by their name under the import root.
FOLDERS: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]
BARE = ("swarm", "agents", "rewards", "model", "kernels", "kimmy")


def _folders_with_files(top: Path) -> list[Path]:
    return [
        d
        for d in [top, *sorted(p for p in top.rglob("*") if p.is_dir())]
        if d.name != "__pycache__" and any(f.is_file() for f in d.iterdir())
    ]


def test_every_folder_of_the_package_is_listed() -> None:
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found: set[str] = set()
    for name, folder in FOLDERS.items():
        for d in _folders_with_files(ROOT / folder):
            found.add(".".join([name, *d.relative_to(ROOT / folder).parts]))
    assert found - listed == set(), "folders missing from [tool.setuptools] packages"
    assert listed - found == set(), "packages listed without a folder"


#: An import of one of our folders by its bare name, in code or in a snippet of the docs.
_NAMES = "|".join(BARE)
_BARE_IMPORT = re.compile(
    rf"^\s*(?:>>> )?(?:from (?:{_NAMES})(?:\.\w+)* import "
    rf"|import (?:{_NAMES})(?:\.\w+)*\s*(?:$|,| as ))",
    re.M,
)


def test_nothing_imports_the_bare_folder_names() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "*.py", "*.md"], cwd=ROOT, capture_output=True, text=True
    )
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    offenders = [
        f"{name}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0).strip()}"
        for name in tracked.stdout.split()
        for text in [(ROOT / name).read_text(encoding="utf-8", errors="replace")]
        for m in _BARE_IMPORT.finditer(text)
        if "# not ours" not in text[m.start() : text.find("\n", m.start())]
    ]
    assert offenders == []


def _pip(venv: Path, *args: str, timeout: float = 1_200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", *args, "--disable-pip-version-check"],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def _python(venv: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=cwd
    )


#: Our public API, the SDK's own `agents.Agent`, Hugging Face's `kernels` and transformers
#: (our `kernels` needs torch only for its kernels, which the base install leaves out).
_BESIDE = """
from kimmy_swarm.agents import Role, SubAgent
import agents, kernels, transformers  # not ours: the SDK's and Hugging Face's
import kimmy_swarm.kernels as ours
print(Role.__module__, SubAgent.__module__, agents.Agent.__name__, kernels.__name__,
      hasattr(kernels, "get_kernel"), transformers.__version__, ours.__all__)
"""


def test_the_wheel_installs_beside_openai_agents_and_current_transformers(
    tmp_path: Path,
) -> None:
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("kimmy_swarm-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = _pip(venv, "install", "-q", str(wheel), "openai-agents", "transformers")
    if installed.returncode != 0 and re.search(
        r"(?i)connection|network is unreachable|no matching distribution", installed.stderr
    ):
        pytest.skip(f"no package index to install from: {installed.stderr.strip()[-300:]}")
    assert installed.returncode == 0, installed.stderr

    beside = _python(venv, _BESIDE, tmp_path)
    assert beside.returncode == 0, beside.stderr
    role_module, subagent_module, agent, kernels_name, hf_kernels, _, kda = beside.stdout.split()
    assert role_module == "kimmy_swarm.agents.roles"
    assert subagent_module == "kimmy_swarm.agents.subagent"
    assert (agent, kernels_name, hf_kernels) == ("Agent", "kernels", "True")  # theirs
    assert kda == "['kda']"  # ours

    demo = subprocess.run(
        [str(venv / "bin" / "kimmy"), "demo", "--no-store", "--out", str(tmp_path / "demo")],
        capture_output=True, text=True, cwd=tmp_path, timeout=900,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stdout[-2_000:] + demo.stderr[-2_000:]
    assert (tmp_path / "demo" / "analysis" / "report.md").is_file()
    assert (tmp_path / "demo" / "review" / "review.md").is_file()

    removed = _pip(venv, "uninstall", "-y", "-q", "openai-agents")
    assert removed.returncode == 0, removed.stderr
    after = _python(venv, "import agents", tmp_path)
    assert "No module named 'agents'" in after.stderr  # the SDK's files went, ours stayed
    code = "from kimmy_swarm.agents import Role, SubAgent; print(Role.__name__)"
    ours = _python(venv, code, tmp_path)
    assert ours.returncode == 0 and ours.stdout.strip() == "Role", ours.stderr
