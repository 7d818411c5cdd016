"""Every exercise check accepts its reference solution, reports an unfilled stub as not attempted,
and rejects typical wrong attempts with the hint that fits them, in a short report."""

import copy
import functools
import inspect
import json
import math
import re
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import exercises, solutions
from helpers.decoding.ar import filter_logits
from helpers.decoding.ar import top_p_filter as course_top_p
from helpers.diffusion.sampler import even_split
from helpers.diffusion.unmasking import top_counts
from helpers.exercises.ar_decoding import causal_attention
from helpers.exercises.report import COURSE_FUNCTIONS, course_functions
from helpers.exercises.second_language import Reweighted, reads_global_lang, second_language_probs
from helpers.language.toylang import LANG
from helpers.language.toylang import LANG as SAME_LANGUAGE
from helpers.roofline.costs import StepCost, predicted_time
from helpers.speculative import rule as speculative
from helpers.speculative.acceptance import overlap

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHECKS = {  # exercise -> (notebook, check)
    "sample_sentence": ("01_chain_rule", exercises.check_sample_sentence),
    "sentence_log2prob": ("01_chain_rule", exercises.check_sentence_log2prob),
    "attend_with_cache": ("02_ar_decoder", exercises.check_attend_with_cache),
    "top_p_filter": ("02_ar_decoder", exercises.check_top_p_filter),
    "tokens_per_step": ("03_masked_diffusion", exercises.check_tokens_per_step),
    "commit_most_confident": ("03_masked_diffusion", exercises.check_commit_most_confident),
    "predicted_step_seconds": ("04_roofline", exercises.check_predicted_step_seconds),
    "crossover_width": ("04_roofline", exercises.check_crossover_width),
    "verify_draft": ("06_speculative", exercises.check_verify_draft),
    "acceptance_rate": ("06_speculative", exercises.check_acceptance_rate),
}


def learners_copy(reference):
    """The reference as a learner's own function: the same code, in a namespace of its own outside
    helpers, as a notebook cell defines it (it calls nothing of the course's)."""
    namespace = dict(reference.__globals__, __name__="__main__")
    return types.FunctionType(reference.__code__, namespace, reference.__name__, reference.__defaults__)


def wrapper_of(reference):
    """A learner's one-line function that calls the reference instead of doing the work."""

    def mine(*args, **kwargs):
        return reference(*args, **kwargs)

    return mine


def report_of(check, fn, capsys) -> tuple[bool, str]:
    passed = check(fn)
    return passed, capsys.readouterr().out


@pytest.mark.parametrize("name", CHECKS)
def test_the_reference_passes_quickly(name, capsys):
    _, check = CHECKS[name]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # CPU time of one thread: idle threads spinning on a busy machine do not count
    try:
        start = time.process_time()  # CPU time: a check must be quick even when the machine is busy
        passed, out = report_of(check, learners_copy(getattr(solutions, name)), capsys)
        seconds = time.process_time() - start
    finally:
        torch.set_num_threads(threads)
    assert passed, out
    assert out.startswith(f"✓ {name}: ") and out.count("\n") == 1
    assert re.search(r"\d", out)  # the success report gives a measured number
    assert seconds <= 5, f"{name} took {seconds:.1f} s of CPU time"


@pytest.mark.parametrize("name", CHECKS)
def test_the_reference_itself_is_named_so_run_all_cannot_pass_an_unfilled_stub(name, capsys):
    # After Run All, a later cell's `from helpers.solutions import name` replaces the learner's function
    _, check = CHECKS[name]
    passed, out = report_of(check, getattr(solutions, name), capsys)
    assert passed, out
    assert out.startswith(f"✓ {name}, the reference from helpers.solutions, not yours: ")
    assert "run your own cell again" in out


@pytest.mark.parametrize("name", CHECKS)
def test_an_unfilled_stub_is_not_attempted(name, capsys):
    _, check = CHECKS[name]

    def stub(*args):
        raise NotImplementedError("write this function")

    passed, out = report_of(check, stub, capsys)
    assert not passed
    assert out == f"{name}: not attempted yet: the notebook continues with the reference implementation\n"


