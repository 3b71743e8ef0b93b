"""vLLM integration without vLLM: the `vllm serve` argv for our checkpoints, the plugin's
registration and entry point, and the Attention Residuals stack of `kimmy_swarm.model.vllm_model`.

vLLM needs a CUDA GPU and is not installed here. The one test double is a `vllm` module
holding a recording `ModelRegistry` (the registry interface the plugin calls); checkpoints
are real folders saved by `KimiLinearForCausalLM.save_pretrained`, entry points are found by
`importlib.metadata` from real dist-info folders, and child processes are real.
"""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest
import tokenizers
import torch
from torch import nn

from kimmy_swarm.model import (
    CheckpointError,
    KimiLinearConfig,
    KimiLinearForCausalLM,
    ModelConfigError,
)
from kimmy_swarm.model.checkpoint import load_state_dict
from kimmy_swarm.model.serve import vllm_launch
from kimmy_swarm.model.serve.vllm_launch import (
    VLLMNotAvailableError,
    build_vllm_command,
    run_forwarding_signals,
    run_vllm,
    vllm_available,
)
from kimmy_swarm.model.tokenizer import HFTokenizer
from kimmy_swarm.model.vllm_model import (
    Sublayer,
    attach_depth_mixers,
    attnres_settings,
    depth_forward,
)
from kimmy_swarm.model.vllm_plugin import (
    ATTNRES_ARCHITECTURE,
    ENTRY_POINT,
    ENTRY_POINT_GROUP,
    MODEL_CLASS,
    STANDARD_ARCHITECTURE,
    register,
)

ROOT = Path(__file__).resolve().parents[3]


def tiny_tokenizer() -> HFTokenizer:
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2, "a": 3}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    return HFTokenizer(tok, {"bos_token": "[BOS]", "eos_token": "[EOS]"})


def save(folder: Path, *, residual: str = "standard", tokenizer: bool = True, **cfg) -> Path:
    model = KimiLinearForCausalLM(KimiLinearConfig.tiny(residual=residual, **cfg))
    return model.save_pretrained(folder, tokenizer=tiny_tokenizer() if tokenizer else None)


@pytest.fixture
def plugin_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed distribution that declares our entry point, as `pip install` writes it,
    whatever the state of this environment's own install."""
    info = tmp_path / "site" / "kimmy_plugin_probe-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kimmy-probe\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nkimmy = {ENTRY_POINT}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delenv("VLLM_PLUGINS", raising=False)


# ---- config.json architectures ----------------------------------------------------------
@pytest.mark.parametrize(
    ("residual", "arch"),
    [
        ("standard", STANDARD_ARCHITECTURE),
        ("full_attnres", ATTNRES_ARCHITECTURE),
        ("block_attnres", ATTNRES_ARCHITECTURE),
    ],
)
def test_config_names_the_architecture_of_its_residual(
    residual: str, arch: str, tmp_path: Path
) -> None:
    cfg = KimiLinearConfig.tiny(residual=residual)
    cfg.save_pretrained(tmp_path)
    raw = json.loads((tmp_path / "config.json").read_text())
    assert raw["architectures"] == [arch]
    back = KimiLinearConfig.from_pretrained(tmp_path)  # either name reads back
    assert back == cfg and back.to_dict()["architectures"] == [arch]


def test_a_read_architecture_does_not_outlive_a_residual_change() -> None:
    read = KimiLinearConfig.from_dict(KimiLinearConfig.tiny(residual="full_attnres").to_dict())
    assert read.replace(residual="standard").to_dict()["architectures"] == [STANDARD_ARCHITECTURE]
    std = KimiLinearConfig.from_dict(KimiLinearConfig.tiny().to_dict())
    assert std.replace(residual="block_attnres").to_dict()["architectures"] == [
        ATTNRES_ARCHITECTURE
    ]


