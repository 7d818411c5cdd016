import math

import numpy as np
import pytest
import torch

from helpers.decoding.model import ModelConfig, Transformer
from helpers.language.toylang import LANG
from helpers.train import (
    KINDS,
    TrainConfig,
    ar_loss,
    check_kind,
    held_out_documents,
    learning_rate,
    model_config,
    train,
)


def test_model_config_differs_between_kinds_only_in_causal():
    ar, mdlm = model_config("ar"), model_config("mdlm")
    assert ar.causal and not mdlm.causal
    assert ar.vocab_size == len(LANG.vocab) and ar.max_len == 33
    assert {**vars(ar), "causal": False} == vars(mdlm)


def test_learning_rate_warms_up_linearly_then_decays_to_the_floor():
    cfg = TrainConfig(steps=1000, warmup=100, lr=1e-3, min_lr_ratio=0.1)
    assert learning_rate(0, cfg) == pytest.approx(1e-5)
    assert learning_rate(49, cfg) == pytest.approx(5e-4)
    assert learning_rate(100, cfg) == pytest.approx(1e-3)  # the peak, at the end of warm-up
    assert learning_rate(550, cfg) == pytest.approx(1e-3 * (0.1 + 0.9 * 0.5))  # half way down the cosine
    assert learning_rate(1000, cfg) == pytest.approx(1e-4)
    rates = [learning_rate(s, cfg) for s in range(100, 1000)]
    assert all(a >= b for a, b in zip(rates, rates[1:], strict=False))


def test_ar_loss_is_the_next_token_cross_entropy():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=len(LANG.vocab), max_len=8, d_model=16, n_layer=1, n_head=2))
    docs = torch.from_numpy(LANG.sample_documents(4, 9, seed=0))
    logits = model(docs[:, :-1])
    expected = -torch.log_softmax(logits, -1).gather(-1, docs[:, 1:, None]).mean()
    assert ar_loss(model, docs).item() == pytest.approx(expected.item(), rel=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_a_short_training_run_is_reproducible_and_lowers_the_loss(kind):
    cfg = TrainConfig(steps=30, batch_size=16, doc_length=9, lr=3e-3, warmup=5, seed=1)
    small = dict(d_model=16, n_layer=1, n_head=2)

    def fresh():
        torch.manual_seed(0)
        return Transformer(model_config(kind, 9, **small))

    runs = [train(kind, cfg, fresh(), progress=False) for _ in range(2)]
    (model, losses), (_, again) = runs
    assert losses.shape == (30,) and np.array_equal(losses, again)
    assert losses[-5:].mean() < losses[:5].mean()
    assert not model.training


def test_held_out_documents_are_fixed():
    assert torch.equal(held_out_documents(4, 12), held_out_documents(4, 12))
    assert held_out_documents(4, 12).shape == (4, 12)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: TrainConfig(steps=0), r"TrainConfig\.steps must be an int >= 1, got 0"),
        (lambda: TrainConfig(steps=True), r"TrainConfig\.steps must be an int >= 1, got True"),
        (lambda: TrainConfig(batch_size=8.0), r"TrainConfig\.batch_size must be an int >= 1, got 8\.0"),
        (lambda: TrainConfig(doc_length=1), r"TrainConfig\.doc_length .* must be an int >= 2, got 1"),
        (lambda: TrainConfig(lr=float("nan")), r"TrainConfig\.lr must be a finite number > 0, got nan"),
        (lambda: TrainConfig(lr=0), r"TrainConfig\.lr must be a finite number > 0, got 0"),
        (lambda: TrainConfig(warmup=-1), r"TrainConfig\.warmup must be an int >= 0, got -1"),
        (lambda: TrainConfig(min_lr_ratio=1.5), r"TrainConfig\.min_lr_ratio must be a number in \[0, 1\]"),
        (lambda: TrainConfig(weight_decay=-0.1), r"TrainConfig\.weight_decay must be a finite number >= 0"),
        (lambda: TrainConfig(grad_clip=float("inf")), r"TrainConfig\.grad_clip must be a finite number > 0"),
        (lambda: TrainConfig(seed=-1), r"TrainConfig\.seed must be an int >= 0, got -1"),
        (lambda: check_kind("gpt"), r"kind must be one of \('ar', 'mdlm'\), got 'gpt'"),
        (lambda: check_kind(["ar"]), r"kind must be one of \('ar', 'mdlm'\), got \['ar'\]"),
        (lambda: model_config("ar", doc_length=1), r"doc_length .* must be an int >= 2, got 1"),
        (lambda: model_config("ar", doc_length=True), r"doc_length .* must be an int >= 2, got True"),
        (lambda: learning_rate(-1, TrainConfig()), r"step must be an int >= 0, got -1"),
        (lambda: learning_rate(1.5, TrainConfig()), r"step must be an int >= 0, got 1\.5"),
        (lambda: learning_rate(1, {}), r"cfg must be a TrainConfig"),
        (lambda: train("ar", cfg={}), r"cfg must be None or a TrainConfig"),
        (lambda: train("ar", model="model"), r"model must be None or a helpers\.decoding\.model\.Transformer"),
        (
            lambda: train("mdlm", TrainConfig(steps=1), Transformer(model_config("ar"))),
            r"kind 'mdlm' needs causal=False",
        ),
        (lambda: held_out_documents(2, 1), r"document length must be an int >= 2, got 1"),
        (lambda: held_out_documents(-1), r"n \(the number of documents\) must be an int >= 0, got -1"),
    ],
)
def test_bad_arguments_name_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_defaults_are_the_shipped_budget():
    cfg = TrainConfig()
    assert (cfg.steps, cfg.batch_size, cfg.doc_length, cfg.seed) == (6000, 128, 33, 0)
    assert math.isclose(learning_rate(cfg.warmup, cfg), cfg.lr)
