import math

import pytest
import torch

from helpers.decoding.checkpoints import load_pretrained
from helpers.decoding.model import ModelConfig, Transformer, count_passes
from helpers.diffusion.exact_denoiser import ExactDenoiser
from helpers.diffusion.sampler import (
    commit_top_scores,
    diffusion_loss,
    even_split,
    masked_logits,
    masked_nll,
    mdlm_commit,
    nelbo,
    remdm_remask,
    remdm_sigma,
    sample,
    top_counts,
)
from helpers.diffusion.unmasking import remdm_remaskings_per_token
from helpers.language.toylang import LANG

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

    def forward(self, idx, cache=None, last_only=False, check_ids=True):
        return self.fixed[None, : idx.size(1)].expand(idx.size(0), -1, -1).clone()


class Crowd(Transformer):
    """Predicts token `a` while few positions are visible and token `b` once many are: its
    early guesses become wrong later, so an editor that re-masks can fix them."""

    def __init__(self, a, b, max_len=17):
        super().__init__(ModelConfig(vocab_size=V, max_len=max_len, d_model=8, n_layer=1, n_head=1, causal=False))
        self.a, self.b = a, b

    def forward(self, idx, cache=None, last_only=False, check_ids=True):
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
    for rule, temperature in [("confidence", 0.0), ("confidence", 1.0), ("ancestral", 1.0)]:
        out = sample(model, 31, 8, rule=rule, temperature=temperature, batch_size=4)
        assert not (out == LANG.mask_id).any()
    loss = diffusion_loss(model, torch.from_numpy(LANG.sample_documents(2, 32, seed=0)))
    assert math.isfinite(loss.item())


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(steps=31),
        dict(steps=5),
        dict(steps=1),
        dict(steps=8, rule="random", temperature=1.0),
        dict(steps=8, rule="margin"),
        dict(steps=8, rule="entropy"),
        dict(steps=10, rule="ancestral", temperature=1.0),
        dict(steps=31, threshold=0.5),
        dict(steps=8, remask=0.2, remask_schedule="lowest-confidence"),
        dict(steps=8, temperature=1.0, remask=0.2),
        dict(steps=8, temperature=1.0, remask=0.5, remask_schedule="rescale", block_length=31),
        dict(steps=10, rule="ancestral", temperature=1.0, remask=0.3),
        dict(steps=10, rule="ancestral", temperature=1.0, remask=0.3, remask_schedule="rescale"),
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
    edited, trace = sample(model, 16, 8, remask=0.5, remask_schedule="lowest-confidence", return_trace=True)
    revised = sum(int(step["revised"].sum()) for step in trace)
    assert revised > 0
    assert set(edited[0, 1:].tolist()) == {10, 11} and not torch.equal(plain, edited)
    remasked = sum(int(step["remasked"].sum()) for step in trace)
    assert remasked >= revised