# ---- build_vllm_command -------------------------------------------------------------------
def test_standard_checkpoint_uses_vllm_builtin_model(tmp_path: Path) -> None:
    folder = save(tmp_path / "std")
    argv = build_vllm_command(folder)
    assert argv == ["vllm", "serve", str(folder), "--host", "127.0.0.1", "--port", "8000"]


def test_all_options_reach_the_command(tmp_path: Path) -> None:
    folder = save(tmp_path / "std")
    argv = build_vllm_command(
        str(folder),
        host="0.0.0.0",
        port=9001,
        api_key="sk-test",
        max_model_len=2048,
        served_model_name="kimmy-tiny",
        tensor_parallel_size=2,
        extra_args=["--dtype", "bfloat16"],
    )
    assert argv == [
        "vllm", "serve", str(folder), "--host", "0.0.0.0", "--port", "9001",
        "--served-model-name", "kimmy-tiny", "--api-key", "sk-test",
        "--max-model-len", "2048", "--tensor-parallel-size", "2", "--dtype", "bfloat16",
    ]  # fmt: skip


@pytest.mark.usefixtures("plugin_dist")
@pytest.mark.parametrize("residual", ["full_attnres", "block_attnres"])
def test_attnres_checkpoint_runs_eager_through_the_plugin(residual: str, tmp_path: Path) -> None:
    folder = save(tmp_path / "attnres", residual=residual)
    argv = build_vllm_command(folder, port=8123)
    assert argv == [
        "vllm", "serve", str(folder), "--host", "127.0.0.1", "--port", "8123", "--enforce-eager",
    ]  # fmt: skip
    assert "--enforce-eager" not in build_vllm_command(folder, enforce_eager=False)
    assert "--enforce-eager" in build_vllm_command(save(tmp_path / "s"), enforce_eager=True)


def test_attnres_without_the_plugin_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = save(tmp_path / "attnres", residual="block_attnres")
    empty = tmp_path / "no-site-packages"
    empty.mkdir()
    monkeypatch.setattr(sys, "path", [str(empty)])  # an environment with no distributions
    with pytest.raises(VLLMNotAvailableError) as err:
        build_vllm_command(folder)
    msg = str(err.value)
    assert str(folder) in msg and ENTRY_POINT in msg and "pip install -e" in msg
    build_vllm_command(save(tmp_path / "std"))  # a standard checkpoint needs no plugin


@pytest.mark.usefixtures("plugin_dist")
def test_vllm_plugins_filter_that_leaves_ours_out_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = save(tmp_path / "attnres", residual="full_attnres")
    monkeypatch.setenv("VLLM_PLUGINS", "someone_else")
    with pytest.raises(VLLMNotAvailableError, match="VLLM_PLUGINS='someone_else'"):
        build_vllm_command(folder)
    monkeypatch.setenv("VLLM_PLUGINS", "someone_else,kimmy")
    assert "--enforce-eager" in build_vllm_command(folder)


