"""Per-request sampling and decoding of the serving engine (model/serve/sampling.py)."""

from __future__ import annotations

import pytest
import torch

from kimmy_swarm.model.errors import GenerationError
from kimmy_swarm.model.serve.sampling import RequestSampler, sample_batch
from kimmy_swarm.model.serve.types import GenerationParams
from kimmy_swarm.model.tokenizer import HFTokenizer, train_bpe_tokenizer
from kimmy_swarm.model.train import python_docs_texts

EOS = 2


@pytest.fixture(scope="module")
def tok() -> HFTokenizer:
    lines = [ln for doc in python_docs_texts() for ln in doc.splitlines() if ln.strip()]
    return train_bpe_tokenizer(lines[:200], vocab_size=600)


def sampler(vocab: int, tokenizer: HFTokenizer | None = None, **params: object) -> RequestSampler:
    return RequestSampler(
        GenerationParams(**params),  # type: ignore[arg-type]
        tokenizer=tokenizer,
        eos_token_ids={EOS},
        vocab_size=vocab,
    )


def run(tokenizer: HFTokenizer, s: RequestSampler, pieces: list[str]) -> list[tuple[str, object]]:
    """Accept the tokens of each piece (encoded on its own); (text, finish) per token."""
    out = []
    for piece in pieces:
        for t in tokenizer.encode(piece):
            out.append(s.accept(t))
            if s.finished:
                return out
    return out


# ---- choosing tokens -------------------------------------------------------------------------
def test_greedy_rows_take_the_argmax_even_beside_sampled_rows() -> None:
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(6, 40, generator=g)  # (N, V)
    samplers = [
        sampler(40, temperature=0.0) if i % 2 == 0 else sampler(40, seed=i) for i in range(6)
    ]
    picks = sample_batch(logits, samplers)
    assert [p.token_id for p in picks[::2]] == logits[::2].argmax(-1).tolist()
    assert all(p.logprob is None and p.top == () for p in picks)


def _draws(rows: list[int], seeds: list[int | None], steps: int = 25) -> list[list[int]]:
    """Sampled ids per row; row r always sees the same logits, whatever the batch."""
    g = torch.Generator().manual_seed(5)
    table = torch.randn(steps, 4, 50, generator=g)  # (steps, rows, V)
    samplers = [
        sampler(50, seed=s, temperature=0.9) if s is not None else sampler(50, temperature=0)
        for s in seeds
    ]
    out: list[list[int]] = [[] for _ in rows]
    for step in range(steps):
        picks = sample_batch(table[step, rows], samplers)
        for k, p in enumerate(picks):
            out[k].append(p.token_id)
    return out


def test_seeded_rows_are_reproducible_and_independent_of_the_batch() -> None:
    alone = _draws([1], [7])[0]
    assert _draws([1], [7])[0] == alone
    in_batch = _draws([0, 1, 2, 3], [3, 7, None, 11])
    assert in_batch[1] == alone  # other rows (sampled or greedy) change nothing
    assert _draws([1], [8])[0] != alone  # the seed matters
    assert len(set(alone)) > 3  # really sampled, not argmax


def test_top_k_one_and_tiny_top_p_are_greedy() -> None:
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(20, 64, generator=g)  # (N, V)
    for params in ({"top_k": 1, "temperature": 0.8}, {"top_p": 1e-6, "temperature": 1.5}):
        samplers = [sampler(64, seed=i, **params) for i in range(20)]
        picks = [p.token_id for p in sample_batch(logits, samplers)]
        assert picks == logits.argmax(-1).tolist(), params


@pytest.mark.parametrize(
    "params",
    [
        {"temperature": 1e-45},  # fp32 logits / 1e-45 overflow to ±inf, then NaN
        {"temperature": 5e-324},
        {"temperature": 9e-6},
        {"top_p": 5e-324},  # rounds to 0 in fp32: even the top token was cut
        {"top_p": 1e-45, "temperature": 1e-30},
        {"top_p": 5e-324, "top_k": 3, "temperature": 2.0},
    ],
    ids=["T=1e-45", "T=5e-324", "T=9e-6", "top_p=5e-324", "both", "with-top_k"],
)
def test_extreme_temperature_and_top_p_pick_the_argmax_instead_of_failing(
    params: dict[str, float],
) -> None:
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(8, 64, generator=g) * 30  # (N, V), large logits as a real model has
    samplers = [sampler(64, seed=i, **params) for i in range(8)]
    picks = [p.token_id for p in sample_batch(logits, samplers)]
    assert picks == logits.argmax(-1).tolist()


