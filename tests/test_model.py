import pytest
import torch

from helpers.ar import generate
from helpers.model import KVCache, ModelConfig, Transformer, count_passes, gpt2_small_config


def tiny(causal=True, max_len=256, **kw):
    torch.manual_seed(0)
    return Transformer(
        ModelConfig(vocab_size=50, max_len=max_len, d_model=32, n_layer=2, n_head=4, causal=causal, **kw)
    )


def test_shapes_and_parameter_count():
    model = tiny()
    idx = torch.randint(0, 50, (3, 7))
    assert model(idx).shape == (3, 7, 50)
    assert model(idx, last_only=True).shape == (3, 1, 50)
    # tied head: counted once. GPT-2 small has 124M parameters with this count.
    assert model.head.weight is model.tok_emb.weight
    small = gpt2_small_config()
    per_block = 12 * small.d_model**2 + 13 * small.d_model
    expected = small.vocab_size * small.d_model + small.max_len * small.d_model + 12 * per_block + 2 * small.d_model
    assert round(expected / 1e6) == 124


def test_causal_model_ignores_the_future_and_bidirectional_does_not():
    idx = torch.randint(0, 50, (1, 10))
    changed = idx.clone()
    changed[0, -1] = (idx[0, -1] + 1) % 50
    causal, bidir = tiny(causal=True), tiny(causal=False)
    with torch.no_grad():
        assert torch.equal(causal(idx)[:, :-1], causal(changed)[:, :-1])
        assert not torch.allclose(bidir(idx)[:, :-1], bidir(changed)[:, :-1])


def test_kv_cache_matches_full_forward_over_200_steps():
    model = tiny()
    prompt = torch.randint(0, 50, (2, 5))
    out = generate(model, prompt, 220, temperature=0)
    cache = model.new_cache(2)
    with torch.no_grad():
        step_logits = [model(prompt, cache=cache)]
        for t in range(5, out.size(1)):
            step_logits.append(model(out[:, t : t + 1], cache=cache))
        full = model(out)
    cached = torch.cat(step_logits, dim=1)
    assert torch.allclose(cached, full, atol=1e-5, rtol=1e-4)
    assert cache.length == out.size(1)


def test_cached_and_naive_greedy_decoding_are_identical():
    model = tiny()
    prompt = torch.randint(0, 50, (3, 4))
    fast = generate(model, prompt, 210, temperature=0, use_cache=True)
    slow = generate(model, prompt, 210, temperature=0, use_cache=False)
    assert torch.equal(fast, slow)


@pytest.mark.parametrize("use_cache", [True, False])
def test_passes_equal_tokens_generated(use_cache):
    model = tiny()
    with count_passes(model) as passes:
        out = generate(model, torch.zeros(1, 3, dtype=torch.long), 40, temperature=0, use_cache=use_cache)
    assert passes.n == 40 == out.size(1) - 3
    expected_positions = 3 + 39 if use_cache else sum(range(3, 43))
    assert passes.positions == expected_positions


def test_count_passes_stops_counting_after_the_block():
    model = tiny()
    with count_passes(model) as passes:
        model(torch.zeros(1, 2, dtype=torch.long))
    model(torch.zeros(1, 2, dtype=torch.long))
    assert passes.n == 1


def test_cache_nbytes_counts_the_filled_part():
    model = tiny()
    cache = model.new_cache(1)
    model(torch.zeros(1, 6, dtype=torch.long), cache=cache)
    cfg = model.config
    assert cache.nbytes() == 2 * cfg.n_layer * cfg.d_model * 6 * 4


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: m(torch.zeros(2, 3)), "int64"),
        (lambda m: m(torch.zeros(3, dtype=torch.long)), r"shape \(B, T\)"),
        (lambda m: m(torch.zeros(1, 0, dtype=torch.long)), "at least one position"),
        (lambda m: m(torch.zeros(1, 257, dtype=torch.long)), "longer than max_len = 256"),
        (lambda m: m(torch.zeros(2, 1, dtype=torch.long), cache=m.new_cache(3)), "batch size 3"),
        (lambda m: m(torch.zeros(1, 1, dtype=torch.long), cache=tiny(max_len=64).new_cache(1)), "another config"),
        (lambda m: tiny(causal=False).new_cache(1), "causal"),
        (lambda m: tiny(causal=False)(torch.zeros(1, 1, dtype=torch.long), cache=m.new_cache(1)), "causal"),
        (lambda m: KVCache(m.config, 0), "batch_size"),
        (lambda m: ModelConfig(d_model=10, n_head=4), "divisible"),
        (lambda m: ModelConfig(n_layer=0), "positive int"),
    ],
)
def test_bad_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call(tiny())


def test_cache_overflow_is_refused():
    model = tiny(max_len=8)
    cache = model.new_cache(1)
    model(torch.zeros(1, 8, dtype=torch.long), cache=cache)
    with pytest.raises(ValueError, match="8 cached"):
        model(torch.zeros(1, 1, dtype=torch.long), cache=cache)


def test_count_passes_counts_a_call_by_keyword_too():
    model = Transformer(ModelConfig(vocab_size=10, max_len=8, d_model=16, n_layer=1, n_head=2)).eval()
    with torch.no_grad(), count_passes(model) as counter:
        model(torch.zeros(2, 3, dtype=torch.long))
        model(idx=torch.zeros(2, 5, dtype=torch.long))
    assert (counter.n, counter.positions) == (2, 16)
