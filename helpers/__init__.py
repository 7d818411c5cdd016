"""The code the notebooks of *Typewriter and Editor* share, one idea per module.

toylang      the toy language: an exact, enumerable distribution over sentences and documents
model        the transformer (causal or bidirectional), its KV cache and the pass counter
ar           autoregressive decoding: naive and KV-cached loops, sampling controls
diffusion    masked diffusion: the ELBO loss and the samplers (confidence, blocks, threshold, remasking)
train        one training loop for both kinds; `python -m helpers.train ar|mdlm`
checkpoints  the shipped checkpoints in data/, checked against their sha256
timing       honest timing and the machine's bandwidth / FLOP/s
roofline     the roofline model and its plot
costs        what a forward pass reads and computes; ceiling and typical efficiency; memory
hardware     the device table (data/hardware.csv)
latency      AR and diffusion latency of N tokens, from the cost of every pass
calibration  published decoding speeds next to the projections of the same setting
matched_quality  tokens per pass at a fixed validity; `python -m helpers.matched_quality`
bench        `python -m helpers.bench`: this machine and the course's decoders, measured
precision    the decode step with fp32, bf16 and int8 weights, timed in turn
hf_compare   the course decoder against Hugging Face `generate` (needs transformers)
plotting     one figure style; widgets: the interactive figures; device: CUDA -> MPS -> CPU
"""
