"""Speculative decoding (helpers.speculative.rule, helpers.speculative.drafters, KVCache.crop).

The rule keeps the target's output distribution exactly, whatever the drafter; a changed rule
does not. Every distribution check here is a Pearson chi-square test of the first two generated
tokens against the target's exact joint p(t1) p(t2 | t1), computed by full forward passes. The
seeds are fixed, so each check is deterministic; a correct sampler would fail one with
probability ALPHA (below), and the broken rules fail it by many orders of magnitude.
"""

import copy
import math
from functools import cache

import pytest
import torch

import helpers.speculative.rule as speculative
from helpers.decoding.ar import generate
from helpers.decoding.model import ModelConfig, Transformer, count_passes
from helpers.diffusion.sampler import masked_logits
from helpers.language.toylang import LANG
from helpers.speculative.drafters import CausalDrafter, LanguageDrafter, MaskedDiffusionDrafter
from helpers.speculative.rule import speculative_generate, target_probs, verify

V = 4  # vocabulary of the tiny models
PROMPT = torch.tensor([[1, 2]])  # (1, 2): two positions, so the caches start at an offset
SAMPLES = 300  # outputs per distribution check: enough to separate the broken rules by far
ALPHA = 1e-6  # chance that a correct sampler fails one chi-square check


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def random_model(seed: int, vocab: int = V, max_len: int = 6, causal: bool = True) -> Transformer:
    """A tiny random Transformer whose next-token distributions are far from uniform (GPT-2's
    init gives logits near 0, so the untied output head is drawn wider) and depend on the context."""
    torch.manual_seed(seed)
    config = ModelConfig(
        vocab_size=vocab, max_len=max_len, d_model=16, n_layer=1, n_head=2, causal=causal, tie_weights=False
    )
    model = Transformer(config)
    with torch.no_grad():
        model.head.weight.normal_(0, 0.3)
    return model.eval()


@cache
def target() -> Transformer:
    return random_model(0)


@cache
def unrelated() -> Transformer:
    """The bad drafter's model: another random model, its q far from the target's p."""
    return random_model(1)


@cache
def long_target() -> Transformer:
    return random_model(0, max_len=10)


@cache
def long_unrelated() -> Transformer:
    return random_model(1, max_len=10)


@cache
def diffusion_model() -> Transformer:
    """A bidirectional model over the language's vocabulary (the drafter uses LANG.mask_id)."""
    return random_model(2, vocab=len(LANG.vocab), max_len=10, causal=False)


def make_drafter(kind: str, temperature: float = 1.0) -> CausalDrafter:
    """'bad': an unrelated random model; 'good': a copy of the target at the target's temperature."""
    if kind == "bad":
        return CausalDrafter(unrelated())
    return CausalDrafter(copy.deepcopy(target()), temperature=temperature)


@torch.inference_mode()
def exact_joint(model: Transformer, prompt: torch.Tensor, temperature: float) -> torch.Tensor:
    """p(t1) p(t2 | t1) (V, V) after `prompt`, from full forward passes (no cache), in float64."""
    rows = torch.cat([prompt.expand(V, -1), torch.arange(V)[:, None]], dim=1)  # (V, T0 + 1): prompt, t1
    logits = model(rows).double() / temperature  # (V, T0 + 1, V)
    first = torch.softmax(logits[0, -2], dim=-1)  # (V,) p(t1 | prompt)
    second = torch.softmax(logits[:, -1], dim=-1)  # (V, V) row t1: p(t2 | prompt, t1)
    return first[:, None] * second


def first_two_tokens(draft, gamma: int, temperature: float = 1.0, n: int = SAMPLES) -> torch.Tensor:
    """Counts (V, V) of the first two tokens of n outputs. Each output runs gamma + 1 tokens, so
    its first round drafts the full gamma and both tokens can come from any branch of the rule."""
    generator, counts = torch.Generator().manual_seed(0), torch.zeros(V, V)
    for _ in range(n):
        out, _ = speculative_generate(target(), draft, PROMPT, gamma + 1, gamma, temperature, generator=generator)
        counts[out[0, 2], out[0, 3]] += 1
    return counts


