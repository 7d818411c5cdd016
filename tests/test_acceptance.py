"""helpers.speculative.acceptance: the predicted acceptance of speculative decoding, pinned against brute force."""

import copy
import itertools
import math

import numpy as np
import pytest
import torch

from helpers.decoding.model import ModelConfig, Transformer
from helpers.diffusion.sampler import masked_logits
from helpers.language.toylang import LANG
from helpers.speculative.acceptance import (
    acceptance_table,
    chain_prediction,
    expected_tokens,
    first_two_joint,
    mean_alpha,
    overlap,
    speedup,
    target_table,
    visited_documents,
)
from helpers.speculative.drafters import CausalDrafter, LanguageDrafter, MaskedDiffusionDrafter
from helpers.speculative.rule import verify

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def random_distributions(n: int, vocab: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(vocab), size=n)  # (n, V), no zeros


def brute_force_tokens_per_round(p: np.ndarray, q: np.ndarray, gamma: int) -> float:
    """Every drafted sequence x (probability prod q(x_i)) and every way the rule can treat it:
    draft i accepted with probability min(1, p(x_i) / q(x_i)), the round over at the first
    rejection (k accepted drafts + the fix) or after all gamma (+ the bonus)."""
    total = 0.0
    for xs in itertools.product(range(len(p)), repeat=gamma):
        chance = math.prod(q[x] for x in xs)
        accept = [min(1.0, p[x] / q[x]) for x in xs]
        for k in range(gamma + 1):  # exactly k drafts accepted
            ends = 1.0 if k == gamma else 1 - accept[k]
            total += chance * math.prod(accept[:k]) * ends * (k + 1)
    return total


