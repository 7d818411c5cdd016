import math

import pytest
import torch

from helpers.decoding.ar import check_sampling_args, filter_logits, generate, next_token, sampled_log2prob
from helpers.decoding.model import ModelConfig, Transformer


def tiny():
    torch.manual_seed(0)
    return Transformer(ModelConfig(vocab_size=20, max_len=64, d_model=32, n_layer=2, n_head=4))


def logits_of(*probs):
    return torch.tensor([probs]).log()


def test_top_k_keeps_the_k_largest():
    logits = logits_of(0.1, 0.4, 0.2, 0.3)
    kept = torch.isfinite(filter_logits(logits, top_k=2))[0].tolist()
    assert kept == [False, True, False, True]
    assert torch.isfinite(filter_logits(logits, top_k=10)).all()  # k larger than V keeps all


@pytest.mark.parametrize(
    "top_p, expected",
    [
        (0.5, [True, False, False, False]),  # the top token alone has 0.5
        (0.8, [True, True, False, False]),  # 0.5 + 0.3 reaches 0.8 exactly
        (0.81, [True, True, True, False]),
        (1.0, [True, True, True, True]),
        (0.01, [True, False, False, False]),  # the most likely token is always kept
    ],
)
def test_top_p_keeps_the_smallest_nucleus(top_p, expected):
    logits = logits_of(0.5, 0.3, 0.15, 0.05)
    assert torch.isfinite(filter_logits(logits, top_p=top_p))[0].tolist() == expected


def test_top_p_works_on_unsorted_rows_in_a_batch():
    logits = torch.cat([logits_of(0.05, 0.15, 0.3, 0.5), logits_of(0.3, 0.5, 0.05, 0.15)])
    kept = torch.isfinite(filter_logits(logits, top_p=0.8)).tolist()
    assert kept == [[False, False, True, True], [True, True, False, False]]


def test_greedy_is_argmax_and_sampling_follows_the_tempered_softmax():
    logits = logits_of(0.6, 0.3, 0.1)
    assert next_token(logits, temperature=0).item() == 0
    g = torch.Generator().manual_seed(0)
    draws = next_token(logits.expand(20000, 3), temperature=2.0, generator=g)
    tempered = torch.tensor([0.6, 0.3, 0.1]) ** 0.5
    tempered /= tempered.sum()
    freq = torch.bincount(draws, minlength=3) / 20000
    assert torch.allclose(freq, tempered.float(), atol=0.015)
    top1 = next_token(logits.expand(100, 3), temperature=1.0, top_k=1, generator=g)
    assert (top1 == 0).all()


def test_batch_rows_are_independent_under_greedy():
    model = tiny()
    prompts = torch.randint(0, 20, (3, 4))
    together = generate(model, prompts, 30, temperature=0)
    for row in range(3):
        alone = generate(model, prompts[row : row + 1], 30, temperature=0)
        assert torch.equal(together[row], alone[0])


