import pytest
import torch

from helpers.decoding.ar import generate
from helpers.decoding.model import KVCache, ModelConfig, Transformer, count_passes, gpt2_small_config


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
        (lambda m: ModelConfig(n_layer=0), r"ModelConfig\.n_layer must be an int >= 1, got 0"),
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


# ---------------------------------------------------------------- the rules, pinned exactly


@pytest.mark.parametrize("T", [2, 3, 9])
def test_each_position_sees_itself_and_the_past_but_never_the_future(T):
    """Changing token k changes the logits at k and after, and never before: the mask's diagonal."""
    model = tiny()
    idx = torch.randint(0, 50, (1, T), generator=torch.Generator().manual_seed(T))
    with torch.no_grad():
        base = model(idx)
        for k in range(T):
            changed = idx.clone()
            changed[0, k] = (idx[0, k] + 1) % 50
            out = model(changed)
            assert torch.equal(out[:, :k], base[:, :k]), f"position < {k} saw token {k}"
            assert not torch.allclose(out[:, k], base[:, k]), f"position {k} did not see itself"


def test_a_bidirectional_model_sees_the_future_even_for_two_tokens():
    model = tiny(causal=False)
    idx = torch.tensor([[3, 4]])
    with torch.no_grad():
        assert not torch.allclose(model(idx)[:, 0], model(torch.tensor([[3, 5]]))[:, 0])


def test_cached_decoding_equals_the_full_pass_at_every_step_with_chunks():
    """A prompt, then a chunk of several tokens, then one token at a time: the cached logits
    equal the full pass at every position, and the cache length advances by each chunk."""
    model = tiny(max_len=32)
    seq = torch.randint(0, 50, (2, 20), generator=torch.Generator().manual_seed(8))
    cache = model.new_cache(2)
    pieces, lengths = [], []
    with torch.no_grad():
        for a, b in [(0, 5), (5, 9), (9, 10), (10, 11), (11, 16), (16, 17), (17, 20)]:
            pieces.append(model(seq[:, a:b], cache=cache))
            lengths.append(cache.length)
        full = model(seq)
    assert lengths == [5, 9, 10, 11, 16, 17, 20]
    assert torch.allclose(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-4)


def test_the_cache_stores_each_step_at_its_own_position():
    model = tiny(max_len=16)
    cache = model.new_cache(1)
    with torch.no_grad():
        model(torch.tensor([[1, 2, 3]]), cache=cache)
        filled = cache.data[..., :3, :].clone()
        assert filled.abs().sum(dim=-1).gt(0).all()  # every layer, key and value, position 0..2
        assert cache.data[..., 3:, :].eq(0).all()
        model(torch.tensor([[4]]), cache=cache)
        assert torch.equal(cache.data[..., :3, :], filled)  # earlier positions are not rewritten
        assert cache.data[..., 3, :].abs().sum(dim=-1).gt(0).all() and cache.data[..., 4:, :].eq(0).all()
    assert cache.nbytes() == cache.data[..., :4, :].numel() * 4


def test_last_only_is_the_last_position_of_the_full_output():
    model = tiny()
    idx = torch.randint(0, 50, (2, 6), generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        assert torch.allclose(model(idx, last_only=True), model(idx)[:, -1:], atol=1e-6)


@pytest.mark.parametrize("use_cache", [True, False])
def test_passes_and_positions_for_a_batch(use_cache):
    model = tiny()
    B, T0, n = 3, 4, 6
    with count_passes(model) as passes:
        generate(model, torch.zeros(B, T0, dtype=torch.long), n, temperature=0, use_cache=use_cache)
    assert passes.n == n
    assert passes.positions == (B * (T0 + n - 1) if use_cache else B * sum(range(T0, T0 + n)))


def test_count_passes_counts_every_call_once():
    model = tiny()
    with torch.no_grad(), count_passes(model) as passes:
        for T in (1, 2, 5):
            model(torch.zeros(2, T, dtype=torch.long))
    assert (passes.n, passes.positions) == (3, 2 * (1 + 2 + 5))


# ---------------------------------------------------------------- bad input: a clear error naming what is allowed


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda m: m(torch.tensor([[0, 50]])),
            r"token id 50 out of range; ids must be in \[0, vocab_size\) = \[0, 50\)",
        ),
        (lambda m: m(torch.tensor([[-1, 3]])), r"token id -1 out of range"),
        (lambda m: m(torch.tensor([[1, 99]]), cache=m.new_cache(1)), r"token id 99 out of range"),
        (lambda m: m(torch.zeros(1, 3, dtype=torch.int32)), r"int64 \(torch\.long\) tensor .* torch\.int32"),
        (lambda m: m(torch.zeros(1, 3, dtype=torch.bool)), r"int64 \(torch\.long\) tensor .* torch\.bool"),
        (lambda m: m(torch.zeros(1, 3, dtype=torch.float16)), r"int64 \(torch\.long\) tensor"),
        (lambda m: m([[1, 2]]), r"int64 \(torch\.long\) tensor of shape \(B, T\), got <class 'list'>"),
        (lambda m: m(torch.zeros(1, 2, dtype=torch.long), cache="cache"), r"cache must be None or a KVCache"),
        (lambda m: KVCache(m.config, True), r"batch_size must be an int >= 1, got True"),
        (lambda m: KVCache(m.config, 2.0), r"batch_size must be an int >= 1, got 2\.0"),
        (lambda m: KVCache(m.config, 1, dtype=torch.long), r"floating torch\.dtype"),
        (lambda m: KVCache("config", 1), r"config must be a ModelConfig"),
        (lambda m: m.new_cache(0), r"batch_size must be an int >= 1, got 0"),
        (lambda m: ModelConfig(n_layer=True), r"ModelConfig\.n_layer must be an int >= 1, got True"),
        (lambda m: ModelConfig(d_model=128.0), r"ModelConfig\.d_model must be an int >= 1, got 128\.0"),
        (lambda m: ModelConfig(causal=1), r"ModelConfig\.causal must be True or False, got 1"),
        (lambda m: Transformer(dict(vocab_size=5)), r"config must be a helpers\.decoding\.model\.ModelConfig"),
        (lambda m: count_passes(None).__enter__(), r"count_passes needs a torch\.nn\.Module"),
    ],
)
def test_bad_input_names_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call(tiny())