@pytest.mark.parametrize("name", CHECKS)
def test_a_crash_in_the_learners_code_is_one_line(name, capsys):
    _, check = CHECKS[name]

    def broken(*args):
        raise ValueError("something went wrong\nsecond line of the message")

    passed, out = report_of(check, broken, capsys)
    assert not passed
    first, hint = out.rstrip("\n").split("\n")
    assert first.startswith(f"✗ {name}: your function raised ValueError: something went wrong (")
    assert "second line" not in out
    assert hint.startswith("  hint: ") and "Traceback" not in out


def test_passing_something_else_than_a_function_is_reported(capsys):
    passed, out = report_of(exercises.check_tokens_per_step, solutions.tokens_per_step(8, 2), capsys)
    assert not passed and "needs the function itself" in out


# ------------------------------------------------------------------ typical wrong attempts
def greedy_sentence(lang, rng):
    prefix = []
    while (token := int(np.argmax(lang.next_token_probs(prefix)))) != lang.eos_id:
        prefix.append(token)
    return prefix


def _typed(lang, rng, pick):
    prefix = []
    while True:
        token = pick(lang.next_token_probs(prefix), rng)
        if token == lang.eos_id:
            return prefix
        prefix.append(token)


def uniform_sentence(lang, rng):  # the probabilities ignored: any allowed token, equally likely
    return _typed(lang, rng, lambda p, rng: int(rng.choice(np.flatnonzero(p))))


def cold_sentence(lang, rng):  # temperature 0.8 instead of the distribution itself
    return _typed(lang, rng, lambda p, rng: int(rng.choice(len(p), p=p**1.25 / (p**1.25).sum())))


def sentence_with_eos(lang, rng):
    return [*solutions.sample_sentence(lang, rng), lang.eos_id]


def last_token_only(lang, rng):  # conditions on the last token, not the whole prefix
    prefix = []
    while True:
        probs = lang.next_token_probs(prefix[-1:])
        token = int(rng.choice(len(probs), p=probs))
        if token == lang.eos_id:
            return prefix
        prefix.append(token)


def global_random_sentence(lang, rng):  # right probabilities, but drawn from np.random instead of rng
    return _typed(lang, rng, lambda p, rng: int(np.random.choice(len(p), p=p)))  # noqa: NPY002


def never_stops(lang, rng):
    prefix = []
    while True:
        probs = lang.next_token_probs(prefix[: lang.eos_id + 11])
        prefix.append(int(rng.choice(len(probs), p=probs)))


def global_loop_sentence(lang, rng):  # the chain rule on the notebook's LANG, not on the lang given
    return _typed(LANG, rng, lambda p, rng: int(rng.choice(len(p), p=p)))


def global_prob(lang, ids):  # the language's own shortcut, on the notebook's LANG
    p = LANG.prob(ids)
    return math.log2(p) if p > 0 else -math.inf


def global_factors(lang, ids):  # the chain rule, right, on the notebook's LANG under another name
    return _log2_chain(SAME_LANGUAGE, ids)


def global_through_a_helper(lang, ids):  # LANG read by a function of its own module it calls
    return _log2_chain_of_lang(ids)


def _log2_chain_of_lang(ids):
    return _log2_chain(LANG, ids)


def own_language(lang, ids):  # the chain rule, right, on a language of its own with LANG's probabilities
    return _log2_chain(_OWN_LANGUAGE, ids)


def _log2_chain(language, ids):
    total = 0.0
    for k, token in enumerate([*ids, language.eos_id]):
        p = language.next_token_probs(ids[:k])[token]
        if p == 0:
            return -math.inf
        total += math.log2(p)
    return total


_OWN_LANGUAGE = copy.copy(LANG)  # not the object LANG: nothing names the notebook's global


def without_eos_factor(lang, ids):
    total = 0.0
    for k, token in enumerate(ids):
        p = lang.next_token_probs(ids[:k])[token]
        if p == 0:
            return -math.inf
        total += math.log2(p)
    return total


def natural_log(lang, ids):
    return solutions.sentence_log2prob(lang, ids) * math.log(2)


def no_early_stop(lang, ids):  # asks for the factor after an impossible prefix
    factors = [lang.next_token_probs(ids[:k])[t] for k, t in enumerate([*ids, lang.eos_id])]
    return sum(math.log2(p) if p > 0 else -math.inf for p in factors)


def probability_not_log(lang, ids):
    return 2 ** solutions.sentence_log2prob(lang, ids)


