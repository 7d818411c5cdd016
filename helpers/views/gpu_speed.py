"""Notebook 05, sections 3 and 4 and a Going deeper: the toy language's matched rates, the latency
budgets at matched quality, the matched-quality chart, the agent rounds, and your GPU or the
reference runs (sections 1 and 2 are in views.gpus and views.pass_ratio). Presentation only: the
latencies come from helpers.projection.latency through the arguments passed in; toy_rates reads notebook 03's
sweeps with helpers.quality.matching; your_gpu_text runs helpers.bench's own measurements."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from helpers.bench import reference_summary
from helpers.common.plotting import AR_COLOR, DLLM_COLOR, new_figure
from helpers.common.validation import check_int, check_positive
from helpers.quality.error_sources import curve
from helpers.quality.matched_quality import LENGTH, Sweep
from helpers.quality.matching import MEASURES, AtQuality, target_from, tokens_per_pass_at
from helpers.roofline.costs import CEILING, efficiency_label
from helpers.widgets import readable_log_ticks

# ----------------------------------------------------------------------------- section 3: matched quality

VALIDITY_SAMPLER = "threshold (Fast-dLLM)"  # the trained sampler matched on validity alone (Going deeper)


@dataclass(frozen=True)
class ToyRates:
    """What notebook 03's sweeps allow at the AR model's quality (helpers.quality.matching, its defaults)."""

    matched: int  # trained samplers that match the AR model on all three measures at some rate
    samplers: int  # trained samplers in the sweep
    limit: float  # the most tokens per pass any sampler reaches with the exact conditionals, all three measures
    validity: AtQuality  # the trained threshold sampler matched on validity alone
    best_valid_fast: float  # the highest share of valid documents at 4 or more tokens per pass, trained model
    validity_asked: float = 0.99  # the validity notebook 03's matching rule asks for (a convention)

    def text(self) -> str:
        """All three lines, for Going deeper: the rate on all three measures, on validity alone, and
        the best validity at 4 or more tokens per pass."""
        return "\n".join(
            [
                f"all three measures: at most {self.limit:.2f} tokens per pass, with the exact conditionals (trained "
                f"model: {self.matched} of notebook 03's {self.samplers} strategies match)",
                f"validity alone (at least {100 * self.validity_asked:g} % of documents valid), trained model: "
                f"{self.validity.range_text} tokens per pass",
                f"4 or more tokens per pass, trained model: at most {100 * self.best_valid_fast:.1f} % of documents "
                "valid (any strategy)",
            ]
        )

    def core_text(self) -> str:
        """Two lines, for the core: the rate at the AR model's quality on all three measures (and that
        only the exact conditionals reach it, if so), and the best validity at 4 or more tokens per pass."""
        trained = (
            "no trained sampler matches it"
            if self.matched == 0
            else f"{self.matched} of {self.samplers} trained samplers match it"
        )
        return "\n".join(
            [
                f"the AR model's quality on all three measures: up to {self.limit:.2f} tokens per pass, with the exact "
                f"conditionals ({trained})",
                f"at 4 or more tokens per pass, the trained model keeps at most {100 * self.best_valid_fast:.1f} % of "
                "documents valid",
            ]
        )


def toy_rates(sweep, exact) -> ToyRates:
    """The tokens per pass at which notebook 03's samplers match the AR model: sweep, the trained
    model's (helpers.quality.matched_quality.load_sweep()); exact, the exact denoiser's
    (helpers.quality.exact_sweep.load_exact_sweep())."""
    if not isinstance(sweep, Sweep) or not isinstance(exact, Sweep):
        raise ValueError("sweep and exact must be the Sweeps of load_sweep() and load_exact_sweep()")
    target = target_from(sweep.ar)
    rates = [tokens_per_pass_at(runs, sweep.ar, target, MEASURES).tokens_per_pass for runs in sweep.runs.values()]
    limits = [tokens_per_pass_at(curve(exact, name), sweep.ar, target).tokens_per_pass for name in exact.runs]
    if all(r is None for r in limits):
        raise ValueError("no sampler of the exact sweep matches the AR model: no limit to report")
    fast = [run.scores.valid.mean() for runs in sweep.runs.values() for run in runs if LENGTH / run.passes.mean() >= 4]
    return ToyRates(
        matched=sum(r is not None for r in rates),
        samplers=len(rates),
        limit=max(r for r in limits if r is not None),
        validity=tokens_per_pass_at(sweep.runs[VALIDITY_SAMPLER], sweep.ar, target, ("validity",)),
        best_valid_fast=float(max(fast)),
        validity_asked=target.validity,
    )


def budget_label(budget) -> str:
    """How a pass budget reads in a figure: a string as it is, a rate as 'x tokens/pass' (two decimals
    at most, as the tables print it: 1.08845 reads 1.09)."""
    if isinstance(budget, str):
        return budget
    return f"{round(check_positive(budget, 'budget (tokens per pass)'), 2):g} tokens/pass"


def budget_table(ar_seconds, dllm_seconds, budgets: dict, n: int = 1000, n_long: int = 4096) -> str:
    """AR and dLLM seconds for N tokens under each pass budget, typical, and the AR / dLLM ratio,
    typical and at the ceiling, and typical at a longer N (budget_summary without the last two).
    ar_seconds(n, **effs), dllm_seconds(n, budget, **effs) as in draw_matched_quality; budgets:
    {label: budget}."""
    if not callable(ar_seconds) or not callable(dllm_seconds):
        raise ValueError("ar_seconds and dllm_seconds must be callables returning seconds for N tokens")
    if not isinstance(budgets, dict) or not budgets:
        raise ValueError(f"budgets must be a non-empty dict {{label: budget}}, got {budgets!r:.80}")
    n, n_long = check_int(n, "n", 1), check_int(n_long, "n_long", 1)
    width = max(len(str(label)) for label in budgets)
    lines = [
        f"projected, N = {n}: seconds (typical) and AR / dLLM latency ratio, typical, at the ceiling, and typical "
        f"at N = {n_long} (above 1: the dLLM is faster)",
        f"{'pass budget':{width}s} {'AR (s)':>7s} {'dLLM (s)':>9s} {'typical':>8s} {'ceiling':>8s} "
        f"{f'N = {n_long}':>9s}",
    ]
    ar, ar_c, ar_long = ar_seconds(n), ar_seconds(n, **CEILING), ar_seconds(n_long)
    for label, budget in budgets.items():
        d, d_c, d_long = dllm_seconds(n, budget), dllm_seconds(n, budget, **CEILING), dllm_seconds(n_long, budget)
        lines.append(f"{label:{width}s} {ar:7.2f} {d:9.2f} {ar / d:7.2f}x {ar_c / d_c:7.2f}x {ar_long / d_long:8.2f}x")
    return "\n".join(lines)


def budget_summary(ar_seconds, dllm_seconds, budgets: dict, n: int = 1000) -> str:
    """budget_table's first columns only, for the core: AR's seconds for N tokens once, in the title,
    then the dLLM's seconds under each pass budget and AR / dLLM, all typical. ar_seconds(n),
    dllm_seconds(n, budget) as in draw_matched_quality."""
    if not callable(ar_seconds) or not callable(dllm_seconds):
        raise ValueError("ar_seconds and dllm_seconds must be callables returning seconds for N tokens")
    if not isinstance(budgets, dict) or not budgets:
        raise ValueError(f"budgets must be a non-empty dict {{label: budget}}, got {budgets!r:.80}")
    n = check_int(n, "n", 1)
    width = max(len(str(label)) for label in budgets)
    ar = ar_seconds(n)
    lines = [
        f"projected, typical, N = {n}: AR takes {ar:.2f} s (AR / dLLM above 1: the dLLM is faster)",
        f"{'pass budget':{width}s} {'dLLM (s)':>9s} {'AR / dLLM':>10s}",
    ]
    for label, budget in budgets.items():
        d = dllm_seconds(n, budget)
        lines.append(f"{label:{width}s} {d:9.2f} {ar / d:9.2f}x")
    return "\n".join(lines)


def draw_matched_quality(ar_seconds, dllm_seconds, panels, lengths=None, device: str = "an H100") -> Figure:
    """Latency against N, one panel per pass budget: AR (red, filled circles drawn on top) and the
    dLLM (blue, hollow squares, so that an AR point they meet stays visible), typical solid, the
    ceiling dotted in the same colour. A panel with two budgets shades the band between them
    and labels each edge; a panel with none says that no rate matches.

    ar_seconds(n, **effs) and dllm_seconds(n, budget, **effs): seconds for N tokens (effs: the
    efficiencies, e.g. helpers.roofline.costs.CEILING); panels: [(title, [budget, ...])] with at most two
    budgets each; lengths: the N drawn (default 32 ... 4096)."""
    if not callable(ar_seconds) or not callable(dllm_seconds):
        raise ValueError("ar_seconds and dllm_seconds must be callables returning seconds for N tokens")
    if not isinstance(panels, list | tuple) or not panels:
        raise ValueError(f"panels must be a non-empty list of (title, [budgets]), got {panels!r:.80}")
    for panel in panels:
        if not isinstance(panel, tuple | list) or len(panel) != 2 or not isinstance(panel[1], list | tuple):
            raise ValueError(f"each panel must be (title, [budgets]), got {panel!r:.80}")
        if len(panel[1]) > 2:
            raise ValueError(f"a panel draws at most two budgets (a band), got {len(panel[1])} in {panel[0]!r}")
    lengths = 2 ** np.arange(5, 13) if lengths is None else np.asarray(lengths)
    if lengths.ndim != 1 or len(lengths) < 2 or np.any(np.diff(lengths) <= 0) or lengths[0] < 1:
        raise ValueError(f"lengths must be an increasing list of N >= 1, got {lengths!r}")

    def curve(f, *args):
        return [np.array([f(int(n), *args, **effs) for n in lengths]) for effs in ({}, CEILING)]

    fig, axes = new_figure(ncols=len(panels), figsize=(11, 4.3), sharey=True)
    axes = np.atleast_1d(axes)
    ar_typ, ar_ceil = curve(ar_seconds)
    for ax, (title, budgets) in zip(axes, panels, strict=True):
        ax.plot(lengths, ar_typ, "o-", color=AR_COLOR, ms=3.5, zorder=4)
        ax.plot(lengths, ar_ceil, ":", color=AR_COLOR, lw=1.3)
        typ = []
        for budget in budgets:
            t, c = curve(dllm_seconds, budget)
            ax.plot(lengths, t, "s-", color=DLLM_COLOR, ms=6, mfc="white", mew=1.2, zorder=3)
            ax.plot(lengths, c, ":", color=DLLM_COLOR, lw=1.3)
            typ.append(t)
        if len(typ) == 2:
            ax.fill_between(lengths, typ[0], typ[1], color=DLLM_COLOR, alpha=0.15)
        for budget, t in zip(budgets, typ, strict=True):  # inside the axes, left of the first point and its lines
            ax.annotate(
                budget_label(budget).replace(" tokens/pass", "\ntokens/pass"), (lengths[0], t[0]), xytext=(-9, 0),
                textcoords="offset points", ha="right", va="center", fontsize=8, color=DLLM_COLOR, linespacing=1.0,
            )  # fmt: skip
        if not budgets:
            text = "no diffusion setting matches\nthe AR model on validity,\nlength and diversity:\nno rate to plot"
            ax.text(0.55, 0.04, text, transform=ax.transAxes, ha="center", va="bottom", fontsize=9, color=DLLM_COLOR)
        ax.set(xscale="log", yscale="log", xlabel="tokens generated, N")
        ax.set_xlim(lengths[0] / 7, lengths[-1] * 1.3)  # room for the labels left of the first point
        ax.set_xticks(lengths[::2], [str(n) for n in lengths[::2]])
        ax.set_xticks([], minor=True)
        readable_log_ticks(ax.yaxis)
        ax.set_title(title, loc="left", fontsize=9)
    axes[0].set_ylabel(f"projected latency on {device} (s)")
    handles = [
        axes[0].plot([], [], "o-", color=AR_COLOR, ms=3.5, label="AR, Llama-3-8B, typical")[0],
        axes[0].plot([], [], ":", color=AR_COLOR, lw=1.3, label="AR, ceiling (100 % of datasheet)")[0],
        axes[0].plot([], [], "s-", color=DLLM_COLOR, ms=6, mfc="white", mew=1.2, label="dLLM, LLaDA-8B, typical")[0],
        axes[0].plot([], [], ":", color=DLLM_COLOR, lw=1.3, label="dLLM, ceiling (100 % of datasheet)")[0],
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8.5)
    fig.suptitle(f"projection. solid: {efficiency_label()}; dotted: ceiling", x=0.01, ha="left", fontsize=9)
    return fig


# ----------------------------------------------------------------------------- section 4: agents


def agents_table(
    per_round: dict, rounds: int, title: str = "projection, typical efficiency", show_per_round: bool = True
) -> str:
    """Seconds for the whole task (rounds x per round) of each decoder, and per round unless
    show_per_round is False, under `title`."""
    rounds = check_int(rounds, "rounds", 1)
    if not isinstance(title, str):
        raise ValueError(f"title must be a str, got {title!r}")
    if not isinstance(show_per_round, bool):
        raise ValueError(f"show_per_round must be True or False, got {show_per_round!r}")
    if not isinstance(per_round, dict) or not per_round:
        raise ValueError(f"per_round must be a non-empty dict {{decoder: seconds per round}}, got {per_round!r:.80}")
    width = max(40, max(len(str(k)) for k in per_round))
    head = f"{'per round':>10s} " if show_per_round else ""
    lines = [title, f"{'decoder':{width}s} {head}{f'{rounds} rounds':>11s}"]
    for name, seconds in per_round.items():
        seconds = check_positive(seconds, f"the seconds of {name!r}")
        each = f"{seconds:9.2f}s " if show_per_round else ""
        lines.append(f"{name:{width}s} {each}{rounds * seconds:10.1f}s")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- Going deeper: your GPU, reference runs


def your_gpu_text(device, folder) -> str:
    """On a GPU (a torch.device of type cuda or mps): what `python -m helpers.bench` measures, quickly:
    the roofs, then the decode step of the tiny model and notebook 05's shapes, eager and (CUDA only)
    as one CUDA graph, with MBU; summarised. On the CPU: no measurement and no CUDA call, but the
    reference runs shipped in `folder` (reference_text)."""
    import torch

    if not isinstance(device, torch.device):
        raise ValueError(f"device must be a torch.device (helpers.common.device.pick_device()), got {device!r}")
    if device.type == "cpu":
        return "No GPU here: nothing is measured on one (and CUDA is never called).\n" + reference_text(folder)
    from helpers.bench import QUICK, as_json, eager_and_graph, gpu_shapes, measure_machine
    from helpers.measure.machine import machine_summary

    roofs = measure_machine(device, settings=QUICK)
    runs = eager_and_graph(device, list(gpu_shapes()), roofs=roofs, repeat=20)
    result = {
        "command": "notebook 05, Going deeper: your GPU, measured",
        "machine": machine_summary(device),
        "roofs": as_json(roofs),
    }
    result |= {"decode": as_json(runs[1].step), "graphs": [as_json(run) for run in runs]}  # [1]: GPT-2 small
    return reference_summary(result)


def reference_text(folder) -> str:
    """The reference GPU runs shipped in `folder` (data/bench_*.json, the bench.json of
    `python -m helpers.bench.reference`), each summarised, or a note that there are none."""
    folder = Path(folder) if isinstance(folder, str | Path) else None
    if folder is None or not folder.is_dir():
        raise ValueError("folder must be an existing directory such as the course's data/ folder")
    paths = sorted(folder.glob("bench_*.json"))
    if not paths:
        return (
            "No reference measurements (data/bench_*.json) are shipped with the course (README: Measuring a GPU):\n"
            "every GPU number here is a projection from data/hardware.csv, a published measurement or an assumption."
        )
    return "\n".join(f"{p.name}:\n{reference_summary(json.loads(p.read_text()))}" for p in paths)
