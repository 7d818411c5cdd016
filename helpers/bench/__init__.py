"""Measure this machine and the course's decoders on it: the numbers notebooks 04 and 05 put on the roofline.

    python -m helpers.bench                 # a few minutes; a readable table
    python -m helpers.bench --quick         # under a minute on a 2-core laptop
    python -m helpers.bench --json          # the same as JSON (helpers.bench.rows names the keys)
    python -m helpers.bench --device cuda   # a GPU, in bf16 (--device mps: Apple's GPU, in fp16)
    python -m helpers.bench --out DIR       # DIR/bench.json rewritten after every stage, DIR/bench.log
    python -m helpers.bench.reference DIR   # the prepared reference run for a lent GPU (see that module)

What it measures, stage by stage (each stage is one function, and notebooks 04 and 05 call the
same functions, so the notebook and the command line cannot disagree). Each stage runs in
isolation: one that fails is recorded under "errors" and the others still run.

1. `measure_machine` (helpers.bench.roofs): the roofs. STREAM copy and triad bandwidth, the
   bandwidth a large GEMV (y = W x) reaches, and the throughput of a large matmul (the compute
   roof). The ridge point is peak FLOP/s / GEMV bandwidth: a decode step is made of GEMVs, so
   that is the memory roof it can actually reach.
2. `decode_step` (helpers.bench.decode): one cached decode step of the course's own decoder,
   exactly the call helpers.decoding.ar.generate makes for every token after the first, at batch 1 with
   the cache prefilled to a realistic context; GPT-2 small's shape with random weights (fp32 on
   the CPU, bf16 on CUDA). Compared with the roofline prediction from helpers.roofline.costs, which uses
   the bandwidth the model's own GEMVs reach (every weight matrix times one vector, back to
   back), measured alongside; MBU. On CUDA also replayed as one CUDA graph.
3. `width_sweep` (helpers.bench.widths): one pass of a bidirectional (diffusion) model over W
   positions, as a multiple of one AR decode step, for W = 1, 2, 4, ...: flat while the pass is
   memory-bound, rising once W passes the ridge point. On CUDA, graph against graph.
4. `tiny_models_n256` (helpers.bench.tiny): the course's tiny shape end to end: N = 256 new
   tokens with the KV-cached AR decoder (N passes) and with the masked-diffusion sampler in K
   passes, passes counted by helpers.decoding.model.count_passes as the code runs them.
5. `helpers.bench.precision.time_formats` (CPU): the decode step of stage 2 with its weights in fp32,
   bf16 and weight-only int8, timed in turn: do fewer bytes per weight make the step faster?
6. On a GPU (helpers.bench.graphs): the weight layout chosen by measuring both, and the decode step
   of three shapes (tiny, GPT-2 small, a 1.8B wide shape built on the device) timed eagerly and
   replayed as one CUDA graph: the difference is the cost of launching kernels one at a time;
   MBU against the datasheet bandwidth of data/hardware.csv.
7. On a GPU: the matmul rate for n = 1024 ... 16384.
On MPS stage 4 is left out (the diffusion sampler works in float64, which MPS lacks).

Field names: a JSON field computed from an eager time ends in `_eager`; the others use a CUDA
graph where one was timed (helpers.bench.rows). On CUDA every time comes from helpers.measure.gpu.do_bench
(a variant of Triton's: warm-up by time, many calls per pair of CUDA events, the L2 cleared before
each sample), after a second of large matmuls that brings the clocks up from idle.

The models timed (random weights: only shape, dtype and layout matter) come from helpers.roofline.fixtures;
the JSON rows are in helpers.bench.rows, the run in helpers.bench.stages, the table in
helpers.bench.text, the command line in helpers.bench.cli.
"""

from helpers.bench.decode import (
    DECODE_CONTEXT,
    DecodeStep,
    decode_step,
    decode_step_fn,
    model_gemv_bandwidth,
    model_gemvs,
)
from helpers.bench.graphs import (
    LayoutChoice,
    OpCount,
    ShapeRun,
    choose_layout,
    count_ops,
    count_step_ops,
    eager_and_graph,
    gpu_shapes,
    matmul_sweep,
    time_shape,
)
from helpers.bench.roofs import CPU_MATMUL_N, FULL, QUICK, SMOKE, BenchSettings, Roofs, measure_machine
from helpers.bench.rows import as_json
from helpers.bench.stages import STAGES, run_bench
from helpers.bench.text import format_report, reference_summary
from helpers.bench.tiny import TINY_NOTE, TINY_STEPS, DecoderRun, TinyRun, tiny_models_n256
from helpers.bench.widths import WidthPoint, width_sweep
from helpers.roofline.fixtures import (
    MODEL_DTYPES,
    TINY_TOKENS,
    bidirectional_twin,
    model_dtype,
    prefilled_cache,
    random_model,
    tiny_config,
)

__all__ = [
    "CPU_MATMUL_N", "DECODE_CONTEXT", "FULL", "MODEL_DTYPES", "QUICK", "SMOKE", "STAGES", "TINY_NOTE", "TINY_STEPS",
    "TINY_TOKENS", "BenchSettings", "DecodeStep", "DecoderRun", "LayoutChoice", "OpCount", "Roofs", "ShapeRun",
    "TinyRun", "WidthPoint",
    "choose_layout", "count_ops", "count_step_ops", "eager_and_graph", "gpu_shapes", "matmul_sweep", "time_shape",
    "as_json", "reference_summary", "bidirectional_twin", "decode_step", "decode_step_fn", "format_report",
    "measure_machine", "model_dtype", "model_gemv_bandwidth", "model_gemvs", "prefilled_cache", "random_model",
    "run_bench", "tiny_config", "tiny_models_n256", "width_sweep",
]  # fmt: skip