def _attention(
    q, k_new, v_new, cache_k, cache_v, start, *, write=True, upto=None, mask="causal", scale=True, merge=False
):
    """attend_with_cache with one usual mistake switched on."""
    T = q.size(2)
    if write:
        cache_k[:, :, start : start + T], cache_v[:, :, start : start + T] = k_new, v_new
    S = start + T if upto is None else upto
    k, v = (cache_k[:, :, :S], cache_v[:, :, :S]) if write else (k_new, v_new)
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.size(-1)) if scale else 1.0)
    if mask == "causal":
        scores = scores.masked_fill(torch.arange(k.size(2)) > torch.arange(start, start + T)[:, None], float("-inf"))
    elif mask == "no offset":
        scores = scores.masked_fill(torch.arange(k.size(2)) > torch.arange(T)[:, None], float("-inf"))
    elif mask == "strict":  # hides each position from itself too
        scores = scores.masked_fill(torch.arange(k.size(2)) >= torch.arange(start, start + T)[:, None], float("-inf"))
    out = scores.softmax(dim=-1) @ v
    return out.transpose(1, 2).reshape(q.size(0), T, -1) if merge else out


def cache_not_written(*args):  # attends over the new keys only, the cache left as it was
    return _attention(*args, write=False)


def whole_cache(*args):  # every slot of the cache, written or not
    return _attention(*args, upto=args[3].size(2), mask="none")


def no_mask(*args):
    return _attention(*args, mask="none")


def mask_without_start(*args):
    return _attention(*args, mask="no offset")


def unscaled(*args):
    return _attention(*args, scale=False)


def heads_merged(*args):
    return _attention(*args, merge=True)


def hidden_from_itself(*args):  # j < i: the first position of a prompt sees nothing at all
    return _attention(*args, mask="strict")


def scales_q_in_place(q, k_new, v_new, cache_k, cache_v, start):  # q /= sqrt(hd) divides the caller's q
    q /= math.sqrt(q.size(-1))
    return _attention(q, k_new, v_new, cache_k, cache_v, start, scale=False)


def _sorted_nucleus(drop_rule):
    def top_p(logits, p):
        probs = torch.softmax(logits.double(), dim=-1)
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        drop = drop_rule(sorted_probs.cumsum(-1), sorted_probs, p)
        return logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))

    return top_p


cumulative_includes_itself = _sorted_nucleus(lambda cum, probs, p: cum > p)
strictly_greater_at_the_boundary = _sorted_nucleus(lambda cum, probs, p: cum - probs > p)
ties_split_by_sort_order = _sorted_nucleus(lambda cum, probs, p: cum - probs >= p)


def p_ignored(logits, p):
    return logits.clone()


def filters_in_place(logits, p):
    return logits.masked_fill_(~torch.isfinite(solutions.top_p_filter(logits, p)), float("-inf"))


def remainder_to_the_last_steps(n_tokens, steps):
    base, extra = divmod(n_tokens, steps)
    return [base + (j >= steps - extra) for j in range(steps)]


def remainder_all_at_once(n_tokens, steps):
    base, extra = divmod(n_tokens, steps)
    return [base + extra] + [base] * (steps - 1)