def test_remote_code_is_trusted_only_when_the_folder_ships_code(tmp_path: Path) -> None:
    ours = save(tmp_path / "ours")
    assert "--trust-remote-code" not in build_vllm_command(ours)
    auto_map = {"AutoConfig": "configuration_kimi.KimiLinearConfig"}
    published = save(tmp_path / "published", extra={"auto_map": auto_map})
    assert "--trust-remote-code" in build_vllm_command(published)
    tiktoken_like = save(tmp_path / "tiktoken", tokenizer=False)
    (tiktoken_like / "tiktoken.model").write_text("YQ== 0\n")
    tok_cfg = {"auto_map": {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", None]}}
    (tiktoken_like / "tokenizer_config.json").write_text(json.dumps(tok_cfg))
    assert "--trust-remote-code" in build_vllm_command(tiktoken_like)


def test_missing_config_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match=r"empty has no config\.json"):
        build_vllm_command(tmp_path / "empty")
    with pytest.raises(CheckpointError, match="does not exist"):
        build_vllm_command(tmp_path / "nowhere")


def test_an_attnres_config_saved_under_the_standard_name_is_refused(tmp_path: Path) -> None:
    folder = save(tmp_path / "old", residual="full_attnres")
    raw = json.loads((folder / "config.json").read_text())
    raw["architectures"] = [STANDARD_ARCHITECTURE]  # vLLM would load it as a standard model
    (folder / "config.json").write_text(json.dumps(raw))
    with pytest.raises(CheckpointError, match="re-save"):
        build_vllm_command(folder)


def test_a_folder_without_tokenizer_is_refused_unless_one_is_given(tmp_path: Path) -> None:
    folder = save(tmp_path / "bare", tokenizer=False)
    with pytest.raises(CheckpointError, match="no tokenizer"):
        build_vllm_command(folder)
    argv = build_vllm_command(folder, extra_args=["--tokenizer=/tok"])
    assert argv[-1] == "--tokenizer=/tok"


def test_out_of_range_options_are_refused(tmp_path: Path) -> None:
    folder = save(tmp_path / "std")  # 4 attention heads, 4 KDA heads
    with pytest.raises(ModelConfigError, match="tensor_parallel_size 3"):
        build_vllm_command(folder, tensor_parallel_size=3)
    with pytest.raises(ModelConfigError, match="port"):
        build_vllm_command(folder, port=0)
    with pytest.raises(ModelConfigError, match="max_model_len"):
        build_vllm_command(folder, max_model_len=0)


# ---- run_vllm -----------------------------------------------------------------------------
@pytest.mark.skipif(vllm_available(), reason="vLLM is installed in this environment")
def test_run_vllm_without_vllm_says_so_plainly(tmp_path: Path) -> None:
    with pytest.raises(VLLMNotAvailableError) as err:
        run_vllm(save(tmp_path / "std"), port=8000)
    assert str(err.value).startswith("vLLM is not installed: pip install vllm (needs a CUDA GPU")


def test_child_status_and_environment_come_through() -> None:
    code = "import os, sys; sys.exit(int(os.environ['KIMMY_RC']))"
    assert run_forwarding_signals([sys.executable, "-c", code], env={"KIMMY_RC": "7"}) == 7
    killed = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    assert run_forwarding_signals([sys.executable, "-c", killed]) == 128 + signal.SIGKILL


def test_a_signal_to_the_launcher_reaches_the_server() -> None:
    """The child sends SIGTERM to its parent (this process) and waits; only forwarding can
    end it with its own status 42. The parent's handlers are restored afterwards."""
    before = signal.getsignal(signal.SIGTERM)
    child = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(42))\n"
        "os.kill(os.getppid(), signal.SIGTERM)\n"
        "time.sleep(20)\n"
        "sys.exit(1)\n"
    )
    assert run_forwarding_signals([sys.executable, "-c", child]) == 42
    assert signal.getsignal(signal.SIGTERM) is before


# ---- the plugin ---------------------------------------------------------------------------
class RecordingRegistry:
    """Test double of vLLM's `ModelRegistry`: the two calls the plugin makes."""

    def __init__(self) -> None:
        self.models: dict[str, object] = {STANDARD_ARCHITECTURE: "vllm built-in"}
        self.calls: list[tuple[str, object]] = []

    def get_supported_archs(self) -> list[str]:
        return list(self.models)

    def register_model(self, arch: str, model_cls: object) -> None:
        self.calls.append((arch, model_cls))
        self.models[arch] = model_cls


def test_register_adds_our_architecture_once_in_lazy_form(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = RecordingRegistry()
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(ModelRegistry=registry))
    register()
    register()  # vLLM may load plugins more than once
    model_class = "kimmy_swarm.model.vllm_model:KimmyAttnResForCausalLM"
    assert registry.calls == [(ATTNRES_ARCHITECTURE, model_class)]
    assert registry.models[STANDARD_ARCHITECTURE] == "vllm built-in"  # left to vLLM
    module, _, cls = MODEL_CLASS.partition(":")
    mod = importlib.import_module(module)  # the lazy string names an importable module
    with pytest.raises(ImportError, match="runs inside vLLM"):
        getattr(mod, cls)  # the class itself subclasses vLLM's Kimi Linear


