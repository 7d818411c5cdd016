"""Is the course's decoder a fair baseline? Race it against Hugging Face `generate`.

Both decoders get GPT-2 small's shape (124M parameters, fp32) and the *same random weights*,
decode greedily 64 new tokens after an 8-token prompt at batch 1 on the CPU, and are timed
alternately so both see the same machine conditions; medians are compared. In the same run we
measure a single large GEMV and a STREAM triad, to put the decode loop's achieved bandwidth
(bytes a step reads / time per step) in context; the decode step and the GEMV are timed
alternately, so that slow spells of the machine hit both.

    pip install transformers==5.23.0        # only for this measurement, not a course dependency
    python -m helpers.hf_compare --out data/hf_compare.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from helpers.decoding.ar import generate
from helpers.decoding.model import Transformer, decode_layout, gpt2_small_config
from helpers.measure.machine import default_array_bytes, machine_summary
from helpers.measure.timing import DEFAULT_GEMV_COLS, linear_bytes, stream_bandwidth
from helpers.roofline.costs import decode_step_cost
from helpers.roofline.fixtures import prefilled_cache

PROMPT_TOKENS, NEW_TOKENS = 8, 64


def hf_twin(model: Transformer):
    """A Hugging Face GPT2LMHeadModel with exactly our model's shape and weights."""
    from transformers import GPT2Config, GPT2LMHeadModel

    c = model.config
    hf = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=c.vocab_size,
            n_positions=c.max_len,
            n_embd=c.d_model,
            n_layer=c.n_layer,
            n_head=c.n_head,
            bos_token_id=None,
            eos_token_id=None,
        )
    ).eval()
    ours = model.state_dict()
    mapping = {"wte.weight": "tok_emb.weight", "wpe.weight": "pos_emb.weight", "ln_f.weight": "ln_f.weight"}
    mapping["ln_f.bias"] = "ln_f.bias"
    for i in range(c.n_layer):
        for hf_name, our_name in [
            ("ln_1", "ln1"),
            ("ln_2", "ln2"),
            ("attn.c_attn", "attn.qkv"),
            ("attn.c_proj", "attn.proj"),
            ("mlp.c_fc", "mlp.up"),
            ("mlp.c_proj", "mlp.down"),
        ]:
            for p in ("weight", "bias"):
                mapping[f"h.{i}.{hf_name}.{p}"] = f"blocks.{i}.{our_name}.{p}"
    with torch.no_grad():
        for hf_name, our_name in mapping.items():
            target = hf.transformer.get_parameter(hf_name)
            value = ours[our_name]
            if "c_" in hf_name and hf_name.endswith("weight"):  # HF's Conv1D stores (in, out)
                value = value.t()
            target.copy_(value)
    return hf


def time_once(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@torch.inference_mode()
def step_and_gemv_seconds(model: Transformer, context: int, repeat: int = 25) -> tuple[float, float, float]:
    """Median seconds of one cached decode step (at `context`) and of one large GEMV, timed
    alternately so that both see the same machine conditions. Returns (step s, GEMV s, GEMV bytes)."""
    cache, token = prefilled_cache(model, context, batch=1, seed=0)
    n_cols = DEFAULT_GEMV_COLS
    n_rows = default_array_bytes() // (n_cols * 4)  # W fills >= 4x the last-level cache
    W = decode_layout(torch.rand(n_rows, n_cols))  # (n_rows, n_cols), stored as the model's weights are
    x = torch.rand(1, n_cols)  # (1, n_cols)

    def step():
        cache.length = context
        return model(token, cache=cache, last_only=True)

    steps, gemvs = [], []
    for i in range(repeat + 3):  # the first 3 rounds warm up
        s, g = time_once(step), time_once(lambda: F.linear(x, W))
        if i >= 3:
            steps.append(s)
            gemvs.append(g)
    return float(np.median(steps)), float(np.median(gemvs)), linear_bytes(n_rows, n_cols, 1, 4)


def compare(repeat: int = 7, seed: int = 0) -> dict:
    torch.manual_seed(seed)
    ours = Transformer(gpt2_small_config()).eval()
    hf = hf_twin(ours)
    ours.decode_layout_()  # the layout every course model decodes with (Transformer.decode_layout_)
    prompt = torch.randint(0, ours.config.vocab_size, (1, PROMPT_TOKENS))

    def run_ours():
        return generate(ours, prompt, NEW_TOKENS, temperature=0)

    def run_hf():
        with torch.inference_mode():
            return hf.generate(
                prompt, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0
            )

    identical = torch.equal(run_ours(), run_hf())  # also the warm-up run of each
    ours_s, hf_s = [], []
    for _ in range(repeat):  # alternate, so slow spells of the machine hit both
        ours_s.append(time_once(run_ours))
        hf_s.append(time_once(run_hf))
    ours_tps, hf_tps = NEW_TOKENS / np.median(ours_s), NEW_TOKENS / np.median(hf_s)

    context = PROMPT_TOKENS + NEW_TOKENS // 2  # the average context of the run
    step_s, gemv_s, gemv_bytes = step_and_gemv_seconds(ours, context)
    step_bytes = decode_step_cost(ours.config, context=context, bytes_per_param=4).total_bytes
    triad = stream_bandwidth("triad")
    return {
        "command": "python -m helpers.hf_compare --out data/hf_compare.json",
        "machine": machine_summary(),
        "transformers": __import__("transformers").__version__,
        "shape": "GPT-2 small (124M), fp32, batch 1, greedy, 8-token prompt + 64 new tokens",
        "identical_tokens": identical,
        "course_tokens_per_s": round(float(ours_tps), 2),
        "hf_tokens_per_s": round(float(hf_tps), 2),
        "speedup": round(float(ours_tps / hf_tps), 3),
        "course_seconds": [round(s, 4) for s in ours_s],
        "hf_seconds": [round(s, 4) for s in hf_s],
        "decode_step_ms": round(1e3 * step_s, 3),
        "decode_step_bytes": int(step_bytes),
        "decode_gb_s": round(step_bytes / step_s / 1e9, 2),
        "gemv_gb_s": round(gemv_bytes / gemv_s / 1e9, 2),
        "gemv_shape": f"{DEFAULT_GEMV_COLS} inputs, {gemv_bytes / 2**20:.0f} MiB of float32 weights",
        "triad_gb_s": round(triad.value, 2),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="timed runs of each decoder")
    parser.add_argument("--out", default=None, help="write the result as JSON here")
    args = parser.parse_args(argv)
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise SystemExit("this comparison needs Hugging Face transformers: pip install transformers==5.23.0") from None
    result = compare(repeat=args.repeat)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