def remainder_dropped(n_tokens, steps):
    return [n_tokens // steps] * steps


def filled_positions_compete(probs, canvas, k, mask_id):
    confidence, choice = probs.max(dim=-1)
    best = confidence.topk(min(k, canvas.size(1)), dim=-1).indices
    return canvas.scatter(1, best, choice.gather(1, best))


def topk_on_ties(probs, canvas, k, mask_id):  # torch.topk does not promise the leftmost on ties
    confidence, choice = probs.max(dim=-1)
    confidence = confidence.masked_fill(canvas != mask_id, -math.inf)
    best = confidence.topk(min(k, canvas.size(1)), dim=-1).indices
    return torch.where(canvas == mask_id, canvas.scatter(1, best, choice.gather(1, best)), canvas)


def _ranked(probs, canvas, k, mask_id, stable=True, in_place=False):
    """One pass ranked by argsort, stable or not, its tokens written into a new canvas or the caller's."""
    confidence, choice = probs.max(dim=-1)
    confidence = confidence.masked_fill(canvas != mask_id, -math.inf)
    rank = confidence.argsort(dim=-1, descending=True, stable=stable).argsort(dim=-1)
    commit = (rank < k) & (canvas == mask_id)
    if not in_place:
        return torch.where(commit, choice, canvas)
    canvas[commit] = choice[commit]
    return canvas


def unstable_sort_on_ties(probs, canvas, k, mask_id):  # argsort without stable=True: ties in any order
    return _ranked(probs, canvas, k, mask_id, stable=False)


def commits_in_place(probs, canvas, k, mask_id):  # writes the tokens into the caller's canvas
    return _ranked(probs, canvas, k, mask_id, in_place=True)


def topk_beyond_the_row(probs, canvas, k, mask_id):  # topk(k) raises when k exceeds the row's length
    confidence, choice = probs.max(dim=-1)
    confidence = confidence.masked_fill(canvas != mask_id, -math.inf)
    best = confidence.argsort(dim=-1, descending=True, stable=True)[:, :k]
    best = confidence.topk(k, dim=-1).indices if k > canvas.size(1) else best
    return torch.where(canvas == mask_id, canvas.scatter(1, best, choice.gather(1, best)), canvas)


def wrong_tokens(probs, canvas, k, mask_id):  # the second most likely token
    second = probs.topk(2, dim=-1).indices[..., 1]
    committed = solutions.commit_most_confident(probs, canvas, k, mask_id) != canvas
    return torch.where(committed, second, canvas)


def k_over_the_batch(probs, canvas, k, mask_id):  # k positions in the whole batch, not per row
    confidence, choice = probs.max(dim=-1)
    flat = confidence.masked_fill(canvas != mask_id, -math.inf).flatten()
    commit = torch.zeros_like(flat, dtype=torch.bool)
    commit[flat.argsort(descending=True, stable=True)[:k]] = True
    commit = commit.view(canvas.shape) & (canvas == mask_id)
    return torch.where(commit, choice, canvas)


def _rule(fix_from=None, bonus_row=-1, accept_all=False):
    def verify_draft(p, q, drafted, generator=None):
        for i, x in enumerate(drafted):
            u = torch.rand((), generator=generator, dtype=torch.float64)
            if accept_all or u < p[i, x] / q[i, x]:
                continue
            fix = (p[i] - q[i]).clamp(min=0) if fix_from is None else fix_from(p, q)[i]
            return [*drafted[:i], int(torch.multinomial(fix / fix.sum(), 1, generator=generator))]
        return [*drafted, int(torch.multinomial(p[bonus_row], 1, generator=generator))]

    return verify_draft


fix_from_p = _rule(fix_from=lambda p, q: p)
residual_backwards = _rule(fix_from=lambda p, q: (q - p[: len(q)]).clamp(min=0))
bonus_from_the_first_row = _rule(bonus_row=0)
every_draft_kept = _rule(accept_all=True)


def no_bonus(p, q, drafted, generator=None):  # every draft accepted, and nothing added
    written = solutions.verify_draft(p, q, drafted, generator)
    return written[:-1] if len(written) == len(drafted) + 1 else written


def ratio_upside_down(p, q, drafted, generator=None):  # kept with probability min(1, q/p)
    for i, x in enumerate(drafted):
        if torch.rand((), generator=generator, dtype=torch.float64) < q[i, x] / p[i, x]:
            continue
        fix = (p[i] - q[i]).clamp(min=0)
        return [*drafted[:i], int(torch.multinomial(fix / fix.sum(), 1, generator=generator))]
    return [*drafted, int(torch.multinomial(p[-1], 1, generator=generator))]


def residual_in_place(p, q, drafted, generator=None):  # the residual computed in the caller's p
    for i, x in enumerate(drafted):
        if torch.rand((), generator=generator, dtype=torch.float64) < p[i, x] / q[i, x]:
            continue
        p[i] -= q[i]
        p[i].clamp_(min=0)
        return [*drafted[:i], int(torch.multinomial(p[i] / p[i].sum(), 1, generator=generator))]
    return [*drafted, int(torch.multinomial(p[-1], 1, generator=generator))]


def minimum_into_p(p, q):  # out=p overwrites the caller's p
    return np.minimum(p, q, out=p).sum(-1)


WRONG = [  # (exercise, attempt, a phrase its report must contain)
    ("sample_sentence", greedy_sentence, "are the same sentence"),
    ("sample_sentence", uniform_sentence, "sampling noise alone gives"),
    ("sample_sentence", cold_sentence, "of your draws; exactly"),
    ("sample_sentence", sentence_with_eos, "stop when you draw it"),
    ("sample_sentence", last_token_only, "has probability 0"),
    ("sample_sentence", never_stops, "stop as soon as you draw lang.eos_id"),
    ("sample_sentence", global_random_sentence, "the same seed typed other sentences"),
    ("sample_sentence", global_loop_sentence, "not the notebook's global LANG"),
    ("sentence_log2prob", without_eos_factor, "a prefix of a sentence is not a sentence"),
    ("sentence_log2prob", natural_log, "natural log"),
    ("sentence_log2prob", no_early_stop, "refuses a prefix that no sentence starts with"),
    ("sentence_log2prob", probability_not_log, "return its log2"),
    ("sentence_log2prob", global_prob, "not the notebook's global LANG"),
    ("sentence_log2prob", global_factors, "not the notebook's global LANG"),
    ("sentence_log2prob", global_through_a_helper, "not the notebook's global LANG"),
    ("sentence_log2prob", own_language, "take every probability from the `lang` your function is given"),
    ("attend_with_cache", cache_not_written, "the cache does not hold the new keys"),
    ("attend_with_cache", whole_cache, "it read cache slots not written yet"),
    ("attend_with_cache", no_mask, "no causal mask within the pass"),
    ("attend_with_cache", mask_without_start, "the mask ignores `start`"),
    ("attend_with_cache", unscaled, "scaling by the head dimension"),
    ("attend_with_cache", heads_merged, "before heads are merged"),
    ("attend_with_cache", hidden_from_itself, "a position may always attend to itself"),
    ("attend_with_cache", scales_q_in_place, "changed its input q"),
    ("top_p_filter", cumulative_includes_itself, "the most likely token is always kept"),
    ("top_p_filter", strictly_greater_at_the_boundary, "(>= p: drop)"),
    ("top_p_filter", ties_split_by_sort_order, "kept or dropped together"),
    ("top_p_filter", p_ignored, "too many"),
    ("top_p_filter", filters_in_place, "changed its input"),
    ("tokens_per_step", remainder_to_the_last_steps, "the remainder goes to the earliest steps"),
    ("tokens_per_step", remainder_all_at_once, "no two steps differ by more than one token"),
    ("tokens_per_step", remainder_dropped, "every token is committed once"),
    ("commit_most_confident", filled_positions_compete, "only masked positions compete"),
    ("commit_most_confident", topk_on_ties, "the leftmost position wins"),
    ("commit_most_confident", wrong_tokens, "most likely token"),
    ("commit_most_confident", topk_beyond_the_row, "k may be larger than a row is long"),
    ("commit_most_confident", k_over_the_batch, "in every row"),
    ("commit_most_confident", unstable_sort_on_ties, "the leftmost position wins"),
    ("commit_most_confident", commits_in_place, "changed its input canvas"),
    ("predicted_step_seconds", lambda w, kv, bw: w / bw, "its bytes count"),
    ("predicted_step_seconds", lambda w, kv, bw: 1e3 * (w + kv) / bw, "return seconds"),
    ("predicted_step_seconds", lambda w, kv, bw: (w + kv) * bw, "a shorter step"),
    ("crossover_width", lambda peak, bw, b: peak * b / bw, "a multiply and an add"),
    ("crossover_width", lambda peak, bw, b: peak / bw, "that is the ridge point"),
    ("crossover_width", lambda peak, bw, b: 2 * bw / (peak * b), "upside down"),
    ("crossover_width", lambda peak, bw, b: peak / (2 * bw * b), "on the wrong side"),
    ("crossover_width", lambda peak, bw, b: round(peak * b / (2 * bw)), "do not round"),
    ("verify_draft", fix_from_p, "not from p"),
    ("verify_draft", bonus_from_the_first_row, "the target's last row"),
    ("verify_draft", every_draft_kept, "every draft is kept"),
    ("verify_draft", no_bonus, "one more token, the bonus"),
    ("verify_draft", ratio_upside_down, "the ratio is upside down"),
    ("verify_draft", residual_backwards, "residual is the wrong way round"),
    ("verify_draft", residual_in_place, "changed its input p"),
    ("acceptance_rate", lambda p, q: 1 - np.minimum(p, q).sum(-1), "the total variation"),
    ("acceptance_rate", lambda p, q: np.minimum(1, p / q).mean(-1), "equally likely to be drafted"),
    ("acceptance_rate", lambda p, q: np.maximum(p, q).sum(-1), "a probability cannot exceed 1"),
    ("acceptance_rate", lambda p, q: np.minimum(p, q).sum(), "the last axis only"),
    ("acceptance_rate", lambda p, q: np.minimum(1, p / q).sum(-1), "as if the drafter always proposed it"),
    ("acceptance_rate", lambda p, q: (p * q).sum(-1), "two independent draws"),
    ("acceptance_rate", minimum_into_p, "changed its input p"),
    ("acceptance_rate", lambda p, q: (q * np.minimum(1, p / q)).sum(-1), "p / q is 0 / 0"),  # nan where both are 0
]


@pytest.mark.parametrize("name, attempt, phrase", WRONG, ids=[f"{n}-{a.__name__}" for n, a, _ in WRONG])
def test_a_wrong_attempt_fails_with_its_hint(name, attempt, phrase, capsys):
    _, check = CHECKS[name]
    passed, out = report_of(check, attempt, capsys)
    assert not passed
    assert out.startswith(f"✗ {name}: ") and "\n  hint: " in out and out.count("\n") == 2, out
    assert phrase in out, out


def test_every_exercise_has_at_least_two_wrong_attempts():
    for name in CHECKS:
        assert sum(n == name for n, _, _ in WRONG) >= 2, name


def test_the_step_check_compares_with_a_measurement(capsys):
    from helpers.decoding.model import gpt2_small_config
    from helpers.roofline.costs import decode_step_cost

    cost = decode_step_cost(gpt2_small_config(), context=512, bytes_per_param=4)
    check = exercises.check_predicted_step_seconds
    assert check(solutions.predicted_step_seconds, cost=cost, bandwidth=17.4e9, measured_s=0.0311)
    assert "30.6 ms against 31.1 ms measured (-2 %)" in capsys.readouterr().out
    # a correct formula is not failed for a machine whose timing is off; the report says so
    assert check(solutions.predicted_step_seconds, cost=cost, bandwidth=34.3e9, measured_s=0.0311)
    assert "more than 30 % off; your formula is right" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name, attempt",
    [
        ("predicted_step_seconds", lambda w, kv, bw: w / bw),
        ("predicted_step_seconds", lambda w, kv, bw: 2 * (w + kv) / bw),
        ("crossover_width", lambda peak, bw, b: peak * b / bw),
        ("crossover_width", lambda peak, bw, b: peak * b / (4 * bw)),
    ],
)
def test_a_roofline_failure_never_prints_the_expected_value(name, attempt, capsys):
    # a learner who sees the answer can match a factor of 2 without deriving it
    from helpers.exercises import roofline

    case = (roofline.STEP_CASES if name == "predicted_step_seconds" else roofline.WIDTH_CASES)[0][1:]
    expected = getattr(solutions, name)(*case)
    passed, out = report_of(CHECKS[name][1], attempt, capsys)
    assert not passed and out.startswith(f"✗ {name}: ")
    scaled = 1e3 * expected if name == "predicted_step_seconds" else expected  # ms; positions
    for shown in {f"{expected:.4g}", f"{expected:.3g}", f"{scaled:.1f}", f"{scaled:.0f}"}:
        assert shown not in out, out


