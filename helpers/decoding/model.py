"""One small transformer, written out by hand, for both halves of the course.

`causal=True` gives the autoregressive model (the typewriter): position t sees positions <= t.
`causal=False` gives the masked-diffusion model (the editor): every position sees every other.
Everything else (size, data, training budget) is shared, so the two can be compared fairly. A
causal model decodes with a preallocated KV cache: each step computes keys and values for the new
token only and attends over the cached ones.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers.common.device import as_device
from helpers.common.validation import check_float_dtype, check_int

LAYOUTS = ("decode", "row-major")  # how weight matrices are stored: Transformer.set_layout_


@dataclass
class ModelConfig:
    vocab_size: int = 55  # size of helpers.language.toylang.LANG.vocab
    max_len: int = 64  # longest sequence the model accepts (its positional table)
    d_model: int = 128  # width of the residual stream
    n_layer: int = 4  # transformer blocks
    n_head: int = 4  # attention heads; head_dim = d_model // n_head
    mlp_ratio: int = 4  # MLP hidden width = mlp_ratio * d_model
    causal: bool = True  # True: autoregressive; False: bidirectional (masked diffusion)
    bias: bool = True  # biases in Linear and LayerNorm, as in GPT-2
    tie_weights: bool = True  # output head shares the token embedding, as in GPT-2

    def __post_init__(self):
        for name in ("vocab_size", "max_len", "d_model", "n_layer", "n_head", "mlp_ratio"):
            check_int(getattr(self, name), f"ModelConfig.{name}", minimum=1)
        for name in ("causal", "bias", "tie_weights"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"ModelConfig.{name} must be True or False, got {getattr(self, name)!r}")
        if self.d_model % self.n_head:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head


def gpt2_small_config(**overrides) -> ModelConfig:
    """The shape of GPT-2 small (124M parameters), for timing with random weights."""
    shape = dict(vocab_size=50257, max_len=1024, d_model=768, n_layer=12, n_head=12)
    return ModelConfig(**{**shape, **overrides})


def gpu_wide_config(**overrides) -> ModelConfig:
    """A wide, shallow shape sized for a GPU: d_model 4096, 8 layers, 32 heads, GPT-2's vocabulary
    padded to 50304 (a multiple of 64, as nanoGPT pads it): 1.82B parameters, 3.6 GB in bf16.
    Its decode step is long enough (about 0.8 ms at an H200's 4.8 TB/s) that kernel launches
    do not hide the memory traffic, unlike GPT-2 small's (about 55 us)."""
    shape = dict(vocab_size=50304, max_len=1024, d_model=4096, n_layer=8, n_head=32)
    return ModelConfig(**{**shape, **overrides})


def pad_vocab(config: ModelConfig, multiple: int = 64) -> ModelConfig:
    """The same config with vocab_size rounded up to a multiple of `multiple` (50257 -> 50304):
    rows of the tied embedding / output head then start on aligned addresses in 2-byte formats,
    which GPU matmul kernels need for their fastest paths. The extra rows are never sampled from
    in a real model; here they only add their bytes (0.1 % for GPT-2 small)."""
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}")
    multiple = check_int(multiple, "multiple", 1)
    return replace(config, vocab_size=-(-config.vocab_size // multiple) * multiple)


class KVCache:
    """Keys and values of every layer for up to `max_len` positions, allocated once. `length` is how
    many positions are filled. A forward pass with the cache writes its new
    keys/values at [length, length + T) and then advances `length` by T; `crop` rolls it back."""

    def __init__(self, config: ModelConfig, batch_size: int, device=None, dtype=torch.float32):
        if not isinstance(config, ModelConfig):
            raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}")
        batch_size = check_int(batch_size, "batch_size", minimum=1)
        check_float_dtype(dtype)
        shape = (config.n_layer, 2, batch_size, config.n_head, config.max_len, config.head_dim)
        self.data = torch.zeros(shape, device=device, dtype=dtype)  # (L, 2, B, H, max_len, hd)
        self.config = config
        self.batch_size = batch_size
        self.length = 0

    def crop(self, length: int) -> KVCache:
        """Forget positions >= length, zeroed as if never written (speculative decoding's rollback)."""
        length = check_int(length, f"length (0 to the {self.length} positions filled)", 0, self.length)
        self.data[:, :, :, :, length : self.length] = 0
        self.length = length
        return self

    def nbytes(self) -> int:
        """Bytes of the filled part (what a decode step reads)."""
        return self.data[:, :, :, :, : self.length].numel() * self.data.element_size()


class SelfAttention(nn.Module):
    """Multi-head self-attention with a KV cache, causal or bidirectional as config.causal says."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_head, self.head_dim = config.n_head, config.head_dim
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model, bias=config.bias)
        self.proj = nn.Linear(config.d_model, config.d_model, bias=config.bias)
        self.causal = config.causal
        self.scale = 1.0 / math.sqrt(config.head_dim)
        allowed = torch.ones(config.max_len, config.max_len, dtype=torch.bool).tril()
        self.register_buffer("allowed", allowed, persistent=False)  # (max_len, max_len)

    def forward(self, x, kv=None, start=0):
        B, T, C = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)  # (3, B, H, T, hd)
        q, k, v = qkv  # (B, H, T, hd) each
        if kv is not None:  # write the new keys and values (one copy), then attend over all so far
            kv[:, :, :, start : start + T] = qkv[1:]
            k, v = kv[:, :, :, : start + T]  # (B, H, S, hd) each, S = start + T
        scores = (q @ k.transpose(-2, -1)) * self.scale  # (B, H, T, S)
        if self.causal and T > 1:  # a single new token may see every cached position
            S = k.size(2)
            scores = scores.masked_fill(~self.allowed[S - T : S, :S], float("-inf"))
        weights = F.softmax(scores, dim=-1)  # (B, H, T, S)
        y = weights @ v  # (B, H, T, hd)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        hidden = config.mlp_ratio * config.d_model
        self.up = nn.Linear(config.d_model, hidden, bias=config.bias)
        self.down = nn.Linear(hidden, config.d_model, bias=config.bias)

    def forward(self, x):
        return self.down(F.gelu(self.up(x), approximate="tanh"))  # (B, T, C)


class Block(nn.Module):
    """Pre-norm block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model, bias=config.bias)
        self.attn = SelfAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x, kv=None, start=0):
        x = x + self.attn(self.ln1(x), kv, start)
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig):
        if not isinstance(config, ModelConfig):
            raise ValueError(f"config must be a helpers.decoding.model.ModelConfig, got {type(config).__name__}")
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.max_len, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.d_model, bias=config.bias)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.head.weight = self.tok_emb.weight
        self.init_parameters_()

    @torch.no_grad()
    def init_parameters_(self) -> Transformer:
        """GPT-2's initialisation, in place: N(0, 0.02) for every matrix and embedding, residual
        writes (attn.proj, mlp.down) scaled by 1/sqrt(2 n_layer), zero biases, LayerNorms at 1 and 0,
        and the causal mask rebuilt. Also makes a model allocated with to_empty (helpers.roofline.fixtures
        builds large models that way, directly on a GPU) a proper one."""
        for module in self.modules():
            if isinstance(module, nn.LayerNorm):
                module.reset_parameters()
            if isinstance(module, SelfAttention):
                module.allowed.copy_(torch.ones_like(module.allowed).tril())
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: scale residual writes by depth
            if name.endswith(("attn.proj.weight", "mlp.down.weight")):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * self.config.n_layer))
        return self

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    @torch.no_grad()
    def decode_layout_(self) -> Transformer:
        """Store every weight matrix with its longer dimension contiguous in memory, keeping its
        (out, in) shape, its values and every result. A decode step multiplies one vector by each
        matrix; the CPU's matrix-vector kernel streams long contiguous runs fastest, so a matrix
        with more outputs than inputs (qkv, the MLP's first layer, the output head) is stored
        input-major, as GPT-2's original code stores its blocks' weights (its output head, the
        tied embedding, it keeps row by row). Notebook 04 measures the
        difference. Training keeps PyTorch's default layout; loaded checkpoints use this one."""
        for module in self.modules():
            if isinstance(module, nn.Linear) and module.weight is not self.tok_emb.weight:
                module.weight = nn.Parameter(decode_layout(module.weight))
        self.tok_emb.weight = nn.Parameter(decode_layout(self.tok_emb.weight))
        if self.config.tie_weights:
            self.head.weight = self.tok_emb.weight
        return self

    @torch.no_grad()
    def row_major_layout_(self) -> Transformer:
        """Every weight matrix stored as nn.Linear creates it, (out, in) row by row, keeping its
        values and every result. GPU kernels (cuBLAS, Metal) are tuned for this layout, and so are
        the CPU's bf16 and int8 kernels (helpers.bench.precision)."""
        for module in self.modules():
            if isinstance(module, nn.Linear) and module.weight is not self.tok_emb.weight:
                module.weight = nn.Parameter(module.weight.contiguous())
        self.tok_emb.weight = nn.Parameter(self.tok_emb.weight.contiguous())
        if self.config.tie_weights:
            self.head.weight = self.tok_emb.weight
        return self

    def set_layout_(self, layout: str) -> Transformer:
        """layout "decode" (decode_layout_) or "row-major" (row_major_layout_)."""
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        return self.decode_layout_() if layout == "decode" else self.row_major_layout_()

    def num_params(self) -> int:
        """Parameters, counting tied weights once."""
        return sum(p.numel() for p in self.parameters())

    def new_cache(self, batch_size: int) -> KVCache:
        """An empty KV cache for `batch_size` rows, on this model's device and dtype."""
        if not self.config.causal:
            raise ValueError("a KV cache needs a causal model; this one is bidirectional (causal=False)")
        p = self.tok_emb.weight
        return KVCache(self.config, batch_size, device=p.device, dtype=p.dtype)

    def forward(
        self, idx: torch.Tensor, cache: KVCache | None = None, last_only: bool = False, check_ids: bool = True
    ) -> torch.Tensor:
        """idx (B, T) int64 -> logits (B, T, V), or (B, 1, V) for the last position if last_only.

        check_ids=False skips the range check of the token ids, the one step that reads a value
        back from the device (a host sync on a GPU). helpers.decoding.ar.generate checks the prompt once and
        then skips it: every later token is the model's own sample, in range by construction."""
        start = self._check_input(idx, cache, check_ids)
        B, T = idx.shape
        positions = torch.arange(start, start + T, device=idx.device)  # (T,)
        x = self.tok_emb(idx) + self.pos_emb(positions)  # (B, T, C)
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache.data[i], start)
        if cache is not None:
            cache.length += T
        if last_only:
            x = x[:, -1:]  # (B, 1, C)
        return self.head(self.ln_f(x))  # (B, T, V)

    def _check_input(self, idx, cache, check_ids: bool = True) -> int:
        """The checks of forward: idx int64 (B, T) with ids in [0, vocab_size) (unless check_ids
        is False); a cache made for this model with room for T more positions. Returns where the
        new positions start."""
        if not isinstance(check_ids, bool):
            raise ValueError(f"check_ids must be True or False, got {check_ids!r}")
        if not isinstance(idx, torch.Tensor) or idx.dtype != torch.long or idx.dim() != 2:
            got = f"{idx.dtype} tensor of shape {tuple(idx.shape)}" if isinstance(idx, torch.Tensor) else type(idx)
            raise ValueError(f"idx must be an int64 (torch.long) tensor of shape (B, T), got {got}")
        if idx.size(1) == 0:
            raise ValueError("idx must hold at least one position (T >= 1)")
        if (
            check_ids and idx.numel() and not _capturing(idx)
        ):  # one reduction, one transfer: the smallest and largest id
            low, high = torch.stack(torch.aminmax(idx)).tolist()
            if low < 0 or high >= self.config.vocab_size:
                raise ValueError(
                    f"token id {low if low < 0 else high} out of range; "
                    f"ids must be in [0, vocab_size) = [0, {self.config.vocab_size})"
                )
        start = 0
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise ValueError(f"cache must be None or a KVCache from model.new_cache(B), got {type(cache).__name__}")
            if not self.config.causal:
                raise ValueError("a KV cache works only with a causal model; this one is bidirectional")
            if cache.config != self.config:
                raise ValueError("this cache was made for a model with another config; use model.new_cache(B)")
            if cache.batch_size != idx.size(0):
                raise ValueError(f"cache holds batch size {cache.batch_size}, idx has {idx.size(0)} rows")
            start = cache.length
        if start + idx.size(1) > self.config.max_len:
            raise ValueError(
                f"sequence of {start + idx.size(1)} positions ({start} cached + {idx.size(1)} new) "
                f"is longer than max_len = {self.config.max_len}"
            )
        return start


