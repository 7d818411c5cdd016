"""The code the notebooks of *Typewriter and Editor* share, in the order of the course's argument.
Each stage is a package that imports only the stages above it (pyproject.toml's import-linter
contract, kept by tests/test_layers.py); its __init__ re-exports what the notebooks use.

common       argument checks (validation), one figure style (plotting), a device (device)
language     the exact language: grammar, documents, toylang (every probability known)
decoding     the typewriter: the transformer and its KV cache (model), AR decoding (ar), the shipped
             checkpoints (checkpoints) and their training settings (train_config)
diffusion    the editor: the loss and the sampler (sampler), the unmasking rules (unmasking), the
             language's exact conditionals, a perfect model (exact_denoiser)
quality      quality measured exactly: scores, the sweeps (matched_quality, exact_sweep; each a
             `python -m` command), matching at the AR model's quality, error_sources (the split)
measure      the machine: honest timing (measurement), bandwidth and FLOP/s (timing), caches and the
             device's name (machine), CUDA events and graphs (gpu, nvidia_smi, capture_safety)
roofline     what a pass reads and computes (costs, shapes), the device table (hardware), the bound
             (attainable), random-weight models for timing (fixtures)
projection   GPUs, projected: latency of N tokens (latency), published speeds beside it (calibration)
speculative  the way out: the rule (rule), drafters, acceptance, its sweep (sweep) and cost (cost)

Presentation and tools, which may import any stage:
views, widgets  the notebooks' printed tables and figures, and their interactive figures
exercises       the checks of the notebooks' exercises; solutions: their references
bench           `python -m helpers.bench`: this machine and the course's decoders measured (precision
                among them: the decode step in fp32, bf16 and int8)
train           one training loop for both kinds: `python -m helpers.train ar|mdlm`
student_copy    the notebooks without their solutions: `python -m helpers.student_copy OUT`
hf_compare      the course's decoder against Hugging Face `generate` (needs transformers)

To add an unmasking rule: one entry of RULES in helpers/diffusion/unmasking.py (its name and score),
which the sampler, its error messages and the exact sweep's ranking rules read; then its settings in
the sweep's table of samplers (SAMPLERS in helpers/quality/matched_quality.py, whose comment gives
the cost), and its figures' styles in helpers/views/sweep.py and helpers/views/sources.py.
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
