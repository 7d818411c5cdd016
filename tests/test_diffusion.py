import math

import pytest
import torch

from helpers.diffusion import diffusion_loss, even_split, masked_logits, nelbo, sample, top_counts
from helpers.model import ModelConfig, Transformer, count_passes
from helpers.toylang import LANG

V = len(LANG.vocab)


def tiny(causal=False, max_len=32):
    torch.manual_seed(0)
    return Transformer(ModelConfig(vocab_size=V, max_len=max_len, d_model=32, n_layer=1, n_head=2, causal=causal))


class Constant(Transformer):
    """Returns fixed logits (T, V) for every row, whatever the canvas: a model we can reason about."""

    def __init__(self, logits):
        super().__init__(
            ModelConfig(vocab_size=V, max_len=logits.size(0), d_model=8, n_layer=1, n_head=1, causal=False)
        )
        self.fixed = logits

    def forward(self, idx, cache=None, last_only=False):
        return self.fixed[None, : idx.size(1)].expand(idx.size(0), -1, -1).clone()


class Crowd(Transformer):
    """Predicts token `a` while few positions are visible and token `b` once many are: its
    early guesses become wrong later, so an editor that re-masks can fix them."""

    def __init__(self, a, b, max_len=17):
        super().__init__(ModelConfig(vocab_size=V, max_len=max_len, d_model=8, n_layer=1, n_head=1, causal=False))
        self.a, self.b = a, b

    def forward(self, idx, cache=None, last_only=False):
        visible = (idx != LANG.mask_id).float().mean(dim=1, keepdim=True)  # (B, 1)
        logits = torch.zeros(idx.size(0), idx.size(1), V)
        pick = torch.where(visible > 0.5, self.b, self.a)  # (B, 1)
        logits.scatter_(2, pick[:, :, None].expand(-1, idx.size(1), 1), 5.0)
        return logits


def test_even_split_matches_llada():
    assert even_split(30, 8) == [4, 4, 4, 4, 4, 4, 3, 3]
    assert even_split(31, 31) == [1] * 31
    assert sum(even_split(256, 7)) == 256


def test_loss_weighting_on_a_hand_built_case():
    """Uniform logits over the V-1 real tokens: every masked position costs log(V-1), so the loss
    is sum_b n_masked_b * log(V-1) / t_b / (B (T-1)) with t and the masks replayed from the seed."""
    B, T = 4, 9
    model = Constant(torch.zeros(T, V))
    x0 = torch.from_numpy(LANG.sample_documents(B, T, seed=0))
    loss = diffusion_loss(model, x0, eps=1e-3, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(7)
    u = torch.rand(1, generator=g)
    t = 1e-3 + (1 - 1e-3) * ((u + torch.arange(B) / B) % 1)
    masked = torch.rand(B, T, generator=g) < t[:, None]
    masked[:, 0] = False
    expected = (masked.sum(1) * math.log(V - 1) / t).sum() / (B * (T - 1))
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    gaps = t.sort().values.diff()
    assert torch.allclose(gaps, torch.full_like(gaps, (1 - 1e-3) / B))  # antithetic: evenly spread rates


def test_mask_logit_is_never_predicted_or_sampled():
    logits = torch.zeros(32, V)
    logits[:, LANG.mask_id] = 50.0  # the model loves <mask>
    model = Constant(logits)
    assert torch.isneginf(masked_logits(model, torch.zeros(1, 32, dtype=torch.long))[..., LANG.mask_id]).all()
    for strategy, temperature in [("confidence", 0.0), ("confidence", 1.0), ("ancestral", 1.0)]:
        out = sample(model, 31, 8, strategy=strategy, temperature=temperature, batch_size=4)
        assert not (out == LANG.mask_id).any()
    loss = diffusion_loss(model, torch.from_numpy(LANG.sample_documents(2, 32, seed=0)))
    assert math.isfinite(loss.item())


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(steps=31),
        dict(steps=5),
        dict(steps=1),
        dict(steps=8, strategy="random", temperature=1.0),
        dict(steps=8, strategy="margin"),
        dict(steps=8, strategy="entropy"),
        dict(steps=10, strategy="ancestral", temperature=1.0),
        dict(steps=31, threshold=0.5),
        dict(steps=8, remask=0.2),
        dict(steps=10, strategy="ancestral", temperature=1.0, remask=0.3),
    ],
)
def test_no_mask_left_at_the_end_and_prompt_kept(kwargs):
    out = sample(tiny(), 31, batch_size=3, generator=torch.Generator().manual_seed(0), **kwargs)
    assert out.shape == (3, 32)
    assert not (out == LANG.mask_id).any()
    assert (out[:, 0] == LANG.bos_id).all()


def test_per_step_commit_counts_follow_the_even_split():
    _, trace = sample(tiny(), 30, 8, prompt=torch.tensor([LANG.bos_id, 3]), batch_size=2, return_trace=True)
    counts = [step["committed"].sum(dim=1).tolist() for step in trace]
    assert counts == [[k, k] for k in [4, 4, 4, 4, 4, 4, 3, 3]]


