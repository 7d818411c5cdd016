import pytest
import torch

from helpers.ar import filter_logits, generate, next_token
from helpers.model import ModelConfig, Transformer


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

    def forward(self, idx, cache=None, last_only=False):
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
