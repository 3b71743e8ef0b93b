"""`trl.GRPOTrainer` trains on spawn tasks with `rewards.trl.parl_reward`, on the CPU.

The policy is a tiny random Llama with a byte-level BPE tokenizer trained here on the
prompts (nothing is downloaded). A random model never writes a tool call, so sampling is
steered with `sequence_bias` (a generation option) toward `split_documents` calls with 1,
2, 4 or 8 extractors: the group's completions then differ in r_PARL, and GRPO gets a
learning signal from the swarm's scores.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="GRPOTrainer needs torch")
pytest.importorskip("transformers", reason="the tiny policy is a transformers Llama")
pytest.importorskip("trl", reason="the trainer under test is trl.GRPOTrainer")
pytest.importorskip("datasets", reason="GRPOTrainer takes a datasets.Dataset")

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

from kimmy_swarm.agents.parl import SPAWN_COMPLETION_ENV, SpawnTask, make_spawn_tasks, prompt_pairs
from kimmy_swarm.agents.tools.corpus import load_corpus
from kimmy_swarm.rewards.trl import make_parl_reward, trl_prompt_dataset
from tests.agents.parl.conftest import write_notes

# TRL 1.16 itself calls transformers' gradient_checkpointing names that 5.24 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:.*gradient_checkpointing.*:FutureWarning")

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CALLS = [
    json.dumps({"name": "split_documents", "arguments": {"extractors": k}}) for k in (1, 2, 4, 8)
]


def tiny_tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    """A 512-token byte-level BPE trained on `texts`, with a ChatML-like template."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=512, special_tokens=["<pad>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    ))  # fmt: skip
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                  pad_token="<pad>", padding_side="left")  # fmt: skip
    tok.chat_template = TEMPLATE
    return tok


def steer_to_calls(tok: PreTrainedTokenizerFast) -> list[list[Any]]:
    """`sequence_bias` entries that make each prefix of a call (then the end of turn) far
    likelier than the random logits; longer prefixes weigh more, so a call runs to its end,
    and the four calls share their prefix up to the number of extractors."""
    bias: dict[tuple[int, ...], float] = {}
    for call in CALLS:
        ids = tok(call, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        for i in range(len(ids)):
            bias[tuple(ids[: i + 1])] = 10.0 * (i + 1)
    return [[list(k), v] for k, v in bias.items()]


@pytest.fixture
def tasks(tmp_path: Path) -> Iterator[list[SpawnTask]]:
    folder = write_notes(tmp_path / "notes")
    yield make_spawn_tasks(load_corpus(folder), count=2, width=4, seed=3, source=folder)
    SPAWN_COMPLETION_ENV.close()


def test_grpo_trainer_runs_two_steps_on_parl_rewards(
    tasks: list[SpawnTask], tmp_path: Path
) -> None:
    pairs = prompt_pairs(tasks)
    dataset = trl_prompt_dataset(pairs)
    tok = tiny_tokenizer([m["content"] for _, messages in pairs for m in messages] + CALLS)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None,
    ))  # fmt: skip

    reward = make_parl_reward()
    seen: list[dict[str, Any]] = []

    def parl_reward(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[Any]:
        out = reward(prompts, completions, **kwargs)
        seen.append({"step": kwargs["trainer_state"].global_step, "task": kwargs["task"],
                     "completions": completions, "rewards": out})  # fmt: skip
        return out

    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4,
        num_generations=4, max_completion_length=24, learning_rate=1e-3, use_cpu=True,
        bf16=False, report_to="none", logging_steps=1, save_strategy="no", disable_tqdm=True,
        generation_kwargs={"sequence_bias": steer_to_calls(tok)},
    )  # fmt: skip
    trainer = GRPOTrainer(model=model, reward_funcs=parl_reward, args=args,
                          train_dataset=dataset, processing_class=tok)  # fmt: skip
    trainer.train()

    assert trainer.state.global_step == 2 and [s["step"] for s in seen] == [0, 1]
    task_ids = {t.id for t in tasks}
    for call in seen:
        assert len(call["task"]) == len(call["completions"]) == len(call["rewards"]) == 4
        assert {SpawnTask.model_validate_json(t).id for t in call["task"]} <= task_ids
        assert all(isinstance(r, float) for r in call["rewards"])
        texts = [c[-1]["content"] for c in call["completions"]]  # conversational completions
        assert set(texts) <= set(CALLS)
    rewards = [r for call in seen for r in call["rewards"]]
    assert min(rewards) > 0 and len(set(rewards)) > 1  # the swarm scored the calls apart
    logs = [h for h in trainer.state.log_history if "rewards/parl_reward/mean" in h]
    assert [h["step"] for h in logs] == [1, 2]
    for h, call in zip(logs, seen, strict=True):
        assert h["rewards/parl_reward/mean"] == pytest.approx(sum(call["rewards"]) / 4)
    assert logs[1]["parl/lambda1"] == pytest.approx(0.999)  # λ read at global_step 1
    assert any(h["grad_norm"] > 0 for h in logs)  # GRPO had a signal to learn from