def test_non_finite_logits_of_a_sampled_row_are_a_generation_error() -> None:
    logits = torch.zeros(2, 16)  # (N, V)
    logits[1, 3] = float("nan")  # a broken model's row
    with pytest.raises(GenerationError, match=r"row 1: .*NaN or \+inf"):
        sample_batch(logits, [sampler(16, seed=0), sampler(16, seed=1)])


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
def test_temperature_reshapes_a_known_distribution(temperature: float) -> None:
    p = torch.tensor([0.5, 0.3, 0.15, 0.05])
    logits = p.log()[None]  # (1, 4)
    s = sampler(4, seed=123, temperature=temperature)
    counts = torch.zeros(4)
    n = 2000
    for _ in range(n):
        counts[sample_batch(logits, [s])[0].token_id] += 1
    expected = p ** (1 / temperature)
    expected = expected / expected.sum() * n
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 25.0, (counts.tolist(), expected.tolist())  # df = 3: p ≈ 1.6e-5


def test_top_k_and_top_p_never_leave_the_kept_tokens() -> None:
    logits = torch.tensor([[4.0, 3.0, 2.0, 1.0, 0.0, -1.0]])  # (1, 6)
    top_k = sampler(6, seed=0, top_k=2)
    probs = logits.softmax(-1)[0]
    cut = int((probs.cumsum(0) - probs < 0.9).sum())  # smallest prefix reaching 0.9
    top_p = sampler(6, seed=0, top_p=0.9)
    seen_k = {sample_batch(logits, [top_k])[0].token_id for _ in range(300)}
    seen_p = {sample_batch(logits, [top_p])[0].token_id for _ in range(300)}
    assert seen_k == {0, 1}
    assert seen_p == set(range(cut))


def test_logprobs_are_the_raw_log_softmax(tok: HFTokenizer) -> None:
    g = torch.Generator().manual_seed(3)
    v = tok.vocab_size
    logits = torch.randn(3, v, generator=g) * 2  # (N, V)
    samplers = [
        sampler(v, tok, seed=1, temperature=0.5, top_k=3, logprobs=True, top_logprobs=5),
        sampler(v, None, temperature=0.0, logprobs=True, top_logprobs=2),
        sampler(v, tok, seed=2),  # no logprobs asked
    ]
    picks = sample_batch(logits, samplers)
    ref = logits.log_softmax(-1)  # (N, V): before temperature and top-k
    for row, (pick, s) in enumerate(zip(picks[:2], samplers[:2], strict=True)):
        assert pick.logprob == pytest.approx(float(ref[row, pick.token_id]), abs=1e-5)
        values, ids = ref[row].topk(s.params.top_logprobs)
        assert [t.token_id for t in pick.top] == ids.tolist()
        assert [t.logprob for t in pick.top] == pytest.approx(values.tolist(), abs=1e-5)
        assert [t.logprob for t in pick.top] == sorted((t.logprob for t in pick.top), reverse=True)
    assert [t.token for t in picks[0].top] == [tok.decode([t.token_id]) for t in picks[0].top]
    assert [t.token for t in picks[1].top] == [f"<{t.token_id}>" for t in picks[1].top]
    assert picks[2].logprob is None and picks[2].top == ()


def test_vocabulary_padding_is_never_sampled() -> None:
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(2, 64, generator=g)  # (N, W): the model pads 50 real ids to 64
    logits[:, 50:] = 50.0  # padding would win every time if it were not masked
    greedy = sampler(50, temperature=0.0, logprobs=True, top_logprobs=3)
    drawn = sampler(50, seed=9, temperature=2.0)
    for _ in range(200):
        a, b = sample_batch(logits, [greedy, drawn])
        assert a.token_id < 50 and b.token_id < 50
    assert a.token_id == int(logits[0, :50].argmax())
    assert a.logprob == pytest.approx(float(logits[0, :50].log_softmax(-1).max()), abs=1e-5)
    assert all(t.token_id < 50 for t in a.top)


def test_sample_batch_rejects_mismatches() -> None:
    logits = torch.zeros(2, 10)  # (N, W)
    with pytest.raises(GenerationError, match="one sampler per row"):
        sample_batch(logits, [sampler(10)])
    with pytest.raises(GenerationError, match="width"):
        sample_batch(logits, [sampler(10), sampler(12)])
    done = sampler(10, max_tokens=1)
    done.accept(3)
    with pytest.raises(GenerationError, match="finished"):
        sample_batch(logits, [done, sampler(10)])
    assert sample_batch(torch.zeros(0, 10), []) == []


