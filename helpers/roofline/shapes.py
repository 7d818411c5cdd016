"""The shapes of the models the course costs: the sizes that decide what a forward pass reads and computes.

`ModelShape` covers the course model (GPT-2 style) and Llama-style models (grouped-query
attention, gated MLP, no biases) and counts their parameters: all of them (`num_params`, equal to
helpers.decoding.model.Transformer.num_params()), those used as matmul operands (`matmul_params`), those
in tables that are only indexed (`lookup_params`) and those a pass over some positions reads
(`params_read`). `MODEL_SHAPES` holds the real models the projections use, each with its source;
`model_shape` accepts a ModelShape, a helpers.decoding.model.ModelConfig or one of those names.
What a pass costs, from these counts, is in helpers.roofline.costs.
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.common.validation import check_int, check_positive
from helpers.decoding.model import ModelConfig


@dataclass(frozen=True)
class ModelShape:
    """The sizes that decide what a forward pass reads and computes. Covers the course model
    (GPT-2 style) and Llama-style models (grouped-query attention, gated MLP, no biases)."""

    name: str
    n_layer: int
    d_model: int
    n_head: int  # query heads
    n_kv_head: int  # heads with their own keys/values: n_head without GQA, fewer with it
    d_ff: int  # MLP hidden width
    vocab_size: int
    gated_mlp: bool = False  # SwiGLU (Llama): three d_model x d_ff matrices instead of two
    tie_weights: bool = True  # output head shares the token embedding
    bias: bool = False  # biases in linear layers and norms (GPT-2, the course model)
    max_positions: int = 0  # rows of a learned positional table (GPT-2); 0 with rotary (Llama)
    head_dim: int = 0  # 0: d_model // n_head
    source: str = ""  # where the numbers come from

    def __post_init__(self):
        for name in ("n_layer", "d_model", "n_head", "n_kv_head", "d_ff", "vocab_size"):
            check_int(getattr(self, name), f"ModelShape.{name}", 1)
        check_int(self.max_positions, "ModelShape.max_positions", 0)
        check_int(self.head_dim, "ModelShape.head_dim", 0)
        if self.n_head % self.n_kv_head:
            raise ValueError(f"n_head ({self.n_head}) must be a multiple of n_kv_head ({self.n_kv_head})")
        if self.head_dim == 0:
            if self.d_model % self.n_head:
                raise ValueError(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})")
            object.__setattr__(self, "head_dim", self.d_model // self.n_head)

    @property
    def q_dim(self) -> int:
        return self.n_head * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_head * self.head_dim

    def _layer_matmul_params(self) -> int:
        attention = self.d_model * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.d_model  # qkv + output
        mlp = (3 if self.gated_mlp else 2) * self.d_model * self.d_ff
        return attention + mlp

    def _layer_other_params(self) -> int:
        norms = 2 * self.d_model * (2 if self.bias else 1)  # two norms: weight (+ bias)
        if not self.bias:
            return norms
        mlp_in = (2 if self.gated_mlp else 1) * self.d_ff
        return norms + (self.q_dim + 2 * self.kv_dim) + self.d_model + mlp_in + self.d_model

    def matmul_params(self) -> int:
        """Parameters used as matmul operands in every pass: all layers' matrices + the V x d head."""
        return self.n_layer * self._layer_matmul_params() + self.vocab_size * self.d_model

    def lookup_params(self) -> int:
        """Parameters in tables that are only indexed: an untied token embedding and a positional table."""
        untied_embedding = 0 if self.tie_weights else self.vocab_size * self.d_model
        return untied_embedding + self.max_positions * self.d_model

    def num_params(self) -> int:
        """All parameters, tied weights counted once (matches Transformer.num_params())."""
        final_norm = self.d_model * (2 if self.bias else 1)
        return self.matmul_params() + self.lookup_params() + self.n_layer * self._layer_other_params() + final_norm

    def params_read(self, positions: int = 1) -> int:
        """Parameters a pass over `positions` (B x T) positions reads: all of them, except that
        of each lookup-only table it reads just the rows it indexes (at most the whole table)."""
        positions = check_int(positions, "positions", 1)
        rows = 0 if self.tie_weights else min(positions, self.vocab_size)
        if self.max_positions:
            rows += min(positions, self.max_positions)
        return self.num_params() - self.lookup_params() + rows * self.d_model