def test_blocks_fill_strictly_left_to_right():
    _, trace = sample(tiny(), 24, 6, prompt=torch.tensor([LANG.bos_id] * 8), block_length=8, return_trace=True)
    assert len(trace) == 6
    for step in trace:
        cols = step["committed"][0].nonzero().flatten()
        block = step["block"]
        assert ((cols >= 8 + 8 * block) & (cols < 16 + 8 * block)).all()
        before = step["canvas"][0, : 8 + 8 * block]
        assert not (before == LANG.mask_id).any()  # earlier blocks are complete


def test_threshold_commits_every_sure_position_and_at_least_one():
    logits = torch.zeros(9, V)
    sure = [1, 4, 6]
    for pos in sure:
        logits[pos, 10] = 20.0  # probability ~1 for token 10
    logits[2, 11] = 3.0  # the best of the unsure ones: p ~ 0.28
    model = Constant(logits)
    _, trace = sample(model, 8, 8, threshold=0.9, return_trace=True)
    first = trace[0]["committed"][0].nonzero().flatten().tolist()
    assert first == sure
    second = trace[1]["committed"][0].nonzero().flatten().tolist()
    assert second == [2]  # nothing is sure any more: the most confident one alone
    with count_passes(model) as passes:
        sample(model, 8, 8, threshold=0.9)
    assert passes.n == 1 + 5  # three at once, then one per pass


def test_remasking_actually_revises():
    model = Crowd(a=10, b=11)
    plain = sample(model, 16, 8)
    edited, trace = sample(model, 16, 8, remask=0.5, return_trace=True)
    revised = sum(int(step["revised"].sum()) for step in trace)
    assert revised > 0
    assert set(edited[0, 1:].tolist()) == {10, 11} and not torch.equal(plain, edited)
    remasked = sum(int(step["remasked"].sum()) for step in trace)
    assert remasked >= revised


def test_ancestral_remasking_revises_too():
    model = Crowd(a=10, b=11)
    generator = torch.Generator().manual_seed(1)
    _, trace = sample(model, 16, 8, strategy="ancestral", remask=0.5, generator=generator, return_trace=True)
    assert sum(int(step["revised"].sum()) for step in trace) > 0


@pytest.mark.parametrize("length, steps", [(16, 4), (64, 4), (256, 4), (1024, 4), (256, 16)])
def test_passes_are_steps_whatever_the_canvas(length, steps):
    model = tiny(max_len=length + 1)
    with count_passes(model) as passes:
        sample(model, length, steps)
    assert passes.n == steps
    assert passes.positions == steps * (length + 1)


def test_ancestral_passes_are_at_most_steps():
    model = tiny()
    with count_passes(model) as passes:
        sample(model, 31, 31, strategy="ancestral", temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert 1 <= passes.n <= 31


def test_top_counts_picks_the_best_finite_scores():
    scores = torch.tensor([[0.1, 0.9, float("-inf"), 0.5], [0.3, 0.2, 0.1, float("-inf")]])
    picked = top_counts(scores, torch.tensor([2, 5]))
    assert picked.tolist() == [[False, True, False, True], [True, True, True, False]]


def test_nelbo_is_an_upper_bound_near_the_training_loss():
    model = tiny()
    x0 = torch.from_numpy(LANG.sample_documents(16, 32, seed=0))
    bound = nelbo(model, x0, draws=16, generator=torch.Generator().manual_seed(0))
    losses = [diffusion_loss(model, x0, generator=torch.Generator().manual_seed(s)).item() for s in range(20)]
    assert bound == pytest.approx(sum(losses) / len(losses), rel=0.1)
    assert bound > math.log(2) * LANG.document_entropy_bits(32) / 31  # a random model is far above the floor


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(steps=0), "steps must be an int >= 1"),
        (dict(steps=32), r"steps \(32\) must be <= length \(31\)"),
        (dict(length=30, block_length=7, steps=5), "block_length must be an int that divides"),
        (dict(length=30, block_length=10, steps=4), "multiple of the number of blocks"),
        (dict(threshold=0.0), "threshold"),
        (dict(threshold=1.5), "threshold"),
        (dict(prompt=torch.ones(40, dtype=torch.long)), "exceeds the model's max_len"),
        (dict(length=32), "exceeds the model's max_len"),
        (dict(length=0), "length"),
        (dict(strategy="best"), "strategy must be one of"),
        (dict(remask=1.0), "remask"),
        (dict(temperature=-1), "temperature"),
        (dict(batch_size=0), "batch_size"),
        (dict(prompt=torch.ones(2, 1, dtype=torch.long), batch_size=3), "rows"),
        (dict(prompt=torch.ones(1)), "int64"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    args = dict(length=31, steps=8) | kwargs
    length, steps = args.pop("length"), args.pop("steps")
    with pytest.raises(ValueError, match=message):
        sample(tiny(), length, steps, **args)


def test_causal_model_is_refused():
    with pytest.raises(ValueError, match="bidirectional"):
        sample(tiny(causal=True), 31, 8)
    with pytest.raises(ValueError, match="bidirectional"):
        diffusion_loss(tiny(causal=True), torch.zeros(2, 32, dtype=torch.long))