def test_ancestral_remasking_revises_too():
    model = Crowd(a=10, b=11)
    generator = torch.Generator().manual_seed(1)
    _, trace = sample(model, 16, 8, rule="ancestral", remask=0.5, generator=generator, return_trace=True)
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
        sample(model, 31, 31, rule="ancestral", temperature=1.0, generator=torch.Generator().manual_seed(0))
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
        (dict(rule="best"), "rule must be one of"),
        (dict(remask=1.0), "remask"),
        (dict(temperature=-1), "temperature"),
        (dict(batch_size=0), "batch_size"),
        (dict(prompt=torch.ones(2, 1, dtype=torch.long), batch_size=3), "rows"),
        (dict(prompt=torch.ones(1)), "int64"),
        # each row below was accepted silently, or failed with a TypeError / IndexError, before
        (dict(rule="ancestral", threshold=0.5), r"threshold applies to the ranking rules .* not to 'ancestral'"),
        (dict(prompt=torch.tensor([LANG.bos_id, LANG.mask_id])), r"prompt must not contain <mask> \(id 2\)"),
        (dict(prompt=torch.tensor([LANG.bos_id, V])), rf"prompt token ids must be in \[0, {V}\).*got {V}"),
        (dict(prompt=torch.tensor([LANG.bos_id, -1])), rf"prompt token ids must be in \[0, {V}\).*got -1"),
        (dict(temperature=float("nan")), "temperature must be a finite number >= 0, got nan"),
        (dict(temperature=float("inf")), "temperature must be a finite number >= 0, got inf"),
        (dict(temperature="1"), "temperature must be a finite number >= 0"),
        (dict(steps=True), "steps must be an int >= 1, got True"),
        (dict(steps=8.0), "steps must be an int >= 1, got 8.0"),
        (dict(length=True, steps=1), r"length \(tokens to generate\) must be an int >= 1, got True"),
        (dict(batch_size=True), "batch_size must be an int >= 1, got True"),
        (dict(block_length=True), "block_length must be an int >= 1, got True"),
        (dict(threshold=True), r"threshold \(None or Fast-dLLM's tau\) must be a number in \(0, 1\], got True"),
        (dict(threshold=float("nan")), r"threshold .* must be a number in \(0, 1\], got nan"),
        (dict(remask=float("nan")), r"remask \(None or ReMDM's eta\) must be a number in \(0, 1\), got nan"),
        (dict(remask=True), r"remask .* must be a number in \(0, 1\), got True"),
        (dict(rule=["confidence"]), "rule must be one of"),
        (dict(prompt=[LANG.bos_id]), "prompt must be None or an int64 torch.Tensor"),
        (dict(prompt=torch.ones(0, dtype=torch.long)), "T0 >= 1"),
        (dict(generator=0), "generator must be None or a torch.Generator, got int"),
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


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m, x0: nelbo(m, x0, draws=True), "draws must be an int >= 1, got True"),
        (lambda m, x0: nelbo(m, x0, draws=0), "draws must be an int >= 1, got 0"),
        (lambda m, x0: nelbo(m, x0, draws=2.0), "draws must be an int >= 1, got 2.0"),
        (lambda m, x0: diffusion_loss(m, x0, eps=float("nan")), r"eps must be a number in \(0, 1\), got nan"),
        (lambda m, x0: diffusion_loss(m, x0, eps=True), r"eps must be a number in \(0, 1\), got True"),
        (lambda m, x0: diffusion_loss(m, x0, eps="0.1"), r"eps must be a number in \(0, 1\), got '0.1'"),
        (lambda m, x0: diffusion_loss(m, x0, eps=1.0), r"eps must be a number in \(0, 1\), got 1.0"),
        (lambda m, x0: even_split(8, True), "steps must be an int >= 1, got True"),
        (lambda m, x0: even_split(-1, 3), "n_tokens must be an int >= 0, got -1"),
    ],
)
def test_bad_loss_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call(tiny(), torch.from_numpy(LANG.sample_documents(2, 32, seed=0)))


def test_threshold_and_remasking_combine_as_before():
    generator = torch.Generator().manual_seed(0)
    for kwargs in [
        dict(steps=31, threshold=0.5, remask=0.25, remask_schedule="lowest-confidence"),
        dict(length=30, steps=30, block_length=10, threshold=0.3, remask=0.5, remask_schedule="lowest-confidence"),
        dict(steps=31, threshold=0.5, remask=0.25),
    ]:
        args = dict(length=31) | kwargs
        out = sample(
            tiny(), args.pop("length"), args.pop("steps"), batch_size=2, temperature=1.0, generator=generator, **args
        )
        assert not (out == LANG.mask_id).any()