def shape_from_config(config: ModelConfig, name: str = "course model") -> ModelShape:
    """The ModelShape of a helpers.decoding.model.ModelConfig (GPT-2 style: MHA, LayerNorm, GELU MLP)."""
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a helpers.decoding.model.ModelConfig, got {type(config).__name__}")
    return ModelShape(
        name=name,
        n_layer=config.n_layer,
        d_model=config.d_model,
        n_head=config.n_head,
        n_kv_head=config.n_head,
        d_ff=config.mlp_ratio * config.d_model,
        vocab_size=config.vocab_size,
        tie_weights=config.tie_weights,
        bias=config.bias,
        max_positions=config.max_len,
    )


_LLAMA = dict(gated_mlp=True, bias=False, max_positions=0)  # RMSNorm, SwiGLU, rotary positions, no biases
MODEL_SHAPES = {
    s.name: s
    for s in [
        ModelShape(
            name="gpt2-small",
            n_layer=12,
            d_model=768,
            n_head=12,
            n_kv_head=12,
            d_ff=3072,
            vocab_size=50257,
            bias=True,
            max_positions=1024,
            source="GPT-2 small (Radford et al. 2019), 124M parameters; = helpers.decoding.model.gpt2_small_config()",
        ),
        ModelShape(
            name="Llama-3.2-1B",
            n_layer=16,
            d_model=2048,
            n_head=32,
            n_kv_head=8,
            d_ff=8192,
            vocab_size=128256,
            tie_weights=True,
            **_LLAMA,
            source="meta-llama/Llama-3.2-1B config.json; 1.24B parameters",
        ),
        ModelShape(
            name="Llama-3-8B",
            n_layer=32,
            d_model=4096,
            n_head=32,
            n_kv_head=8,
            d_ff=14336,
            vocab_size=128256,
            tie_weights=False,
            **_LLAMA,
            source="meta-llama/Meta-Llama-3-8B config.json; 8.03B parameters",
        ),
        ModelShape(
            name="Llama-2-7B",
            n_layer=32,
            d_model=4096,
            n_head=32,
            n_kv_head=32,
            d_ff=11008,
            vocab_size=32000,
            tie_weights=False,
            **_LLAMA,
            source="Touvron et al. 2023, meta-llama/Llama-2-7b-hf config.json; 6.74B parameters, no GQA",
        ),
        ModelShape(
            name="Llama-2-70B",
            n_layer=80,
            d_model=8192,
            n_head=64,
            n_kv_head=8,
            d_ff=28672,
            vocab_size=32000,
            tie_weights=False,
            **_LLAMA,
            source="Touvron et al. 2023, meta-llama/Llama-2-70b-hf config.json; 69.0B parameters",
        ),
        ModelShape(
            name="Qwen2.5-7B",
            n_layer=28,
            d_model=3584,
            n_head=28,
            n_kv_head=4,
            d_ff=18944,
            vocab_size=152064,
            tie_weights=False,
            **_LLAMA,
            source="Qwen/Qwen2.5-7B-Instruct config.json; 7.62B parameters (its qkv biases, 0.1M, left out)",
        ),
        ModelShape(
            name="LLaDA-8B",
            n_layer=32,
            d_model=4096,
            n_head=32,
            n_kv_head=32,
            d_ff=12288,
            vocab_size=126464,
            tie_weights=False,
            **_LLAMA,
            source="GSAI-ML/LLaDA-8B-Instruct config.json (Nie et al. 2025): 8.02B parameters, full MHA, no GQA",
        ),
    ]
}


def model_shape(model) -> ModelShape:
    """A ModelShape from a ModelShape, a helpers.decoding.model.ModelConfig or a name in MODEL_SHAPES."""
    if isinstance(model, ModelShape):
        return model
    if isinstance(model, ModelConfig):
        return shape_from_config(model)
    if isinstance(model, str) and model in MODEL_SHAPES:
        return MODEL_SHAPES[model]
    raise ValueError(f"model must be a ModelShape, a ModelConfig or one of {sorted(MODEL_SHAPES)}, got {model!r}")


def kv_bytes_per_token(model, bytes_per_kv: float = 4) -> float:
    """KV-cache bytes one position adds: 2 (K and V) x layers x kv_heads x head_dim x bytes."""
    shape = model_shape(model)
    return 2.0 * shape.n_layer * shape.n_kv_head * shape.head_dim * check_positive(bytes_per_kv, "bytes_per_kv")