def test_entry_point_is_declared_in_pyproject() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    group = data["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert group == {"kimmy": ENTRY_POINT}
    module, _, attr = ENTRY_POINT.partition(":")
    assert getattr(importlib.import_module(module), attr) is register


def test_plugin_and_launcher_import_neither_torch_nor_vllm() -> None:
    code = (
        "import sys, kimmy_swarm.model.vllm_plugin, kimmy_swarm.model.serve.vllm_launch\n"
        "print(sorted(m for m in ('torch', 'vllm') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# ---- the Attention Residuals stack of kimmy_swarm.model.vllm_model -----------------------
@pytest.mark.parametrize("residual", ["full_attnres", "block_attnres"])
def test_depth_forward_with_checkpoint_mixers_reproduces_our_model(
    residual: str, tmp_path: Path
) -> None:
    """vLLM's layers are stood in for by a shell that holds only what
    `kimmy_swarm.model.vllm_model` adds
    (the mixers, loaded by their checkpoint names); the sublayers are our model's own."""
    cfg = KimiLinearConfig.tiny(residual=residual, attn_res_num_blocks=3)
    ref = KimiLinearForCausalLM(cfg).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # non-uniform depth weights: a wrong mixer must change the output
        for name, p in ref.named_parameters():
            if name.endswith(".query"):
                p.copy_(torch.randn(p.shape, generator=gen))
    folder = ref.save_pretrained(tmp_path / "ck")
    saved = {k: v for k, v in load_state_dict(folder).items() if k.endswith(".query")}
    shell = nn.Module()
    shell.add_module("layers", nn.ModuleList(nn.Module() for _ in range(cfg.num_hidden_layers)))
    attach_depth_mixers(shell, shell.layers, hidden_size=cfg.hidden_size, eps=cfg.rms_norm_eps)
    shell.load_state_dict({k.removeprefix("model."): v for k, v in saved.items()}, strict=True)

    def sublayers(i: int, _shell_layer: nn.Module) -> tuple[Sublayer, Sublayer]:
        layer = ref.model.layers[i]
        return (lambda x: layer.attention(x, attention_mask=None, cache=None)), layer.feed_forward

    hf_like = types.SimpleNamespace(**cfg.to_dict())  # how vLLM's config object carries keys
    res, size = attnres_settings(hf_like)
    assert (res, size) == (residual, ref.model.block_size)
    ids = torch.randint(0, cfg.vocab_size, (2, 7), generator=gen)  # (B, T)
    with torch.no_grad():
        h = ref.model.embed_tokens(ids)  # (B, T, D)
        x = depth_forward(
            h, shell.layers, sublayers, shell.final_res, residual=res, block_size=size
        )  # (B, T, D)
        torch.testing.assert_close(ref.model.norm(x), ref.model(ids), rtol=0, atol=0)


def test_attnres_settings_refuse_a_standard_config() -> None:
    with pytest.raises(ModelConfigError, match="KimiLinearForCausalLM"):
        attnres_settings(types.SimpleNamespace(**KimiLinearConfig.tiny().to_dict()))
    cfg = types.SimpleNamespace(residual="block_attnres", num_hidden_layers=4)
    with pytest.raises(ModelConfigError, match="attn_res_num_blocks"):
        attnres_settings(cfg)


def test_launcher_module_exports() -> None:
    assert set(vllm_launch.__all__) >= {
        "VLLMNotAvailableError", "build_vllm_command", "run_vllm", "vllm_available",
    }  # fmt: skip
    model_errors = importlib.import_module("kimmy_swarm.model.errors")
    assert issubclass(VLLMNotAvailableError, model_errors.KimiModelError)