# ---- text, stops, ends -----------------------------------------------------------------------
def test_stop_string_split_over_tokens_is_cut(tok: HFTokenizer) -> None:
    s = sampler(tok.vocab_size, tok, stop=("STOP",))
    steps = run(tok, s, ["Hello world ", "S", "T", "OP", " after"])
    assert [t for t, _ in steps[-3:]] == ["", "", ""]  # "S", "T" held back; "OP" cuts
    assert "".join(t for t, _ in steps) == "Hello world "
    assert steps[-1][1] == "stop" and s.finish_reason == "stop"
    pieces = ["Hello world ", "S", "T", "OP"]
    assert s.num_generated == sum(len(tok.encode(x)) for x in pieces)
    with pytest.raises(GenerationError, match="already finished"):
        s.accept(tok.encode(" after")[0])
    assert s.flush() == ""


def test_false_start_of_a_stop_string_is_released(tok: HFTokenizer) -> None:
    s = sampler(tok.vocab_size, tok, stop=("STOP", "ZZ"))
    steps = run(tok, s, ["ST", "O", "X and ", "Z"])
    assert "".join(t for t, _ in steps) == "STOX and "  # the "Z" is still held back
    assert steps[-1][1] is None
    steps = run(tok, s, ["Z tail"])
    assert steps[0] == ("", "stop")


def test_the_earliest_stop_string_wins(tok: HFTokenizer) -> None:
    s = sampler(tok.vocab_size, tok, stop=("world", "lo w"))
    assert "".join(t for t, _ in run(tok, s, ["Hello world"])) == "Hel"


def test_eos_and_stop_token_ids(tok: HFTokenizer) -> None:
    body = tok.encode("some text")
    s = sampler(tok.vocab_size, tok, stop=("text!",))
    texts = [s.accept(t) for t in body]
    assert "".join(t for t, _ in texts) == "some "  # "text" may still start "text!"
    assert s.accept(EOS) == ("text", "stop")  # released; the EOS adds no text

    s = sampler(tok.vocab_size, tok, ignore_eos=True, max_tokens=3)
    assert s.accept(EOS)[1] is None and s.accept(body[0])[1] is None
    assert s.accept(body[1])[1] == "length"

    stopper = tok.encode("!")[0]
    s = sampler(tok.vocab_size, tok, stop_token_ids=(stopper,))
    texts = [s.accept(t) for t in body] + [s.accept(stopper)]
    assert texts[-1] == ("", "stop")  # the stop token's own text is not added
    assert "".join(t for t, _ in texts) == "some text"


def test_max_tokens_ends_with_length_and_releases_held_text(tok: HFTokenizer) -> None:
    ids = tok.encode("ab S") + tok.encode("T")
    s = sampler(tok.vocab_size, tok, stop=("STOP",), max_tokens=len(ids))
    steps = [s.accept(t) for t in ids]
    assert [r for _, r in steps] == [None] * (len(ids) - 1) + ["length"]
    assert "".join(t for t, _ in steps) == "ab ST"
    assert s.flush() == ""


def test_multibyte_characters_come_out_whole(tok: HFTokenizer) -> None:
    text = "é 你 😀 café 你好😀!"
    ids = tok.encode(text)
    assert any("\ufffd" in tok.decode([i]) for i in ids)  # characters are split over ids
    s = sampler(tok.vocab_size, tok)
    pieces = [s.accept(i)[0] for i in ids]
    assert not any("\ufffd" in p for p in pieces)
    assert "".join(pieces) == text
    assert pieces.count("") >= 3  # held back while a character was incomplete


def test_an_incomplete_character_at_the_end_is_flushed(tok: HFTokenizer) -> None:
    first = next(i for i in tok.encode("😀") if "\ufffd" in tok.decode([i]))
    s = sampler(tok.vocab_size, tok, max_tokens=2)
    assert s.accept(tok.encode("a")[0]) == ("a", None)
    assert s.accept(first) == ("\ufffd", "length")


def test_sampler_option_errors(tok: HFTokenizer) -> None:
    with pytest.raises(GenerationError, match="need a tokenizer"):
        sampler(10, None, stop=("x",))
    with pytest.raises(GenerationError, match="non-empty"):
        sampler(10, tok, stop=("",))
    with pytest.raises(GenerationError, match="vocab_size"):
        sampler(0)
    unseeded = [sampler(10).seed for _ in range(3)]
    assert len(set(unseeded)) == 3  # no seed: a fresh one per request