def chi2_sf(x: float, df: int) -> float:
    """P(chi-square with df degrees of freedom > x): the regularised upper incomplete gamma
    Q(df / 2, x / 2), from the series of the lower one."""
    a, z = df / 2, x / 2
    if z > 500:  # far beyond any df used here: below 1e-150
        return 0.0
    term = total = 1 / a
    n = 1
    while term > total * 1e-17:
        term *= z / (a + n)
        total += term
        n += 1
    return max(0.0, 1 - math.exp(a * math.log(z) - z - math.lgamma(a)) * total) if z > 0 else 1.0


def chi_square_pvalue(counts: torch.Tensor, probs: torch.Tensor) -> float:
    """Pearson's test of counts against probs, the cells expected fewer than 5 times pooled into one."""
    expected = counts.sum() * probs.flatten().double()
    observed = counts.flatten().double()
    order = torch.argsort(expected)
    expected, observed = expected[order], observed[order]
    pooled = int((expected.cumsum(0) < 5).sum()) + 1  # the smallest cells, until they expect 5
    expected = torch.cat([expected[:pooled].sum()[None], expected[pooled:]])
    observed = torch.cat([observed[:pooled].sum()[None], observed[pooled:]])
    statistic = float(((observed - expected) ** 2 / expected).sum())
    return chi2_sf(statistic, len(expected) - 1)


def test_chi_square_tail_matches_known_quantiles():
    assert chi2_sf(3.841459, 1) == pytest.approx(0.05, abs=1e-6)
    assert chi2_sf(15.507313, 8) == pytest.approx(0.05, abs=1e-6)
    assert chi2_sf(30.577914, 15) == pytest.approx(0.01, abs=1e-6)


def test_the_tiny_models_are_far_apart():
    """The check has teeth: the bad drafter's joint is far from the target's."""
    p, q = exact_joint(target(), PROMPT, 1.0), exact_joint(unrelated(), PROMPT, 1.0)
    assert 0.5 * (p - q).abs().sum() > 0.5
    assert (p.sum(dim=1)[:, None] != p).any()  # t2 depends on t1


# 1. Exactness: the output is the target's, for any drafter and gamma


@pytest.mark.parametrize("gamma", [1, 2, 3])
@pytest.mark.parametrize("kind", ["bad", "good"])
def test_the_output_is_the_targets_joint_distribution(kind, gamma):
    counts = first_two_tokens(make_drafter(kind), gamma)
    assert chi_square_pvalue(counts, exact_joint(target(), PROMPT, 1.0)) > ALPHA


@pytest.mark.parametrize("kind", ["bad", "good"])
def test_the_output_is_the_targets_joint_at_temperature_0_7(kind):
    counts = first_two_tokens(make_drafter(kind, temperature=0.7), 2, temperature=0.7, n=2 * SAMPLES)
    assert chi_square_pvalue(counts, exact_joint(target(), PROMPT, 0.7)) > ALPHA
    assert chi_square_pvalue(counts, exact_joint(target(), PROMPT, 1.0)) < ALPHA  # the temperature is applied


def always_accept(p, q, drafted, generator=None):
    """A changed rule: keep every draft, then the bonus token."""
    return torch.cat([drafted, torch.multinomial(p[-1], 1, generator=generator)]), len(drafted)


def fix_from_p(p, q, drafted, generator=None):
    """A changed rule: at a rejection, draw the fix from p instead of norm(max(0, p - q))."""
    for i, x in enumerate(drafted.tolist()):
        if torch.rand((), generator=generator, dtype=torch.float64) * q[i, x] < p[i, x]:
            continue
        return torch.cat([drafted[:i], torch.multinomial(p[i], 1, generator=generator)]), i
    return always_accept(p, q, drafted, generator)


@pytest.mark.parametrize("rule", [always_accept, fix_from_p])
def test_a_changed_rule_fails_the_same_check(monkeypatch, rule):
    monkeypatch.setattr(speculative, "verify", rule)
    counts = first_two_tokens(make_drafter("bad"), 2)
    assert chi_square_pvalue(counts, exact_joint(target(), PROMPT, 1.0)) < ALPHA


def test_a_greedy_target_writes_the_greedy_tokens():
    prompt = torch.tensor([[1]])
    greedy = generate(long_target(), prompt, 9, temperature=0)
    for gamma in (1, 3):
        out, counts = speculative_generate(long_target(), long_unrelated(), prompt, 9, gamma, temperature=0)
        assert torch.equal(out, greedy)
        assert counts.new_tokens == 9


# 2. Pass counts