def test_no_alpha_hint_spells_out_the_recipe():
    # "the chance it is drafted times the chance it is kept, added up" is the exercise's answer in words
    from helpers.exercises import speculative as checks

    hints = [checks.ALPHA_HINT, *checks._alpha_mistakes(np.full(2, 0.5), np.full(2, 0.5))]
    recipe = re.compile(r"times the chance|added up over|by q\(x\)|drafted and then kept|the mass p and q", re.I)
    assert [hint for hint in hints if recipe.search(hint)] == []


# ------------------------------------------------------------------ the course's own functions, called
def verify_by_the_course(p, q, drafted, generator=None):
    written, _ = speculative.verify(p, q, torch.tensor(drafted), generator)
    return written.tolist()


def commit_by_the_course(probs, canvas, k, mask_id):
    confidence, choice = probs.max(dim=-1)
    counts = torch.full((canvas.size(0),), k)
    return torch.where(top_counts(confidence.masked_fill(canvas != mask_id, -math.inf), counts), choice, canvas)


def attend_by_the_course(q, k_new, v_new, cache_k, cache_v, start):
    T = q.size(2)
    cache_k[:, :, start : start + T], cache_v[:, :, start : start + T] = k_new, v_new
    padded = torch.cat([torch.zeros_like(cache_k[:, :, :start]), q], dim=2)  # rows for the cached positions too
    return causal_attention(padded, cache_k[:, :, : start + T], cache_v[:, :, : start + T])[:, :, start:]