def test_seeded_sampling_is_reproducible():
    model = tiny()
    prompt = torch.zeros(4, 1, dtype=torch.long)
    a = generate(model, prompt, 20, generator=torch.Generator().manual_seed(3))
    b = generate(model, prompt, 20, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


class Scripted(Transformer):
    """A causal 'model' that emits a fixed token sequence per row, to test the loop itself."""

    def __init__(self, script):
        super().__init__(ModelConfig(vocab_size=20, max_len=64, d_model=8, n_layer=1, n_head=1))
        self.script = torch.tensor(script)  # (B, steps)

    def forward(self, idx, cache=None, last_only=False, check_ids=True):
        start = 0 if cache is None else cache.length
        step = start + idx.size(1) - self.prompt_len
        if cache is not None:
            cache.length += idx.size(1)
        return torch.nn.functional.one_hot(self.script[:, step], 20).float()[:, None] * 10


@pytest.mark.parametrize("use_cache", [True, False])
def test_eos_stops_only_when_every_row_has_finished(use_cache):
    eos = 1
    model = Scripted([[5, 5, 5, eos, 5, 5, 5, 5, 5, 5], [6, 6, 6, 6, 6, 6, eos, 6, 6, 6]])
    model.prompt_len = 2
    out = generate(model, torch.zeros(2, 2, dtype=torch.long), 10, temperature=0, eos_id=eos, use_cache=use_cache)
    assert out.shape == (2, 2 + 7)  # row 1 finishes at step 6
    assert out[0, 2:].tolist() == [5, 5, 5, eos, eos, eos, eos]  # a finished row keeps emitting eos
    assert out[1, 2:].tolist() == [6, 6, 6, 6, 6, 6, eos]
    never = generate(model, torch.zeros(2, 2, dtype=torch.long), 10, temperature=0, eos_id=7, use_cache=use_cache)
    assert never.shape == (2, 12)  # no row produces eos: no early stop


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(max_new_tokens=-1), "max_new_tokens"),
        (dict(max_new_tokens=64), "exceeds the model's max_len"),
        (dict(temperature=-0.5), "temperature"),
        (dict(top_k=0), "top_k"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=1.5), "top_p"),
        (dict(prompt=torch.zeros(1, 3)), "int64"),
        (dict(prompt=torch.zeros(3, dtype=torch.long)), r"shape \(B, T0\)"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    args = dict(prompt=torch.zeros(1, 1, dtype=torch.long), max_new_tokens=5) | kwargs
    with pytest.raises(ValueError, match=message):
        generate(tiny(), **args)


def test_generate_refuses_a_bidirectional_model():
    model = Transformer(ModelConfig(vocab_size=20, max_len=16, d_model=16, n_layer=1, n_head=2, causal=False))
    with pytest.raises(ValueError, match="causal"):
        generate(model, torch.zeros(1, 1, dtype=torch.long), 3)


def test_top_p_keeps_tied_tokens_together_whatever_the_sort_order():
    logits = torch.tensor([[0.4, 0.3, 0.3], [0.3, 0.3, 0.4]]).log()  # a tie at the boundary of p = 0.5
    assert torch.isfinite(filter_logits(logits, top_p=0.5)).all()


def test_top_p_of_one_keeps_even_a_vanishing_token():
    logits = torch.tensor([[0.0, -40.0, -80.0]])  # the last token has probability about 2e-35
    assert torch.isfinite(filter_logits(logits, top_p=1.0)).all()


# ---------------------------------------------------------------- the rules, pinned exactly


class MultinomialSpy:
    """Records the probabilities every torch.multinomial call receives, then samples as usual."""

    def __init__(self, monkeypatch):
        self.probs = []
        real = torch.multinomial

        def spy(probs, *args, **kwargs):
            self.probs.append(probs.clone())
            return real(probs, *args, **kwargs)

        monkeypatch.setattr(torch, "multinomial", spy)


@pytest.mark.parametrize("temperature", [0.25, 0.7, 1.0, 3.0])
def test_sampling_probabilities_are_exactly_the_softmax_of_logits_over_temperature(monkeypatch, temperature):
    spy = MultinomialSpy(monkeypatch)
    logits = torch.randn(3, 11, generator=torch.Generator().manual_seed(1))
    next_token(logits, temperature=temperature, generator=torch.Generator().manual_seed(0))
    (probs,) = spy.probs
    assert probs.dtype == torch.float64
    assert torch.equal(probs, torch.softmax(logits.double() / temperature, dim=-1))


def test_generate_samples_from_the_last_position_at_the_given_temperature(monkeypatch):
    model = tiny()
    prompt = torch.randint(0, 20, (2, 5), generator=torch.Generator().manual_seed(2))
    spy = MultinomialSpy(monkeypatch)
    generate(model, prompt, 1, temperature=0.6, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = torch.softmax(model(prompt)[:, -1].double() / 0.6, dim=-1)
    (probs,) = spy.probs
    assert torch.allclose(probs, expected, rtol=1e-5, atol=1e-7)


def test_greedy_is_the_argmax_of_every_row_and_never_samples(monkeypatch):
    spy = MultinomialSpy(monkeypatch)
    logits = torch.randn(64, 30, generator=torch.Generator().manual_seed(3))
    assert torch.equal(next_token(logits, temperature=0), logits.argmax(dim=-1))
    assert spy.probs == []


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_generate_is_the_argmax_of_a_full_pass_at_every_step(use_cache):
    model = tiny()
    prompt = torch.randint(0, 20, (2, 3), generator=torch.Generator().manual_seed(4))
    out = generate(model, prompt, 12, temperature=0, use_cache=use_cache)
    with torch.no_grad():
        for end in range(3, 15):
            assert torch.equal(out[:, end], model(out[:, :end])[:, -1].argmax(dim=-1))


def test_cached_and_naive_sampling_draw_the_same_tokens():
    model = tiny()
    prompt = torch.randint(0, 20, (3, 4), generator=torch.Generator().manual_seed(5))
    runs = [
        generate(model, prompt, 25, temperature=0.9, top_p=0.9, use_cache=c, generator=torch.Generator().manual_seed(7))
        for c in (True, False)
    ]
    assert torch.equal(*runs)


def test_the_top_p_boundary_is_inclusive():
    """A token is dropped as soon as the tokens strictly more likely than it hold >= p."""
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0]])
    probs = torch.softmax(logits.double(), dim=-1)[0]
    mass_before_third = (probs.cumsum(-1) - probs)[2].item()  # computed exactly as the filter does
    kept = torch.isfinite(filter_logits(logits, top_p=mass_before_third))[0].tolist()
    assert kept == [True, True, False, False]  # mass before = p exactly: dropped
    above = torch.nextafter(
        torch.tensor(mass_before_third, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)
    )
    kept = torch.isfinite(filter_logits(logits, top_p=above.item()))[0].tolist()
    assert kept == [True, True, True, False]  # a hair more: kept