@pytest.mark.parametrize("gamma", [1, 2, 3, 4, 12])
def test_a_copy_of_the_target_accepts_every_draft_and_saves_target_passes(gamma):
    n = 9
    drafter = CausalDrafter(copy.deepcopy(long_target()))
    prompt = torch.tensor([[1]])
    with count_passes(long_target()) as target_passes, count_passes(drafter.model) as draft_passes:
        out, counts = speculative_generate(
            long_target(), drafter, prompt, n, gamma, generator=torch.Generator().manual_seed(0)
        )
    rounds = math.ceil(n / (gamma + 1))  # every round writes gamma + 1 tokens but the last
    assert out.shape == (1, 1 + n) and counts.new_tokens == n
    assert counts.rounds == counts.target_passes == target_passes.n == rounds < n
    assert counts.accepted == counts.drafted == n - rounds and counts.rejections == 0
    assert counts.draft_passes == draft_passes.n == counts.drafted  # one drafter pass per drafted token
    assert counts.tokens_per_target_pass == n / rounds and counts.acceptance == 1.0


def test_the_counts_of_a_bad_drafter_add_up():
    n, gamma = 9, 3
    rejected = 0
    for seed in range(8):
        drafter = CausalDrafter(long_unrelated())
        with count_passes(long_target()) as target_passes, count_passes(drafter.model) as draft_passes:
            out, counts = speculative_generate(
                long_target(), drafter, torch.tensor([[1]]), n, gamma, generator=torch.Generator().manual_seed(seed)
            )
        assert out.shape == (1, 1 + n) and counts.new_tokens == n
        assert counts.rounds == counts.target_passes == target_passes.n
        assert counts.draft_passes == draft_passes.n == counts.drafted
        assert counts.new_tokens == counts.accepted + counts.rounds  # each round: its accepted drafts + 1
        assert counts.accepted + counts.rejections <= counts.drafted <= gamma * counts.rounds
        assert counts.rejections <= counts.rounds
        assert counts.acceptance == counts.accepted / (counts.accepted + counts.rejections)
        rejected += counts.rejections
    assert rejected > 0


def test_eos_ends_the_output_at_its_first_occurrence():
    eos, stopped = 3, 0
    for seed in range(10):
        out, counts = speculative_generate(
            long_target(), long_unrelated(), torch.tensor([[1]]), 9, 3, eos_id=eos,
            generator=torch.Generator().manual_seed(seed),
        )  # fmt: skip
        new = out[0, 1:].tolist()
        assert counts.new_tokens == len(new)
        if eos in new:
            assert new.index(eos) == len(new) - 1
            stopped += len(new) < 9
        else:
            assert len(new) == 9
    assert stopped > 0


# 4. KV rollback


def filled_cache(model: Transformer, tokens: torch.Tensor, pieces: list[int]):
    """A cache filled with tokens (1, T), fed in passes of the given lengths."""
    cache, start = model.new_cache(1), 0
    for piece in pieces:
        model(tokens[:, start : start + piece], cache=cache)
        start += piece
    return cache


@pytest.mark.parametrize("k", [0, 1, 4, 8, 9])
@torch.inference_mode()
def test_crop_leaves_a_fresh_cache_of_the_first_k_tokens(k):
    model = long_target()
    tokens = torch.tensor([[1, 0, 3, 2, 2, 1, 0, 3, 1]])  # (1, 9)
    cache = filled_cache(model, tokens, [5, 4])
    assert cache.crop(k) is cache
    fresh = filled_cache(model, tokens, [k] if k else [])
    assert cache.length == fresh.length == k
    assert torch.allclose(cache.data, fresh.data, atol=1e-6, rtol=0)
    assert (cache.data[:, :, :, :, k:] == 0).all()
    if k < 9:  # and the next pass continues as if the rest had never been written
        logits = model(tokens[:, k:], cache=cache)[0]
        assert torch.allclose(logits, model(tokens)[0, k:], atol=1e-5)


@torch.inference_mode()
def test_crop_refuses_lengths_it_does_not_hold():
    cache = filled_cache(long_target(), torch.tensor([[1, 0, 3]]), [3])
    for bad in (4, -1, 2.0):
        with pytest.raises(ValueError, match=r"length \(0 to the 3 positions filled\)"):
            cache.crop(bad)
    assert cache.length == 3