def _held_in_a_closure():
    course = overlap
    return lambda p, q: course(p, q)


COURSE_WRAPPERS = [  # (exercise, a learner's function that calls the course's, the dotted name reported)
    ("verify_draft", verify_by_the_course, "helpers.speculative.rule.verify"),
    ("acceptance_rate", lambda p, q: overlap(p, q), "helpers.speculative.acceptance.overlap"),
    ("acceptance_rate", _held_in_a_closure(), "helpers.speculative.acceptance.overlap"),
    ("acceptance_rate", overlap, "helpers.speculative.acceptance.overlap"),  # the course's function itself, renamed
    ("tokens_per_step", lambda n, steps: even_split(n, steps), "helpers.diffusion.unmasking.even_split"),
    ("tokens_per_step", functools.partial(even_split), "helpers.diffusion.unmasking.even_split"),
    ("commit_most_confident", commit_by_the_course, "helpers.diffusion.unmasking.top_counts"),
    ("top_p_filter", lambda logits, p: course_top_p(logits, p), "helpers.decoding.ar.top_p_filter"),
    ("top_p_filter", lambda logits, p: filter_logits(logits, top_p=p), "helpers.decoding.ar.filter_logits"),
    ("attend_with_cache", attend_by_the_course, "helpers.exercises.ar_decoding.causal_attention"),
    (
        "predicted_step_seconds",
        lambda w, kv, bw: predicted_time(StepCost(w, kv, 0.0, 0.0), bw, 1.0),
        "helpers.roofline.costs.predicted_time",
    ),
    *[
        (name, wrapper_of(getattr(solutions, name)), f"helpers.solutions.{name}")
        for name in CHECKS
        if name != "top_p_filter"
    ],
    (
        "top_p_filter",
        wrapper_of(solutions.top_p_filter),
        "helpers.decoding.ar.top_p_filter",
    ),  # the reference is the course's
]