def _capturing(idx: torch.Tensor) -> bool:
    """True while a CUDA graph is being captured: a graph may not copy to the host, so the id check
    runs in the eager warm-up before the capture instead (helpers.measure.gpu.CudaRuntime.capture)."""
    return idx.is_cuda and torch.cuda.is_current_stream_capturing()


def default_layout(device) -> str:
    """The weight layout a model is timed in on a device kind, before any measurement says
    otherwise: the course's decode layout on the CPU (measured in notebook 04, "Going deeper: why
    STREAM and GEMV disagree"), and row-major (nn.Linear's own) on CUDA and MPS, whose kernels are tuned for it.
    helpers.bench.choose_layout measures both on a GPU and keeps the faster."""
    return "decode" if as_device(device).type == "cpu" else "row-major"


def decode_layout(weight: torch.Tensor) -> torch.Tensor:
    """The same (out, in) matrix, stored input-major if out >= in (else as it is, row-major)."""
    out_features, in_features = weight.shape
    return weight.t().contiguous().t() if out_features >= in_features else weight.contiguous()


class PassCounter:
    """Counts forward passes of a model as they run, and the positions they processed."""

    def __init__(self):
        self.n = 0  # forward passes
        self.positions = 0  # sum over passes of B * T

    def _hook(self, module, args, kwargs, output):
        idx = args[0] if args else kwargs["idx"]  # however the model was called
        self.n += 1
        self.positions += idx.numel()


@contextmanager
def count_passes(model: nn.Module):
    """with count_passes(model) as passes: ...; passes.n is the number of forward calls."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"count_passes needs a torch.nn.Module (e.g. a Transformer), got {type(model).__name__}")
    counter = PassCounter()
    handle = model.register_forward_hook(counter._hook, with_kwargs=True)
    try:
        yield counter
    finally:
        handle.remove()
