"""HF-format checkpoint folders: single file and shards, ties, dtypes, overwrite, crash
safety, and the errors a broken folder or a wrong model gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from torch import nn

from kimmy_swarm.model import checkpoint as ckpt
from kimmy_swarm.model.checkpoint import load_into, load_state_dict, save_checkpoint
from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.errors import CheckpointError
from kimmy_swarm.model.tokenizer import load_tokenizer, train_bpe_tokenizer


class _Layer(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.self_attn = nn.Module()
        self.self_attn.q_proj = nn.Linear(d, d, bias=False)
        self.self_attn.o_proj = nn.Linear(d, d, bias=False)
        self.mlp = nn.Module()
        self.mlp.up_proj = nn.Linear(d, 2 * d, bias=False)
        self.mlp.down_proj = nn.Linear(2 * d, d, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, T, D)
        h = h + self.self_attn.o_proj(torch.tanh(self.self_attn.q_proj(h)))  # (B, T, D)
        return h + self.mlp.down_proj(torch.relu(self.mlp.up_proj(h)))  # (B, T, D)


class TinyLM(nn.Module):
    """Checkpoint names of the real model, a few layers, and an integer buffer."""

    def __init__(self, config: KimiLinearConfig, *, layers: int = 2) -> None:
        super().__init__()
        self.config = config
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.model.layers = nn.ModuleList(_Layer(config.hidden_size) for _ in range(layers))
        self.model.norm = nn.LayerNorm(config.hidden_size)
        self.model.register_buffer("step", torch.tensor([7, 11], dtype=torch.int64))
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, T, V)
        h = self.model.embed_tokens(ids)  # (B, T, D)
        for layer in self.model.layers:
            h = layer(h)  # (B, T, D)
        return self.lm_head(self.model.norm(h))  # (B, T, V)


def tiny(seed: int, **config: object) -> TinyLM:
    torch.manual_seed(seed)
    return TinyLM(KimiLinearConfig.tiny(**config))


IDS = torch.tensor([[1, 5, 9, 300, 42, 7]])


def assert_same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert torch.equal(a[name], b[name]), name


def shard_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("model-*.safetensors"))


# ---- round trips --------------------------------------------------------------------------
def test_single_file_round_trip(tmp_path: Path) -> None:
    src = tiny(0)
    out = save_checkpoint(src, tmp_path / "ck")
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]
    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
    state = load_state_dict(out)
    assert_same_state(state, src.state_dict())
    assert KimiLinearConfig.from_pretrained(out) == src.config
    dst = tiny(1)
    assert not torch.equal(dst(IDS), src(IDS))
    assert load_into(dst, state) == ckpt.LoadResult(missing=(), unexpected=())
    assert torch.equal(dst(IDS), src(IDS))


def test_sharded_round_trip_and_index(tmp_path: Path) -> None:
    src = tiny(0)
    out = save_checkpoint(src, tmp_path / "ck", max_shard_bytes=60_000)
    files = shard_files(out)
    assert len(files) >= 3 and not (out / "model.safetensors").exists()
    n = len(files)
    assert files == [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
    index = json.loads((out / "model.safetensors.index.json").read_text())
    sd = src.state_dict()
    assert index["weight_map"].keys() == sd.keys()
    assert index["metadata"]["total_size"] == sum(t.numel() * t.element_size() for t in sd.values())
    for file in files:
        with safe_open(str(out / file), framework="pt") as f:
            names = set(f.keys())
        assert names == {k for k, v in index["weight_map"].items() if v == file}
        size = sum(sd[k].numel() * sd[k].element_size() for k in names)
        assert size <= 60_000 or len(names) == 1  # only a lone oversize tensor may exceed it
    assert_same_state(load_state_dict(out), sd)


def test_dtypes_are_kept_and_cast_on_request(tmp_path: Path) -> None:
    src = tiny(0).to(torch.bfloat16)  # the int64 buffer stays int64
    out = save_checkpoint(src, tmp_path / "bf16", max_shard_bytes=50_000)
    assert_same_state(load_state_dict(out), src.state_dict())
    f32 = tiny(0)
    out = save_checkpoint(f32, tmp_path / "cast", dtype=torch.bfloat16)
    state = load_state_dict(out)
    assert state["model.step"].dtype == torch.int64
    assert state["lm_head.weight"].dtype == torch.bfloat16
    assert torch.equal(state["lm_head.weight"], f32.lm_head.weight.to(torch.bfloat16))
    assert KimiLinearConfig.from_pretrained(out).torch_dtype == "bfloat16"
    dst = tiny(1)  # a float32 model takes the bf16 values, upcast
    load_into(dst, state)
    assert dst.lm_head.weight.dtype == torch.float32
    assert torch.equal(dst.lm_head.weight, state["lm_head.weight"].float())


def test_tied_embeddings_are_written_once(tmp_path: Path) -> None:
    src = tiny(0, tie_word_embeddings=True)
    out = save_checkpoint(src, tmp_path / "ck", max_shard_bytes=60_000)
    state = load_state_dict(out)
    assert "lm_head.weight" not in state and "model.embed_tokens.weight" in state
    dst = tiny(1, tie_word_embeddings=True)
    load_into(dst, state)
    assert dst.lm_head.weight.data_ptr() == dst.model.embed_tokens.weight.data_ptr()
    assert torch.equal(dst(IDS), src(IDS))


def test_aliased_tensors_in_one_shard_are_saved(tmp_path: Path) -> None:
    # Untied config but shared storage: safetensors refuses aliases in one file.
    src = tiny(0)
    src.lm_head.weight = src.model.embed_tokens.weight
    assert_same_state(load_state_dict(save_checkpoint(src, tmp_path / "ck")), src.state_dict())


def test_tokenizer_is_saved_beside_the_weights(tmp_path: Path) -> None:
    tok = train_bpe_tokenizer(["the cat sat on the mat"] * 20, vocab_size=280)
    out = save_checkpoint(tiny(0), tmp_path / "ck", tokenizer=tok)
    assert load_tokenizer(out).encode("the mat") == tok.encode("the mat")


def test_real_model_round_trip_same_logits(tmp_path: Path) -> None:
    from kimmy_swarm.model.modeling import KimiLinearForCausalLM

    torch.manual_seed(0)
    src = KimiLinearForCausalLM(KimiLinearConfig.tiny()).eval()
    out = src.save_pretrained(tmp_path / "ck", max_shard_bytes=300_000)
    assert len(shard_files(out)) >= 3
    torch.manual_seed(1)
    dst = KimiLinearForCausalLM.from_pretrained(out)
    with torch.no_grad():
        assert torch.equal(dst(IDS), src(IDS))


# ---- overwrite and crash safety -----------------------------------------------------------
def test_overwrite_replaces_weights_and_keeps_other_files(tmp_path: Path) -> None:
    target = tmp_path / "ck"
    save_checkpoint(tiny(0), target, max_shard_bytes=60_000)
    (target / "notes.txt").write_text("keep me")
    newer = tiny(1)
    save_checkpoint(newer, target)  # sharded -> single file
    assert sorted(p.name for p in target.iterdir()) == [
        "config.json", "model.safetensors", "notes.txt",
    ]  # fmt: skip
    assert_same_state(load_state_dict(target), newer.state_dict())
    save_checkpoint(tiny(2), target, max_shard_bytes=60_000)  # single file -> sharded
    assert not (target / "model.safetensors").exists() and len(shard_files(target)) >= 3
    assert_same_state(load_state_dict(target), tiny(2).state_dict())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # no temp folders left


def test_no_loadable_half_checkpoint_at_any_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "ck"
    good = tiny(0)
    save_checkpoint(good, target, max_shard_bytes=60_000)
    real_save_file = ckpt.save_file
    calls: list[str] = []

    def checked_then_failing(tensors: dict[str, torch.Tensor], file: str, **kw: object) -> None:
        # Mid-save: the target still holds the previous checkpoint, and the partial folder
        # being written does not load.
        assert_same_state(load_state_dict(target), good.state_dict())
        with pytest.raises(CheckpointError):
            load_state_dict(Path(file).parent)
        calls.append(Path(file).name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real_save_file(tensors, file, **kw)

    monkeypatch.setattr(ckpt, "save_file", checked_then_failing)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(tiny(1), target, max_shard_bytes=60_000)
    assert len(calls) == 3
    assert_same_state(load_state_dict(target), good.state_dict())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


def test_unserialisable_tensor_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    bad = tiny(0)
    bad.lm_head.register_buffer("zz_sparse", torch.eye(4).to_sparse())  # last in state_dict
    with pytest.raises(CheckpointError, match=r"dense tensors only.*lm_head\.zz_sparse"):
        save_checkpoint(bad, tmp_path / "ck", max_shard_bytes=60_000)
    assert list(tmp_path.iterdir()) == []


# ---- errors -------------------------------------------------------------------------------
def test_missing_shard_names_folder_and_file(tmp_path: Path) -> None:
    out = save_checkpoint(tiny(0), tmp_path / "ck", max_shard_bytes=60_000)
    gone = shard_files(out)[1]
    (out / gone).unlink()
    with pytest.raises(CheckpointError, match=re.escape(gone)) as err:
        load_state_dict(out)
    assert str(out) in str(err.value)


@pytest.mark.parametrize(
    ("index", "needle"),
    [
        ("{not json", "not readable JSON"),
        ('{"metadata": {}}', '"weight_map"'),
        ('{"weight_map": {"a.weight": "../elsewhere.safetensors"}}', "elsewhere"),
    ],
)
def test_malformed_index(tmp_path: Path, index: str, needle: str) -> None:
    out = save_checkpoint(tiny(0), tmp_path / "ck", max_shard_bytes=60_000)
    (out / "model.safetensors.index.json").write_text(index)
    with pytest.raises(CheckpointError, match="malformed index") as err:
        load_state_dict(out)
    assert needle in str(err.value) and "model.safetensors.index.json" in str(err.value)


def test_index_naming_a_tensor_its_shard_lacks(tmp_path: Path) -> None:
    out = save_checkpoint(tiny(0), tmp_path / "ck", max_shard_bytes=60_000)
    file = out / "model.safetensors.index.json"
    index = json.loads(file.read_text())
    index["weight_map"]["model.ghost.weight"] = shard_files(out)[0]
    file.write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"model\.ghost\.weight"):
        load_state_dict(out)


def test_no_weights_or_unreadable_weights(tmp_path: Path) -> None:
    tiny(0).config.save_pretrained(tmp_path)
    with pytest.raises(CheckpointError, match="holds no weights") as err:
        load_state_dict(tmp_path)
    assert str(tmp_path) in str(err.value) and "model.safetensors" in str(err.value)
    (tmp_path / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{trunc")
    with pytest.raises(CheckpointError, match=r"model\.safetensors: not a readable"):
        load_state_dict(tmp_path)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_state_dict(tmp_path / "nope")


def test_load_into_lists_missing_unexpected_and_shapes(tmp_path: Path) -> None:
    state = dict(tiny(0, vocab_size=600).state_dict())
    del state["model.layers.1.mlp.up_proj.weight"]
    state["model.layers.9.extra.weight"] = torch.zeros(3)
    with pytest.raises(CheckpointError) as err:
        load_into(tiny(1), state)
    msg = str(err.value)
    assert "1 missing key(s): model.layers.1.mlp.up_proj.weight" in msg
    assert "1 unexpected key(s): model.layers.9.extra.weight" in msg
    assert "2 shape mismatch(es)" in msg
    assert "model.embed_tokens.weight: model (512, 64) vs checkpoint (600, 64)" in msg


def test_load_into_counts_past_ten_and_non_strict(tmp_path: Path) -> None:
    src = tiny(0)
    dst = TinyLM(src.config, layers=8)  # 6 layers × 4 weights missing from the state
    with pytest.raises(CheckpointError, match=r"24 missing key\(s\): .* … and 14 more"):
        load_into(dst, src.state_dict())
    result = load_into(dst, src.state_dict(), strict=False)
    assert len(result.missing) == 24 and result.unexpected == ()
    up = "model.layers.1.mlp.up_proj.weight"
    assert torch.equal(dst.state_dict()[up], src.state_dict()[up])
    wrong = dict(src.state_dict(), **{"lm_head.weight": torch.zeros(3, 3)})
    shapes = r"lm_head\.weight: model \(512, 64\) vs checkpoint \(3, 3\)"
    with pytest.raises(CheckpointError, match=shapes):
        load_into(dst, wrong, strict=False)  # a shape mismatch raises even when not strict


def test_save_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="max_shard_bytes"):
        save_checkpoint(tiny(0), tmp_path / "a", max_shard_bytes=0)
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointError, match="not a folder"):
        save_checkpoint(tiny(0), tmp_path / "file")
    with pytest.raises(CheckpointError, match="KimiLinearConfig"):
        save_checkpoint(nn.Linear(2, 2), tmp_path / "b")