@pytest.mark.parametrize("name, wrapper, dotted", COURSE_WRAPPERS, ids=[f"{n}-{d}" for n, _, d in COURSE_WRAPPERS])
def test_a_wrapper_around_the_courses_function_is_named_so(name, wrapper, dotted, capsys):
    _, check = CHECKS[name]
    passed, out = report_of(check, wrapper, capsys)
    assert passed, out
    assert out.startswith(f"✓ {name}, the course's function ({dotted}), not yours: "), out
    assert f"write {name} without it" in out and out.count("\n") == 2


def test_the_courses_functions_are_restored_after_a_check(capsys):
    before = {name: dict(course_functions(name)) for name in COURSE_FUNCTIONS}
    for name, wrapper, _ in COURSE_WRAPPERS[:4]:
        report_of(CHECKS[name][1], wrapper, capsys)
    assert {name: dict(course_functions(name)) for name in COURSE_FUNCTIONS} == before
    assert globals()["overlap"] is before["acceptance_rate"][id(overlap)][0]
    assert COURSE_WRAPPERS[2][1].__closure__[0].cell_contents is overlap


def test_every_exercise_lists_the_courses_functions():
    assert set(COURSE_FUNCTIONS) == set(CHECKS)
    for name in CHECKS:
        assert f"helpers.solutions.{name}" in {dotted for _, dotted in course_functions(name).values()} or (
            name == "top_p_filter"  # helpers.solutions re-exports helpers.decoding.ar's: one object, its first name
        )
    with pytest.raises(ValueError, match="no exercise named"):
        course_functions("sample")


# ------------------------------------------------------------------ the second language of notebook 01
def test_the_second_language_is_the_chain_rule_over_its_factors():
    tokens, probs = LANG.support()
    second = second_language_probs()
    assert second.sum() == pytest.approx(1.0, abs=1e-12) and (second > 0).all()
    assert 0.5 * np.abs(second - probs).sum() > 0.3  # far from LANG: a sampler of LANG cannot pass for it
    language = Reweighted()
    for row in (0, 77, 5_000, len(probs) - 1):
        ids = [int(t) for t in tokens[row, : LANG.sentence_lengths[row]]]
        assert 2 ** solutions.sentence_log2prob(language, ids) == pytest.approx(second[row], rel=1e-12)
    with pytest.raises(ValueError, match="power"):
        Reweighted(power=0)