def test_top_k_keeps_every_token_tied_with_the_kth():
    logits = torch.tensor([[1.0, 3.0, 3.0, 2.0, 2.0, 0.0]])
    assert torch.isfinite(filter_logits(logits, top_k=1))[0].tolist() == [False, True, True, False, False, False]
    assert torch.isfinite(filter_logits(logits, top_k=2))[0].tolist() == [False, True, True, False, False, False]
    assert torch.isfinite(filter_logits(logits, top_k=3))[0].tolist() == [False, True, True, True, True, False]
    assert torch.isfinite(filter_logits(logits, top_k=6)).all()


def test_top_k_is_applied_before_top_p_and_kept_logits_are_unchanged():
    logits = logits_of(0.4, 0.3, 0.2, 0.1)
    # top-2 leaves 0.4 and 0.3, renormalised to 0.57 and 0.43: a nucleus of 0.5 holds the first only
    out = filter_logits(logits, top_k=2, top_p=0.5)
    assert torch.isfinite(out)[0].tolist() == [True, False, False, False]
    assert out[0, 0] == logits[0, 0]
    before = logits.clone()
    filter_logits(logits, top_k=1, top_p=0.3)
    assert torch.equal(logits, before)  # the input is never changed in place


def test_a_finished_row_keeps_emitting_eos_while_others_continue():
    eos = 1
    model = Scripted([[eos, 5, 5], [6, 6, 6]])
    model.prompt_len = 1
    out = generate(model, torch.zeros(2, 1, dtype=torch.long), 3, temperature=0, eos_id=eos)
    assert out[:, 1:].tolist() == [[eos, eos, eos], [6, 6, 6]]


# ---------------------------------------------------------------- bad input: a clear error naming what is allowed