@torch.inference_mode()
def assert_drafter_cache_is_fresh(drafter: CausalDrafter):
    cached = torch.tensor([drafter.cached])
    assert drafter.cache.length == len(drafter.cached)
    fresh = filled_cache(drafter.model, cached, [len(drafter.cached)] if drafter.cached else [])
    assert torch.allclose(drafter.cache.data, fresh.data, atol=1e-6, rtol=0)


@torch.inference_mode()
def test_the_causal_drafter_cache_follows_an_output_that_diverges_from_its_drafts():
    model = long_unrelated()
    drafter, generator = CausalDrafter(model), torch.Generator().manual_seed(0)
    out = torch.tensor([[1]])
    for kept, gamma in [(0, 3), (1, 2), (2, 2), (3, 1), (0, 1), (None, 3), (1, 4)]:
        if kept is None:  # a new output that shares nothing with the cache
            out = torch.tensor([[2, 3]])
        drafted, q = drafter.propose(out, gamma, generator)
        assert_drafter_cache_is_fresh(drafter)
        assert drafter.cached == out[0].tolist() + drafted[:-1].tolist()  # all but the newest draft is cached
        for i in range(gamma):  # q is the model's next-token distribution after out + the drafts before
            context = torch.cat([out[0], drafted[:i]])[None]
            assert torch.allclose(q[i], torch.softmax(model(context)[0, -1].double(), dim=-1), atol=1e-5)
        if kept is not None:  # the target keeps `kept` drafts, then writes a token the drafter did not
            fix = (int(drafted[kept]) + 1) % V if kept < gamma else 0
            out = torch.cat([out[0], drafted[:kept], torch.tensor([fix])])[None]
    assert drafter.propose(out, 0)[0].numel() == 0
    assert_drafter_cache_is_fresh(drafter)
    assert drafter.cached == out[0, :-1].tolist()  # at least the newest token is left to feed


# 5. verify() by itself


def test_verify_accepts_every_draft_when_p_equals_q():
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        p = torch.rand(4, V, generator=generator, dtype=torch.float64) + 0.01
        p /= p.sum(dim=1, keepdim=True)  # (gamma + 1, V)
        q = p[:3].clone()
        drafted = torch.multinomial(q, 1, generator=generator)[:, 0]  # (3,)
        written, n = verify(p, q, drafted, generator)
        assert n == 3 and written.shape == (4,) and torch.equal(written[:3], drafted)


def test_verify_accepts_with_probability_min_1_p_over_q():
    p = torch.tensor([[0.2, 0.8, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]], dtype=torch.float64)
    q = torch.tensor([[0.5, 0.5, 0.0, 0.0]], dtype=torch.float64)
    generator = torch.Generator().manual_seed(0)
    likely = [verify(p, q, torch.tensor([1]), generator)[1] for _ in range(300)]
    assert all(n == 1 for n in likely)  # p(x) >= q(x): always kept
    draws = 4000
    kept = sum(verify(p, q, torch.tensor([0]), generator)[1] for _ in range(draws)) / draws
    assert abs(kept - 0.4) < 5 * math.sqrt(0.4 * 0.6 / draws)  # p/q = 0.4


def test_verify_rejects_a_draft_the_target_never_writes_and_fixes_it_from_the_residual():
    p = torch.tensor([[0.0, 0.5, 0.3, 0.2], [0.25] * 4], dtype=torch.float64)  # p(0) = 0
    generator = torch.Generator().manual_seed(0)
    one_hot = torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)  # all of q on token 0
    fixes = [verify(p, one_hot, torch.tensor([0]), generator) for _ in range(500)]
    assert all(n == 0 and written.shape == (1,) and int(written) != 0 for written, n in fixes)
    q = torch.tensor([[0.6, 0.1, 0.3, 0.0]], dtype=torch.float64)  # p - q: [-0.6, 0.4, 0, 0.2]
    draws = 3000
    fixes = torch.stack([verify(p, q, torch.tensor([0]), generator)[0] for _ in range(draws)])[:, 0]
    assert set(fixes.tolist()) <= {1, 3}  # never where p - q <= 0, though p(2) = 0.3
    share = float((fixes == 1).double().mean())
    assert abs(share - 2 / 3) < 5 * math.sqrt(2 / 9 / draws)  # norm(max(0, p - q)) = [0, 2/3, 0, 1/3]