@pytest.mark.parametrize("gamma", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expected_tokens_is_the_brute_force_count(gamma, seed):
    p, q = random_distributions(2, 3, seed)
    assert expected_tokens(overlap(p, q), gamma) == pytest.approx(brute_force_tokens_per_round(p, q, gamma), abs=1e-12)


def test_verify_writes_expected_tokens_on_average():
    """The sampler itself, with p and q the same at every position, writes what the formula says."""
    p0, q0 = (torch.from_numpy(r) for r in random_distributions(2, 3, 5))
    gamma, draws = 3, 3000
    p, q = p0.expand(gamma + 1, 3), q0.expand(gamma, 3)
    generator = torch.Generator().manual_seed(0)
    written = [
        len(verify(p, q, torch.multinomial(q, 1, replacement=True, generator=generator)[:, 0], generator)[0])
        for _ in range(draws)
    ]
    expected = expected_tokens(float(overlap(p0.numpy(), q0.numpy())), gamma)
    assert abs(np.mean(written) - expected) < 5 * np.std(written) / math.sqrt(draws)


def test_overlap_is_one_minus_total_variation_on_the_last_axis():
    p, q = random_distributions(10, 5, 0).reshape(2, 5, 5), random_distributions(10, 5, 1).reshape(2, 5, 5)
    alpha = overlap(p, q)
    assert alpha.shape == (2, 5)
    assert np.allclose(alpha, 1 - 0.5 * np.abs(p - q).sum(axis=-1), atol=1e-12)
    assert overlap(p[0, 0], p[0, 0]) == pytest.approx(1.0)
    assert overlap([1.0, 0.0], [0.0, 1.0]) == 0.0
    with pytest.raises(ValueError, match=r"same shape \(\.\.\., V\)"):
        overlap(p, q[..., :4])


def test_expected_tokens_at_the_ends_and_leviathans_speedup():
    for gamma in (0, 1, 4, 7):
        assert expected_tokens(1, gamma) == gamma + 1
        assert expected_tokens(0, gamma) == 1
    assert expected_tokens(0.5, 2) == pytest.approx(1.75)
    assert round(speedup(0.8, 5, 0), 2) == 3.69  # Leviathan et al. 2023, section 3.4
    assert speedup(0.8, 5, 0.1) == pytest.approx(expected_tokens(0.8, 5) / 1.5)
    with pytest.raises(ValueError, match=r"alpha \(acceptance, 0 to 1\) must be a number in \[0, 1\]"):
        expected_tokens(1.5, 2)
    with pytest.raises(ValueError, match=r"gamma \(tokens drafted per round\) must be an int >= 0"):
        expected_tokens(0.5, -1)
    with pytest.raises(ValueError, match=r"cost_ratio"):
        speedup(0.5, 2, -0.1)


def brute_force_rounds(alphas: np.ndarray, end: int, gamma: int, s: int = 1) -> float:
    """Expected rounds to write a document up to position `end` from prefix s: every pattern of
    accept / reject over a round's gamma drafts (alphas[s - 1, i]: draft i of a round at s), the
    round writing the drafts before the first rejection and one more token."""
    if s > end:
        return 0.0
    total = 0.0
    for pattern in itertools.product([True, False], repeat=gamma):
        chance = math.prod(alphas[s - 1, i] if kept else 1 - alphas[s - 1, i] for i, kept in enumerate(pattern))
        accepted = pattern.index(False) if False in pattern else gamma
        total += chance * (1 + brute_force_rounds(alphas, end, gamma, s + accepted + 1))
    return total


@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_chain_prediction_is_the_brute_force_count(gamma):
    rng = np.random.default_rng(gamma)
    table = rng.uniform(size=(2, 7, gamma))
    first_eos = np.array([5, 3])
    rounds = sum(brute_force_rounds(table[d], int(first_eos[d]), gamma) for d in range(2))
    assert chain_prediction(table, first_eos, gamma) == pytest.approx(first_eos.sum() / rounds, abs=1e-12)


def test_chain_prediction_of_a_short_document():
    one = np.full((1, 4, 1), 0.3)
    assert chain_prediction(one, np.array([1]), 1) == 1.0  # one token: one round, whatever alpha
    assert chain_prediction(one, np.array([2]), 1) == pytest.approx(2 / (2 - 0.3))  # 1 round, 2 if rejected


@pytest.mark.parametrize("alpha, gamma", [(0.0, 2), (0.6, 1), (0.8, 4), (1.0, 3)])
def test_chain_prediction_with_a_constant_alpha_tends_to_expected_tokens(alpha, gamma):
    errors = []
    for end in (50, 2000):
        table = np.full((1, end + 1, gamma), alpha)
        errors.append(abs(chain_prediction(table, np.array([end]), gamma) - expected_tokens(alpha, gamma)))
    assert errors[1] < 2e-3 * expected_tokens(alpha, gamma)
    assert errors[1] <= errors[0]


def test_mean_alpha_averages_the_first_draft_over_the_visited_prefixes():
    table = np.arange(2 * 4 * 2, dtype=float).reshape(2, 4, 2) / 20  # (n, L - 1, gamma)
    first_eos = np.array([2, 4])
    visited = [table[0, 0, 0], table[0, 1, 0], *table[1, :, 0]]
    assert mean_alpha(table, first_eos) == pytest.approx(np.mean(visited))


@torch.inference_mode()
def test_first_two_joint_is_p_of_a_times_p_of_b_given_a():
    target = tiny(0)
    joint = first_two_joint(target, temperature=0.7)
    vocab = len(LANG.vocab)
    rows = torch.tensor([[LANG.bos_id, a] for a in range(vocab)])  # (V, 2)
    logits = target(rows).double() / 0.7  # (V, 2, V)
    want = torch.softmax(logits[0, 0], dim=-1)[:, None] * torch.softmax(logits[:, 1], dim=-1)
    assert joint.shape == (vocab, vocab) and joint.sum() == pytest.approx(1.0)
    assert np.allclose(joint, want.numpy(), atol=1e-12)


def tiny(seed: int, causal: bool = True) -> Transformer:
    torch.manual_seed(seed)
    config = ModelConfig(vocab_size=len(LANG.vocab), max_len=8, d_model=16, n_layer=1, n_head=2, causal=causal)
    return Transformer(config).eval()


def test_visited_documents_end_at_their_first_eos_or_at_the_canvas_end():
    docs, first_eos = visited_documents(40, length=8, seed=0)
    assert docs.shape == (40, 8) and (docs[:, 0] == LANG.bos_id).all()
    full = 0
    for d in range(40):
        row = docs[d].tolist()
        if LANG.eos_id in row:
            assert row[first_eos[d]] == LANG.eos_id and LANG.eos_id not in row[1 : first_eos[d]]
        else:  # sentences that fill the canvas exactly: the generation writes every position
            assert first_eos[d] == 7
            full += 1
    assert full > 0


@torch.inference_mode()
def test_acceptance_tables_of_the_drafters():
    docs, _ = visited_documents(3, length=8, seed=0)
    target = tiny(0)
    p = target_table(target, docs)  # (3, 7, V)
    assert p.shape == (3, 7, len(LANG.vocab)) and np.allclose(p.sum(axis=-1), 1)
    gamma = 3

    copied = acceptance_table(CausalDrafter(copy.deepcopy(target)), p, docs, gamma)
    assert copied.shape == (3, 7, gamma) and np.allclose(copied, 1, atol=1e-6)

    causal = CausalDrafter(tiny(1))
    table = acceptance_table(causal, p, docs, gamma)
    q = torch.softmax(causal.model(docs[:, :-1]).double(), dim=-1).numpy()
    for s in range(1, 8):
        for i in range(gamma):  # draft i + 1 of a round at prefix s is checked at prefix s + i
            want = overlap(p[:, s - 1 + i], q[:, s - 1 + i]) if s + i <= 7 else np.ones(3)
            assert np.allclose(table[:, s - 1, i], want)

    language = acceptance_table(LanguageDrafter(8), p, docs, 1)
    for d, s in [(0, 1), (1, 3), (2, 6)]:
        exact = LANG.document_next_token_probs(docs[d, :s].tolist(), 8)
        assert language[d, s - 1, 0] == pytest.approx(overlap(p[d, s - 1], exact))

    model = tiny(2, causal=False)
    parallel = acceptance_table(MaskedDiffusionDrafter(model, parallel=True), p, docs, gamma)
    in_order = acceptance_table(MaskedDiffusionDrafter(model, parallel=False), p, docs, gamma)
    assert np.allclose(parallel[..., 0], in_order[..., 0])
    s = 2
    canvas = docs.clone()
    canvas[:, s:] = LANG.mask_id
    marginals = torch.softmax(masked_logits(model, canvas).double(), dim=-1).numpy()  # (3, 8, V)
    for i in range(gamma):  # every draft of the one pass comes from prefix s alone
        assert np.allclose(parallel[:, s - 1, i], overlap(p[:, s - 1 + i], marginals[:, s + i]))
    with pytest.raises(ValueError, match="no acceptance table"):
        acceptance_table(object(), p, docs, gamma)
