"""The server serves what `model/` saves: a `kimmy train lm` checkpoint of an Attention
Residuals model (a base LM, so `/v1/completions`) answers exactly as the loaded model does
without any cache, through `LocalModel` (the engine and server `kimmy serve` runs)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import torch

from kimmy_swarm.cli.app import main
from kimmy_swarm.model.modeling import KimiLinearForCausalLM
from kimmy_swarm.model.python_docs import python_docs_texts
from kimmy_swarm.model.tokenizer import load_tokenizer
from kimmy_swarm.swarm.llm import LocalModel

TRAIN = ["--steps", "2", "--seq-len", "64", "--batch-size", "2", "--vocab-size", "400"]
TRAIN += ["--eval-every", "2", "--checkpoint-every", "2", "--residual", "block_attnres"]


async def test_a_trained_attnres_checkpoint_serves_its_own_greedy_completion(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("\n\n".join(python_docs_texts()[:8]), encoding="utf-8")
    out = tmp_path / "run"
    assert main(["train", "lm", str(corpus), "--out", str(out), *TRAIN]) == 0
    ckpt = out / "checkpoint-000002"
    config = json.loads((ckpt / "config.json").read_text())
    assert config["architectures"] == ["KimmyAttnResForCausalLM"]  # what vLLM's plugin serves

    lm = KimiLinearForCausalLM.from_pretrained(ckpt)
    tokenizer = load_tokenizer(ckpt)
    prompt = "Functions are defined with"
    ids = tokenizer.encode(prompt)
    ref = lm.generate(torch.tensor([ids]), max_new_tokens=8, eos_token_id=[], use_cache=False)
    expected = tokenizer.decode(ref[0, len(ids) :].tolist(), skip_special_tokens=True)

    body = {"prompt": prompt, "max_tokens": 8, "temperature": 0, "ignore_eos": True}
    async with (
        LocalModel.from_pretrained(ckpt, max_model_len=256) as model,
        httpx.AsyncClient(timeout=60) as http,
    ):
        r = await http.post(f"{model.base_url}/completions", json={"model": model.name, **body})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["model"] == "checkpoint-000002"
    assert answer["choices"][0]["text"] == expected
    assert answer["usage"]["completion_tokens"] == 8