# ------------------------------------------------------------------ LLaDA's reference, by hand
def llada_num_transfer_tokens(mask_index, steps):
    """LLaDA's get_num_transfer_tokens: each row's masked count over `steps`, remainder first."""
    n = mask_index.sum(dim=1)  # (B,)
    out = (n // steps)[:, None].repeat(1, steps)  # (B, steps)
    for row in range(n.size(0)):
        out[row, : int(n[row] % steps)] += 1
    return out


def llada_generate(model, prompt, gen_length, steps, block_length):
    """LLaDA's `generate` at temperature 0 without classifier-free guidance, remasking='low_confidence',
    written from the published algorithm. The only change: the logits are ours (the <mask> logit at
    -inf), as the course models never predict <mask>."""
    B, T0 = prompt.shape
    x = torch.full((B, T0 + gen_length), LANG.mask_id)
    x[:, :T0] = prompt
    n_blocks = gen_length // block_length
    per_block = steps // n_blocks
    for nb in range(n_blocks):
        start, end = T0 + nb * block_length, T0 + (nb + 1) * block_length
        num_transfer = llada_num_transfer_tokens(x[:, start:end] == LANG.mask_id, per_block)
        for i in range(per_block):
            mask_index = x == LANG.mask_id
            logits = masked_logits(model, x)
            x0 = logits.argmax(dim=-1)  # add_gumbel_noise is the identity at temperature 0
            p = torch.softmax(logits.to(torch.float64), dim=-1)
            x0_p = torch.gather(p, -1, x0[..., None]).squeeze(-1)
            x0_p[:, end:] = -math.inf  # later blocks wait
            x0 = torch.where(mask_index, x0, x)
            confidence = torch.where(mask_index, x0_p, torch.tensor(-math.inf, dtype=torch.float64))
            transfer = torch.zeros_like(x0, dtype=torch.bool)
            for row in range(B):
                _, select = torch.topk(confidence[row], k=int(num_transfer[row, i]))
                transfer[row, select] = True
            x[transfer] = x0[transfer]
    return x


@pytest.mark.parametrize(
    "length, steps, block_length",
    [(32, 32, 32), (32, 8, 32), (32, 5, 32), (32, 8, 8), (32, 16, 4), (30, 6, 10), (24, 12, 8), (31, 1, 31)],
)
def test_confidence_at_temperature_0_is_llada_generate(length, steps, block_length):
    for model in (tiny(max_len=33), load_pretrained("mdlm")):
        prompt = (
            torch.tensor([[LANG.bos_id], [LANG.bos_id]]) if length > 30 else torch.tensor([[LANG.bos_id, 3, 4]] * 2)
        )
        prompt[1, -1] = 10 if prompt.size(1) > 1 else LANG.bos_id
        ours = sample(model, length, steps, prompt=prompt, block_length=block_length, batch_size=2)
        assert torch.equal(ours, llada_generate(model, prompt, length, steps, block_length))


# ------------------------------------------------------------------ each rule, pinned
def constant_logits(rows, length):
    """Logits (1 + length, V) from rows of {token: probability}; tokens not named get -inf."""
    logits = torch.full((1 + length, V), -math.inf)
    logits[0] = 0.0  # the <bos> position: never sampled, but its softmax must be finite
    for pos, row in enumerate(rows, start=1):
        for token, prob in row.items():
            logits[pos, token] = math.log(prob)
    return logits


def commit_order(trace):
    return [step["committed"][0].nonzero().flatten().tolist() for step in trace]


ROWS = [  # confidence p(top1), margin p1 - p2, entropy (nats)
    {10: 0.50, 11: 0.49, 12: 0.01},  # 0.50, 0.01, 0.74
    {10: 0.45, **{t: 0.05 for t in range(11, 22)}},  # 0.45, 0.40, 2.01
    {10: 0.40, 11: 0.30, 12: 0.30},  # 0.40, 0.10, 1.09
    {10: 0.48, 11: 0.26, 12: 0.26},  # 0.48, 0.22, 1.05
]


@pytest.mark.parametrize(
    "rule, order",
    [("confidence", [1, 4, 2, 3]), ("margin", [2, 4, 3, 1]), ("entropy", [1, 4, 3, 2])],
)
def test_each_rule_commits_in_its_own_order(rule, order):
    _, trace = sample(Constant(constant_logits(ROWS, 4)), 4, 4, rule=rule, return_trace=True)
    assert commit_order(trace) == [[pos] for pos in order]


def test_ties_go_to_the_leftmost_position():
    for rule in ("confidence", "margin", "entropy"):
        _, trace = sample(Constant(torch.zeros(9, V)), 8, 4, rule=rule, return_trace=True)
        assert commit_order(trace) == [[1, 2], [3, 4], [5, 6], [7, 8]]


def test_random_rule_ranks_by_fresh_uniform_draws():
    _, trace = sample(
        Constant(constant_logits(ROWS * 2, 8)),
        8,
        4,
        rule="random",
        generator=torch.Generator().manual_seed(3),
        batch_size=2,
        return_trace=True,
    )
    replay = torch.Generator().manual_seed(3)
    masked = torch.ones(2, 9, dtype=torch.bool)
    masked[:, 0] = False
    for step in trace:
        scores = torch.rand(2, 9, generator=replay, dtype=torch.float64).masked_fill(~masked, -math.inf)
        expected = torch.zeros_like(masked)
        expected.scatter_(1, scores.topk(2, dim=1).indices, True)
        assert torch.equal(step["committed"], expected)
        masked &= ~expected


@pytest.mark.parametrize("temperature, p_first", [(0.5, 0.9), (1.0, 0.75), (2.0, 3**0.5 / (3**0.5 + 1))])
def test_tokens_are_drawn_from_the_tempered_softmax(temperature, p_first):
    model = Constant(constant_logits([{10: 0.75, 11: 0.25}] * 31, 31))
    out = sample(model, 31, 1, temperature=temperature, batch_size=200, generator=torch.Generator().manual_seed(0))
    share = (out[:, 1:] == 10).double().mean().item()  # 6,200 draws: standard error < 0.006
    assert share == pytest.approx(p_first, abs=0.025)
    assert (sample(model, 31, 1, batch_size=2)[:, 1:] == 10).all()  # temperature 0: argmax


def test_threshold_includes_confidence_exactly_tau():
    rows = [{10: 0.5, 11: 0.5}] * 3 + [{10: 1 / 3, 11: 1 / 3, 12: 1 / 3}] * 5  # p(chosen) exactly 0.5, then 1/3
    _, trace = sample(Constant(constant_logits(rows, 8)), 8, 8, threshold=0.5, return_trace=True)
    assert commit_order(trace)[:3] == [[1, 2, 3], [4], [5]]


def test_commit_top_scores_in_a_blocks_last_step_takes_every_mask():
    scores = torch.tensor([[0.9, 0.1, 0.5, 0.3]], dtype=torch.float64)
    masked = torch.tensor([[True, True, False, True]])
    assert commit_top_scores(scores, masked, 1).tolist() == [[True, False, False, False]]
    assert commit_top_scores(scores, masked, 1, last_step=True).tolist() == [[True, True, False, True]]
    assert commit_top_scores(scores, masked, 9).tolist() == [[True, True, False, True]]  # never more than masked


def test_mdlm_last_step_commits_every_mask_and_remdm_cap_spares_the_first():
    u = torch.tensor([[0.0, 0.5, 1 - 2**-24]])  # 1 - 2**-24: the largest float32 torch.rand can return
    masked = torch.ones(1, 3, dtype=torch.bool)
    for steps in (1, 3, 7, 32, 1000):
        assert mdlm_commit(masked, u, 1 / steps, 0.0).all()
    remasked, sigma = remdm_remask(masked, u, 1.0, 0.75, 0.5)
    assert sigma == 0.0 and not remasked.any()


@pytest.mark.parametrize("remask", [None, 0.3])
@pytest.mark.parametrize("B, n, K", [(64, 16, 8), (1, 16, 16)])  # the second skips steps
def test_ancestral_steps_follow_mdlm_and_remdm_cap(B, n, K, remask):
    """Replays the uniform draws: from t to s a masked position is committed with probability
    (t - s) / t (MDLM), or with ReMDM-cap (1 - s - (1 - sigma)(1 - t)) / t while each filled one is
    re-masked with probability sigma = min(eta, s / (1 - t)); a step that changes nothing is skipped:
    no pass is run for it."""
    model = Constant(torch.zeros(n + 1, V))
    with count_passes(model) as passes:
        _, trace = sample(
            model,
            n,
            K,
            rule="ancestral",
            remask=remask,
            batch_size=B,
            generator=torch.Generator().manual_seed(5),
            return_trace=True,
        )
    replay, masked, expected = torch.Generator().manual_seed(5), torch.ones(B, n + 1, dtype=torch.bool), []
    masked[:, 0] = False
    for j in range(K):
        if not masked.any():
            break  # every position is filled: the sampler stops
        t, s = 1 - j / K, 1 - (j + 1) / K
        u = torch.rand(B, n + 1, generator=replay)
        sigma = 0.0 if remask is None or j == 0 else min(remask, s / (1 - t))
        p = (t - s) / t if sigma == 0 else (1 - s - (1 - sigma) * (1 - t)) / t
        commit, remasked = masked & (u < p), ~masked & (u < sigma)
        remasked[:, 0] = False
        if commit.any() or remasked.any():
            expected.append((commit, remasked))
        masked = (masked & ~commit) | remasked
    assert passes.n == len(trace) == len(expected) < K + (B > 1)  # (1, 16, 16): some steps were skipped
    for step, (commit, remasked) in zip(trace, expected, strict=True):
        assert torch.equal(step["committed"], commit) and torch.equal(step["remasked"], remasked)


def test_remasking_picks_the_least_confident_at_commit_time():
    """Recomputes every committed token's probability from the canvas it was committed on, then
    checks each step re-masks round(eta * n) of the n tokens committed before it, the least sure."""
    model, eta = tiny(), 0.25
    _, trace = sample(model, 16, 8, remask=eta, remask_schedule="lowest-confidence", batch_size=3, return_trace=True)
    canvas = torch.full((3, 17), LANG.mask_id)
    canvas[:, 0] = LANG.bos_id
    when_committed = torch.full((3, 17), math.inf, dtype=torch.float64)
    n_remasked = 0
    for step in trace:
        probs = torch.softmax(masked_logits(model, canvas).double(), dim=-1)
        p_now = probs.gather(-1, step["canvas"].clamp_min(0)[..., None]).squeeze(-1)
        before = (canvas != LANG.mask_id) & ~step["committed"]
        before[:, 0] = False
        for row in range(3):
            last = step["step"] == 7  # a block's last step never re-masks
            n = 0 if last else int(torch.tensor(eta * before[row].sum().item()).round())
            candidates = before[row].nonzero().flatten().tolist()
            least = sorted(candidates, key=lambda pos: (when_committed[row, pos].item(), pos))[:n]
            assert step["remasked"][row].nonzero().flatten().tolist() == sorted(least)
            n_remasked += n
        when_committed = torch.where(step["committed"], p_now, when_committed)
        filled = step["canvas"] != LANG.mask_id
        assert torch.allclose(step["confidence"][filled], when_committed[filled])
        canvas = step["canvas"]
    assert n_remasked > 5


class Visible(Transformer):
    """Sure of token 10 once more than half the canvas is visible, uniform before: the bound's
    integrand jumps at t = 1/2, so how the masking rates are drawn matters."""

    def __init__(self, max_len=32):
        super().__init__(ModelConfig(vocab_size=V, max_len=max_len, d_model=8, n_layer=1, n_head=1, causal=False))

    def forward(self, idx, cache=None, last_only=False, check_ids=True):
        visible = (idx != LANG.mask_id).float().mean(dim=1)  # (B,)
        logits = torch.zeros(idx.size(0), idx.size(1), V)
        logits[visible > 0.5, :, 10] = 20.0
        return logits


def test_nelbo_stratifies_the_masking_rates():
    model, draws = Visible(), 8
    x0 = torch.full((4, 32), 10)
    x0[:, 0] = LANG.bos_id
    stratified, plain = [], []
    for seed in range(40):
        stratified.append(nelbo(model, x0, draws=draws, generator=torch.Generator().manual_seed(seed)))
        g = torch.Generator().manual_seed(seed)
        total = sum(masked_nll(model, x0, torch.rand(4, generator=g).clamp_min(1e-6), g).double() for _ in range(draws))
        plain.append((total / (draws * 31)).mean().item())
    stratified, plain = torch.tensor(stratified), torch.tensor(plain)
    assert stratified.mean().item() == pytest.approx(plain.mean().item(), rel=0.1)  # the same bound
    assert stratified.var() < plain.var() / 4  # with much less noise


# ------------------------------------------------------------------ ReMDM's own schedules
@pytest.mark.parametrize("eta", [0.008, 0.015, 0.4, 0.9])
def test_remdm_sigma_follows_the_papers_formulas(eta):
    """sigma_max = min(1, (1 - alpha_s) / alpha_t) with alpha = 1 - t; cap: min(eta, sigma_max);
    rescale: eta * sigma_max (Wang et al. 2025, the cap and rescale schedules)."""
    for steps in (4, 8, 32, 1024):
        for j in range(steps):
            t, s = 1 - j / steps, 1 - (j + 1) / steps
            alpha_t, alpha_s = 1 - t, 1 - s
            sigma_max = 0.0 if alpha_t == 0 else min(1.0, (1 - alpha_s) / alpha_t)
            assert remdm_sigma(t, s, eta, "cap") == pytest.approx(min(eta, sigma_max), abs=1e-15)
            assert remdm_sigma(t, s, eta, "rescale") == pytest.approx(eta * sigma_max, abs=1e-15)
    assert remdm_sigma(0.5, 0.0, eta, "cap") == remdm_sigma(0.5, 0.0, eta, "rescale") == 0.0  # the last step
    with pytest.raises(ValueError, match="schedule must be 'cap' or 'rescale'"):
        remdm_sigma(0.5, 0.25, eta, "loop")


def test_remdm_remaskings_per_token_compare_the_scripts_eta_with_the_course_s():
    assert remdm_remaskings_per_token(0.008, "cap", 1024) == pytest.approx(4.06, abs=0.01)
    assert remdm_remaskings_per_token(0.015, "rescale", 1024) == pytest.approx(3.83, abs=0.01)
    assert remdm_remaskings_per_token(0.4, "cap", 32) == pytest.approx(4.29, abs=0.01)
    assert remdm_remaskings_per_token(0.5, "rescale", 32) == pytest.approx(3.75, abs=0.01)


@pytest.mark.parametrize("schedule", ["cap", "rescale"])
def test_confidence_order_with_remdm_remasks_with_sigma_and_commits_as_many_more(schedule):
    """Replays the draws: before each pass every filled position is re-masked with probability
    sigma_t (u < sigma, one uniform draw per position taken before the pass), and the pass commits
    the scheduled k plus one per re-masked token, so the masked count stays on LLaDA's schedule."""
    n, K, B, eta = 16, 8, 4, 0.6
    model = tiny()
    _, trace = sample(model, n, K, remask=eta, remask_schedule=schedule, temperature=1.0, batch_size=B,
                      generator=torch.Generator().manual_seed(3), return_trace=True)  # fmt: skip
    replay = torch.Generator().manual_seed(3)
    filled = torch.zeros(B, n + 1, dtype=torch.bool)
    remasked_total = 0
    for j, (step, k) in enumerate(zip(trace, even_split(n, K), strict=True)):
        t, s = 1 - j / K, 1 - (j + 1) / K
        u = torch.rand(B, n + 1, generator=replay)
        torch.multinomial(torch.ones(B * (n + 1), V, dtype=torch.float64), 1, generator=replay)  # the tokens' draws
        expected = filled & (u < remdm_sigma(t, s, eta, schedule))
        room = n - sum(even_split(n, K)[:j]) - k  # masked before the step, minus the k it commits
        for row in range(B):  # never more re-masked than the step can fill again: the smallest draws
            drawn = expected[row].nonzero().flatten()
            keep = drawn[u[row, drawn].argsort()[:room]]
            expected[row] = False
            expected[row, keep] = True
        assert torch.equal(step["remasked"], expected)
        assert step["committed"].sum(dim=1).tolist() == (k + expected.sum(dim=1)).tolist()
        filled = step["canvas"] != LANG.mask_id
        filled[:, 0] = False
        assert (filled.sum(dim=1) == sum(even_split(n, K)[: j + 1])).all()  # on schedule
        remasked_total += int(expected.sum())
    assert remasked_total > 0 and not trace[-1]["remasked"].any()


def test_the_course_s_stress_test_needs_a_ranking_rule():
    with pytest.raises(ValueError, match="'lowest-confidence' needs a ranking rule"):
        sample(tiny(), 8, 8, rule="ancestral", remask=0.25, remask_schedule="lowest-confidence")
    with pytest.raises(ValueError, match=r"remask_schedule must be one of \('cap', 'rescale', 'lowest-confidence'\)"):
        sample(tiny(), 8, 8, remask=0.25, remask_schedule="loop")


def test_sample_reads_as_the_sampler():
    """The loop shows one pass: the rules' choices live in helpers.diffusion.unmasking, the set-up and
    the moves drawn before a pass in helpers of their own; its parameters in an Args block."""
    import ast
    import inspect

    from helpers.diffusion import sampler

    function = ast.parse(inspect.getsource(sampler.sample)).body[0]
    docstring = function.body[0]
    lines = (function.end_lineno - function.lineno + 1) - (docstring.end_lineno - docstring.lineno + 1)
    assert lines <= 60, f"sample is {lines} lines without its docstring"
    doc = inspect.getdoc(sampler.sample)
    args = doc[doc.index("Args:") : doc.index("Returns:")]
    for name in inspect.signature(sampler.sample).parameters:
        assert f"\n    {name}:" in args, f"sample's Args block does not state {name}"


def test_a_rule_is_one_entry_of_the_table(monkeypatch):
    """Adding an unmasking rule is one entry of helpers.diffusion.unmasking.RULES: the sampler accepts
    it and ranks by its score, its threshold applies, and the error messages name it."""
    from helpers.diffusion import unmasking

    def rightmost_first(probs, chosen, generator):
        return torch.arange(chosen.size(1), dtype=torch.float64).expand(chosen.shape).clone()  # (B, T)

    rule = unmasking.Rule("rightmost", rightmost_first, "the rightmost masked position first")
    monkeypatch.setitem(unmasking.RULES, "rightmost", rule)
    canvas, trace = sample(ExactDenoiser(), 8, 8, rule="rightmost", return_trace=True)
    first = trace[0]["committed"][0].nonzero().flatten().tolist()
    assert first == [8] and (canvas != LANG.mask_id).all()  # the last position of the canvas went first
    sample(ExactDenoiser(), 8, 8, rule="rightmost", threshold=0.9)
    with pytest.raises(ValueError, match="rightmost"):
        sample(ExactDenoiser(), 8, 8, rule="nearest")