def test_verify_draws_the_fix_from_p_when_the_residual_is_empty():
    """p <= q everywhere, which for two distributions happens only when p == q up to rounding: the
    rejection had probability 0, the residual is all zeros, and the fix comes from p itself."""
    p = torch.tensor([[0.0, 0.5, 0.5, 0.0], [0.25] * 4], dtype=torch.float64)
    q = torch.tensor([[0.3, 0.5, 0.5, 0.0]], dtype=torch.float64)  # rounding exaggerated: p(0) = 0 < q(0)
    generator = torch.Generator().manual_seed(0)
    fixes = [verify(p, q, torch.tensor([0]), generator) for _ in range(200)]
    assert all(n == 0 for _, n in fixes)
    assert {int(written) for written, _ in fixes} == {1, 2}


def test_verify_writes_the_bonus_token_from_the_last_row():
    p = torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]], dtype=torch.float64)
    q = p[:2].clone()
    written, n = verify(p, q, torch.tensor([1, 2]), torch.Generator().manual_seed(0))
    assert n == 2 and written.tolist() == [1, 2, 3]


def test_target_probs_is_the_tempered_softmax_in_float64():
    logits = torch.tensor([[0.5, 2.0, -1.0, 0.0]])
    assert target_probs(logits, 0).tolist() == [[0.0, 1.0, 0.0, 0.0]]
    tempered = target_probs(logits, 0.7)
    assert tempered.dtype == torch.float64
    assert torch.allclose(tempered, torch.softmax(logits.double() / 0.7, dim=-1), atol=1e-15)


# 6. The drafters


@pytest.mark.parametrize("parallel, passes", [(True, 1), (False, 4)])
@torch.inference_mode()
def test_the_masked_diffusion_drafter_spends_one_pass_or_gamma(parallel, passes):
    model, gamma = diffusion_model(), 4
    drafter = MaskedDiffusionDrafter(model, parallel=parallel)
    prompt = torch.tensor([[LANG.bos_id, 3]])
    with drafter.counting() as counted, count_passes(model) as independent:
        drafted, q = drafter.propose(prompt, gamma, torch.Generator().manual_seed(0))
    assert counted.n == independent.n == passes
    assert drafted.shape == (gamma,) and q.shape == (gamma, len(LANG.vocab)) and q.dtype == torch.float64
    assert torch.allclose(q.sum(dim=1), torch.ones(gamma, dtype=torch.float64))
    assert (q[:, LANG.mask_id] == 0).all() and (q[torch.arange(gamma), drafted] > 0).all()
    canvas = torch.full((1, 10), LANG.mask_id)
    canvas[0, :2] = prompt[0]
    for i in range(gamma):  # parallel: every row from the same canvas; else the drafts before are filled in
        if not parallel and i:
            canvas[0, 1 + i] = drafted[i - 1]
        marginal = torch.softmax(masked_logits(model, canvas)[0, 2 + i].double(), dim=-1)
        assert torch.allclose(q[i], marginal, atol=1e-6)


def all_drafters(**flags):
    return [
        CausalDrafter(unrelated(), **flags),
        MaskedDiffusionDrafter(diffusion_model(), parallel=True, **flags),
        MaskedDiffusionDrafter(diffusion_model(), parallel=False, **flags),
        LanguageDrafter(10, **flags),
    ]


def prompt_for(drafter) -> torch.Tensor:
    return PROMPT if drafter.vocab_size == V else torch.tensor([[LANG.bos_id]])


@torch.inference_mode()
def test_greedy_drafts_the_argmax_and_scores_it_with_a_one_hot_q():
    for greedy, scored in zip(all_drafters(greedy=True), all_drafters(greedy=True, softmax_as_q=True), strict=True):
        drafted, q = greedy.propose(prompt_for(greedy), 3)
        assert torch.equal(q, torch.nn.functional.one_hot(drafted, greedy.vocab_size).double())
        same, softmax = scored.propose(prompt_for(scored), 3)
        assert torch.equal(same, drafted) and torch.equal(softmax.argmax(dim=1), drafted)
        assert torch.allclose(softmax.sum(dim=1), torch.ones(3, dtype=torch.float64))
        assert (softmax.max(dim=1).values < 1).any()  # the softmax, not the one-hot


