"""The code the notebooks of *Typewriter and Editor* share, one idea per module.

toylang      the toy language: an exact, enumerable distribution over sentences; grammar (its rules)
             and documents (sentences packed into the models' 33-position documents)
model        the transformer (causal or bidirectional), its KV cache and the pass counter
fixtures     models with random weights in the course's and GPT-2's shapes, for timing
ar           autoregressive decoding: naive and KV-cached loops, sampling controls
diffusion    masked diffusion: the ELBO loss and the samplers (LLaDA, Fast-dLLM, MDLM, ReMDM);
             unmasking: the rules of one step (what a pass commits, what ReMDM re-masks);
             exact_denoiser: the language's exact conditionals for any canvas, a perfect "model"
train        one training loop for both kinds; `python -m helpers.train ar|mdlm`; train_config
checkpoints  the shipped checkpoints in data/, checked against their sha256
measurement  honest timing (warm-up, medians, IQR); machine: caches and memory of this machine;
             gpu: CUDA events, graphs and the L2 flush, timing as Triton's do_bench
timing       this machine's bandwidth (STREAM, GEMV) and FLOP/s
roofline     the roofline model and its plot
costs        what a forward pass reads and computes; ceiling and typical efficiency; memory;
             shapes: the model shapes (GPT-2, Llama, Qwen, LLaDA) the costs are computed for
hardware     the device table (data/hardware.csv)
latency      AR and diffusion latency of N tokens, from the cost of every pass
calibration  published decoding speeds next to the projections of the same setting
quality      a sampler's documents scored exactly: validity, length, diversity within sentences
matched_quality  the sweep of every sampler setting, documents kept; `python -m helpers.matched_quality`;
             matching: tokens per pass at the AR model's quality, on every measure; exact_sweep:
             the same sweep on the exact denoiser, `python -m helpers.exact_sweep`; error_sources:
             a shortfall split into the model's error, the factorization's and the selection's
speculative  speculative decoding: the rule, exact for any drafter, with the KV cache cropped;
             drafters (a small AR model, the language, the diffusion model); acceptance: alpha
             predicted exactly; speculative_sweep: `python -m helpers.speculative_sweep`;
             speculative_cost: where a decoder's time goes on the CPU (time_split), and GPU projections
bench        (a package) `python -m helpers.bench`: this machine and the course's decoders, measured
precision    the decode step with fp32, bf16 and int8 weights, timed in turn
hf_compare   the course decoder against Hugging Face `generate` (needs transformers)
exercises    (a package) the checks of the notebooks' exercises; solutions: their references
             student_copy: the notebooks without the solutions, `python -m helpers.student_copy OUT`
validation   the argument checks every module shares
plotting     one figure style; widgets (a package, one module per notebook): the interactive
             figures; canvas_figure: a diffusion canvas pass by pass; device: CUDA -> MPS -> CPU
"""

from pathlib import Path as _Path

INSTALL = "python3.11 -m venv .venv && .venv/bin/pip install -r requirements.txt"  # the README's set-up
COURSE_ROOT = _Path(__file__).resolve().parent.parent  # notebooks/, data/ and helpers/ side by side

if not (COURSE_ROOT / "data" / "manifest.json").is_file():  # a wheel or a copy without the course around it
    raise ImportError(
        f"helpers runs only from the course's own folder, installed editable, because it reads the course's "
        f"data/ (checkpoints, sweeps, hardware table) beside it; {COURSE_ROOT} has no data/manifest.json. From the "
        f"course's root, run the README's command: {INSTALL}"
    )