def test_reading_the_global_lang_is_recognised():
    assert reads_global_lang(global_prob) and reads_global_lang(global_factors)  # by name, and under another
    assert reads_global_lang(global_loop_sentence) and reads_global_lang(global_through_a_helper)
    assert reads_global_lang(functools.partial(lambda lang, ids: LANG.prob(ids)))
    assert not reads_global_lang(solutions.sentence_log2prob) and not reads_global_lang(own_language)


# ------------------------------------------------------------------ the exercises in the notebooks
def cells(notebook: str) -> list[dict]:
    return json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text())["cells"]


@pytest.mark.parametrize("name", CHECKS)
def test_each_exercise_is_a_stub_a_check_and_the_folded_reference(name):
    notebook, _ = CHECKS[name]
    sources = [("".join(c["source"]), c["cell_type"]) for c in cells(notebook)]
    stub = [i for i, (s, kind) in enumerate(sources) if kind == "code" and f"def {name}(" in s]
    assert len(stub) == 1, f"{notebook} needs exactly one stub of {name}"
    stub_source = sources[stub[0]][0]
    assert "raise NotImplementedError" in stub_source and '"""' in stub_source  # a docstring and a placeholder
    check = f"check_{name}({name}"
    check_cell = re.sub(r"\s+", "", sources[stub[0] + 1][0])  # however the formatter wraps the call
    assert check in check_cell, f"the cell after the stub of {name} must run {check}...)"
    folded = [s for s, kind in sources if kind == "markdown" and f"Solution: `{name}`" in s]
    assert len(folded) == 1, f"{notebook} needs one folded solution of {name}"
    code = re.search(r"```python\n(.*?)```", folded[0], re.S).group(1)
    reference = inspect.getsource(getattr(solutions, name))
    assert code.strip() == reference.strip(), f"the folded solution of {name} differs from helpers.solutions"


@pytest.mark.parametrize("notebook", sorted({nb for nb, _ in CHECKS.values()}))
def test_each_notebook_asks_for_a_prediction_first(notebook):
    assert any("**Predict before you run.**" in "".join(c["source"]) for c in cells(notebook))


# ------------------------------------------------------------------ the references, by hand
def test_the_schedule_reference_by_hand():
    assert solutions.tokens_per_step(30, 8) == [4, 4, 4, 4, 4, 4, 3, 3]  # LLaDA's example
    assert solutions.tokens_per_step(3, 5) == [1, 1, 1, 0, 0]


def test_one_pass_reference_by_hand():
    probs = torch.zeros(1, 6, 4, dtype=torch.float64)  # (B, T, V), mask id 3
    probs[..., 0] = 0.5  # every position equally sure of token 0 ...
    probs[..., 1] = 0.5
    probs[0, 4] = torch.tensor([0.1, 0.9, 0.0, 0.0], dtype=torch.float64)  # ... except position 4
    canvas = torch.tensor([[2, 3, 3, 3, 3, 3]])  # position 0 is filled
    assert solutions.commit_most_confident(probs, canvas, 2, 3).tolist() == [[2, 0, 3, 3, 1, 3]]
    assert solutions.commit_most_confident(probs, canvas, 9, 3).tolist() == [[2, 0, 0, 0, 1, 0]]


def test_the_chain_rule_references_by_hand():
    from helpers.language.toylang import LANG
    from helpers.widgets import typewriter_trace

    ids = LANG.encode("the small cat near the dogs sleeps .")
    assert solutions.sentence_log2prob(LANG, ids) == pytest.approx(math.log2(3.402e-05), abs=1e-9)
    assert solutions.sentence_log2prob(LANG, LANG.encode("the cat sleeps")) == -math.inf
    assert solutions.sample_sentence(LANG, np.random.default_rng(2)) == typewriter_trace(2)[-1].prefix


def test_the_roofline_references_by_hand():
    assert solutions.predicted_step_seconds(494.6e6, 37.7e6, 17.4e9) == pytest.approx(0.030592, rel=1e-4)
    assert solutions.crossover_width(989e12, 3.35e12, 2) == pytest.approx(295.2, rel=1e-3)