LOGITS = torch.zeros(2, 5)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: filter_logits(LOGITS, top_k=0), r"top_k .* must be an int >= 1, got 0"),
        (lambda: filter_logits(LOGITS, top_k=True), r"top_k .* must be an int >= 1, got True"),
        (lambda: filter_logits(LOGITS, top_k=2.0), r"top_k .* must be an int >= 1, got 2\.0"),
        (lambda: filter_logits(LOGITS, top_p=0), r"top_p .* must be a number in \(0, 1\], got 0"),
        (lambda: filter_logits(LOGITS, top_p=1.5), r"top_p .* must be a number in \(0, 1\]"),
        (lambda: filter_logits(LOGITS, top_p=float("nan")), r"top_p .* must be a number in \(0, 1\], got nan"),
        (lambda: filter_logits(LOGITS, top_p=True), r"top_p .* must be a number in \(0, 1\], got True"),
        (lambda: filter_logits(torch.zeros(5), top_k=2), r"logits must be a floating-point tensor of shape \(B, V\)"),
        (lambda: filter_logits(torch.zeros(2, 5, dtype=torch.long)), r"floating-point tensor .* torch\.int64"),
        (lambda: filter_logits([[0.0, 1.0]]), r"floating-point tensor of shape \(B, V\), got list"),
        (lambda: filter_logits(torch.zeros(2, 0)), r"at least one token"),
        (lambda: next_token(LOGITS, temperature=-1), r"temperature .* must be a finite number >= 0, got -1"),
        (lambda: next_token(LOGITS, temperature=float("nan")), r"temperature .* finite number >= 0, got nan"),
        (lambda: next_token(LOGITS, temperature=float("inf")), r"temperature .* finite number >= 0, got inf"),
        (lambda: next_token(LOGITS, temperature=True), r"temperature .* finite number >= 0, got True"),
        (lambda: next_token(LOGITS, temperature="1"), r"temperature .* finite number >= 0"),
        (lambda: next_token(LOGITS, top_k=0), r"top_k .* must be an int >= 1"),
        (lambda: next_token(LOGITS, temperature=0, top_p=0), r"top_p .* must be a number in \(0, 1\]"),
        (lambda: next_token(LOGITS, generator=0), r"generator must be None or a torch\.Generator"),
    ],
)
def test_sampling_controls_refuse_bad_values(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(max_new_tokens=True), r"max_new_tokens must be an int >= 0, got True"),
        (dict(max_new_tokens=2.0), r"max_new_tokens must be an int >= 0, got 2\.0"),
        (dict(temperature=float("nan")), r"temperature .* finite number >= 0, got nan"),
        (dict(temperature=-1), r"temperature .* finite number >= 0, got -1"),
        (dict(top_k=True), r"top_k .* must be an int >= 1, got True"),
        (dict(top_p=float("nan")), r"top_p .* must be a number in \(0, 1\]"),
        (dict(eos_id=20), r"eos_id .* must be an int in \[0, 19\], got 20"),
        (dict(eos_id=True), r"eos_id .* must be an int in \[0, 19\], got True"),
        (dict(use_cache="no"), r"use_cache must be True or False"),
        (dict(generator=1), r"generator must be None or a torch\.Generator"),
        (
            dict(prompt=torch.full((1, 2), 20)),
            r"token id 20 out of range; ids must be in \[0, vocab_size\) = \[0, 20\)",
        ),
        (dict(prompt=torch.full((1, 2), -3)), r"token id -3 out of range"),
    ],
)
def test_generate_refuses_bad_arguments(kwargs, message):
    args = dict(prompt=torch.zeros(1, 1, dtype=torch.long), max_new_tokens=5) | kwargs
    with pytest.raises(ValueError, match=message):
        generate(tiny(), **args)


def test_check_sampling_args_names_what_is_allowed():
    check_sampling_args(0, None, None)
    check_sampling_args(0.5, 3, 0.9)
    with pytest.raises(ValueError, match=r"temperature \(0 = greedy\) must be a finite number >= 0"):
        check_sampling_args(float("nan"), None, None)


@pytest.mark.parametrize("settings", [dict(), dict(temperature=0.6), dict(top_p=0.7), dict(temperature=1.3, top_k=3)])
def test_sampled_log2prob_is_the_distribution_generate_samples_from(settings):
    """Over every continuation of two tokens the probabilities sum to 1, and generate's draws
    follow them (the sampler's Q(x), one teacher-forced pass per batch)."""
    model = Transformer(ModelConfig(vocab_size=5, max_len=8, d_model=16, n_layer=1, n_head=2)).eval()
    with torch.no_grad():
        model.head.weight.mul_(8.0)  # spread the logits, so that temperature and top-p change the distribution
    every = torch.cartesian_prod(torch.arange(5), torch.arange(5))  # (25, 2)
    rows = torch.cat([torch.full((25, 1), 1), every], dim=1)  # prompt token 1, then two generated
    q = 2.0 ** sampled_log2prob(model, rows, 1, **settings)  # (25,)
    assert q.sum().item() == pytest.approx(1.0, abs=1e-9)
    draws = generate(
        model, torch.ones(4000, 1, dtype=torch.long), 2, generator=torch.Generator().manual_seed(0), **settings
    )
    counts = torch.bincount(draws[:, 1] * 5 + draws[:, 2], minlength=25).double() / 4000
    assert (counts - q).abs().max().item() < 4 * math.sqrt(0.25 / 4000)
    assert (counts[q == 0] == 0).all()  # filtered tokens are never drawn


def test_sampled_log2prob_refuses_what_it_cannot_score():
    with pytest.raises(ValueError, match="temperature must be > 0"):
        sampled_log2prob(tiny(), torch.ones(2, 4, dtype=torch.long), 1, temperature=0)
    with pytest.raises(ValueError, match=r"prompt_length must be an int in \[1, 3\]"):
        sampled_log2prob(tiny(), torch.ones(2, 4, dtype=torch.long), 4)
    with pytest.raises(ValueError, match="needs a causal"):
        bidirectional = Transformer(ModelConfig(vocab_size=5, max_len=8, d_model=16, n_layer=1, n_head=2, causal=False))
        sampled_log2prob(bidirectional, torch.ones(2, 4, dtype=torch.long), 1)