def test_softmax_as_q_without_greedy_is_refused():
    for make in (
        lambda: CausalDrafter(unrelated(), softmax_as_q=True),
        lambda: MaskedDiffusionDrafter(diffusion_model(), softmax_as_q=True),
        lambda: LanguageDrafter(10, softmax_as_q=True),
    ):
        with pytest.raises(ValueError, match=r"softmax_as_q only makes sense with greedy=True"):
            make()


def test_the_language_drafter_proposes_only_what_the_language_allows():
    drafter, generator = LanguageDrafter(10), torch.Generator().manual_seed(0)
    for _ in range(30):
        drafted, q = drafter.propose(torch.tensor([[LANG.bos_id]]), 6, generator)
        assert torch.allclose(q.sum(dim=1), torch.ones(6, dtype=torch.float64), atol=1e-12)
        assert (q[torch.arange(6), drafted] > 0).all()
        prefix = [LANG.bos_id]
        for i, token in enumerate(drafted.tolist()):  # q row i: the language after the drafts before it
            assert torch.allclose(q[i], torch.from_numpy(LANG.document_next_token_probs(prefix, 10)))
            prefix.append(token)
        LANG.document_next_token_probs(prefix, 10)  # the draft is a prefix the language can continue
    language_target = random_model(3, vocab=len(LANG.vocab), max_len=10)  # a target over the language's vocabulary
    out, counts = speculative_generate(
        language_target, drafter, torch.tensor([[LANG.bos_id]]), 9, 3, generator=torch.Generator().manual_seed(0)
    )
    assert out.shape == (1, 10)
    assert counts.draft_passes == 0 and counts.new_tokens == 9 and counts.target_passes == counts.rounds


def test_a_greedy_draft_scored_with_its_softmax_moves_the_output():
    """transformers#32867: the draft is the argmax, but q claims it was sampled from the softmax."""
    counts = first_two_tokens(CausalDrafter(unrelated(), greedy=True, softmax_as_q=True), 2)
    assert chi_square_pvalue(counts, exact_joint(target(), PROMPT, 1.0)) < ALPHA


def test_a_greedy_draft_scored_with_its_one_hot_q_stays_exact():
    counts = first_two_tokens(CausalDrafter(unrelated(), greedy=True), 2)
    assert chi_square_pvalue(counts, exact_joint(target(), PROMPT, 1.0)) > ALPHA


# 7. Bad input


def bidirectional() -> Transformer:
    return random_model(0, causal=False)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(prompt=torch.zeros(2, 1, dtype=torch.long)), r"shape \(1, T0\): speculative decoding here is batch 1"),
        (dict(prompt=torch.zeros(1, 1)), r"prompt must be an int64 tensor of shape \(1, T0\)"),
        (dict(prompt=torch.zeros(1, 0, dtype=torch.long)), r"shape \(1, T0\) with T0 >= 1"),
        (dict(prompt=[[1]]), r"prompt must be an int64 tensor"),
        (dict(gamma=0), r"gamma \(tokens drafted per round\) must be an int >= 1"),
        (dict(gamma=True), r"gamma \(tokens drafted per round\) must be an int >= 1"),
        (dict(max_new_tokens=6), r"max_new_tokens \(prompt \+ new tokens must fit max_len: at most 5\)"),
        (dict(max_new_tokens=-1), r"max_new_tokens .* in \[0, 5\]"),
        (
            dict(draft=lambda: random_model(1, max_len=4), max_new_tokens=4),
            r"at most 3\)",
        ),  # the drafter's max_len counts too
        (dict(target=bidirectional), r"target must be a causal helpers\.decoding\.model\.Transformer"),
        (
            dict(draft=lambda: random_model(1, vocab=V + 1)),
            r"drafter's vocabulary \(5\) differs from the target's \(4\)",
        ),
        (
            dict(draft="model"),
            r"draft must be a helpers\.speculative\.drafters\.Drafter or a causal Transformer, got str",
        ),
        (dict(draft=bidirectional), r"CausalDrafter needs a causal"),
        (dict(generator=0), r"generator must be None or a torch\.Generator, got int"),
        (dict(temperature=-1.0), r"temperature \(0 = greedy\) must be a finite number >= 0"),
        (dict(temperature=float("nan")), r"temperature \(0 = greedy\) must be a finite number >= 0"),
        (dict(eos_id=V), r"eos_id \(None: no early stop\) must be an int in \[0, 3\]"),
    ],
)
def test_bad_arguments_are_refused_naming_what_is_allowed(change, message):
    change = {key: value() if callable(value) else value for key, value in change.items()}  # models built here
    args = dict(target=target(), draft=unrelated(), prompt=torch.tensor([[1]]), max_new_tokens=3, gamma=2) | change
    with pytest.raises(ValueError, match=message):
        speculative_generate(**args)


def test_the_target_itself_is_refused_as_its_drafter():
    with pytest.raises(ValueError, match=r"must not be the target model itself .* copy\.deepcopy\(target\)"):
        speculative_generate(target(), target(), torch.tensor([[1]]), 3, 2)
    with pytest.raises(ValueError, match=r"must not be the target model itself"):
        speculative_generate(target(), CausalDrafter(target()), torch.tensor([[1]]), 3, 2)


def test_drafters_refuse_bad_settings():
    with pytest.raises(ValueError, match=r"greedy must be True or False, got 1"):
        CausalDrafter(unrelated(), greedy=1)
    with pytest.raises(ValueError, match=r"temperature \(the drafter's own\) must be a finite number > 0"):
        CausalDrafter(unrelated(), temperature=0)
    with pytest.raises(ValueError, match=r"MaskedDiffusionDrafter needs a bidirectional"):
        MaskedDiffusionDrafter(unrelated())
    with pytest.raises(ValueError, match=r"parallel must be True or False, got 'yes'"):
        MaskedDiffusionDrafter(diffusion_model(), parallel="yes")
    with pytest.raises(ValueError, match=r"length \(the canvas: <bos> \+ tokens\) must be an int >= 2"):
        LanguageDrafter(1)


@pytest.mark.parametrize("name", ["small AR model", "diffusion, one pass"])
def test_the_shipped_sweep_is_reproduced(name):
    """data/speculative.json: its first documents at QUALITY_GAMMA come back, token for token."""
    from helpers.decoding.checkpoints import load_pretrained
    from helpers.speculative.sweep import QUALITY_GAMMA, load, make_drafter, run_documents

    shipped = load()["quality"][name]
    run, _ = run_documents(load_pretrained("ar"), make_drafter(name), QUALITY_GAMMA, 3)
    assert run.docs.tolist() == shipped.docs[:3].tolist()
    assert run.passes.tolist() == shipped.passes[:3].tolist()


# ------------------------------------------------------------------ where the time goes (notebook 06, section 5)
def test_time_split_counts_each_models_passes_and_puts_the_rest_in_everything_else():
    import time

    from helpers.speculative.cost import time_split

    x = torch.tensor([[1, 2]])

    def run():
        with torch.inference_mode():
            for _ in range(2):
                target()(x)
            for _ in range(3):
                unrelated()(x)
        time.sleep(0.002)  # outside every forward pass

    splits = time_split({"both": (run, unrelated()), "alone": (lambda: target()(x), None)}, target(), repeat=3)
    both, alone = splits["both"], splits["alone"]
    assert (both.target_passes, both.draft_passes, alone.target_passes, alone.draft_passes) == (2, 3, 1, 0)
    assert both.other >= 0.0019 and alone.draft_forward == 0.0
    assert both.total == pytest.approx(both.target_forward + both.draft_forward + both.other)
    assert not target()._forward_hooks and not target()._forward_pre_hooks  # the clocks are removed
    assert not unrelated()._forward_hooks and not unrelated()._forward_pre_hooks


def test_time_split_removes_its_clocks_when_a_run_fails_and_refuses_bad_arguments():
    from helpers.speculative.cost import time_split

    def broken():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        time_split({"broken": (broken, None)}, target(), warmup=0)
    assert not target()._forward_hooks and not target()._forward_pre_hooks
    for decoders, message in [
        ({}, "decoders must be a non-empty dict"),
        ({"x": lambda: None}, r"decoders\['x'\] must be \(run, drafter\)"),
        ({"x": (lambda: None, target())}, "other than the target"),
        ({"x": (None, None)}, "run callable"),
    ]:
        with pytest.raises(ValueError, match=message):
            time_split(decoders, target())
    with pytest.raises(ValueError, match="target must be a helpers.decoding.model.Transformer"):
        time_split({"x": (lambda: None, None)}, "AR")
    with pytest.raises(ValueError, match="repeat"):
        time_split({"x": (lambda: None, None)}, target(), repeat=0)
