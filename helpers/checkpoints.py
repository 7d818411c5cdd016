"""Shipped checkpoints in data/: saved with their config, verified by sha256 before loading."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict
from pathlib import Path

import torch

from helpers.model import ModelConfig, Transformer
from helpers.train import KINDS, TrainConfig, check_kind

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
MANIFEST = DATA_DIR / "manifest.json"


class CheckpointError(RuntimeError):
    """A shipped checkpoint is missing or does not match its manifest entry."""


def rebuild_command(kind: str) -> str:
    """The command that trained the shipped checkpoint (one thread: the run is reproducible)."""
    return f"python -m helpers.train {kind} --threads 1"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _read_manifest() -> dict:
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}


def save_checkpoint(
    model: Transformer, kind: str, train_config: TrainConfig, path=None, losses=None, command=None
) -> Path:
    """Save weights + configs (+ the per-step training losses, if given); a checkpoint saved to
    data/ is recorded in the manifest."""
    check_kind(kind)
    path = Path(path) if path else DATA_DIR / f"{kind}.pt"
    # float16 halves the file; the head is dropped when it is tied to the token embedding
    state = {k: v.detach().to("cpu", torch.float16) for k, v in model.state_dict().items()}
    if model.config.tie_weights:
        del state["head.weight"]
    payload = {"kind": kind, "config": asdict(model.config), "train": asdict(train_config), "state_dict": state}
    if losses is not None:
        payload["losses"] = torch.as_tensor(losses, dtype=torch.float32)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    if path.resolve().parent == DATA_DIR:
        manifest = _read_manifest()
        manifest[path.name] = {
            "sha256": sha256_of(path),
            "bytes": path.stat().st_size,
            "command": command or rebuild_command(kind),
            "parameters": model.num_params(),
        }
        MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def load_checkpoint(path, device=None) -> Transformer:
    """Load any checkpoint written by save_checkpoint (no checksum: see load_pretrained)."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    model = Transformer(ModelConfig(**payload["config"]))
    state = {k: v.float() for k, v in payload["state_dict"].items()}
    if model.config.tie_weights:
        state["head.weight"] = state["tok_emb.weight"]
    model.load_state_dict(state)
    return model.decode_layout_().to(device).eval()


def training_losses(kind: str):
    """The per-step training losses (nats/token) stored with a shipped checkpoint, or None."""
    check_kind(kind)
    payload = torch.load(DATA_DIR / f"{kind}.pt", map_location="cpu", weights_only=True)
    losses = payload.get("losses")
    return None if losses is None else losses.numpy()


def load_pretrained(kind: str, device=None) -> Transformer:
    """The shipped model of this kind ("ar" or "mdlm"), checked against data/manifest.json."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    path = DATA_DIR / f"{kind}.pt"
    entry = _read_manifest().get(path.name)
    fix = (
        f"Rebuild it with `{rebuild_command(kind)}` (6000 steps, about 40 minutes on one CPU core) "
        "or restore it with `git checkout data/`."
    )
    if not path.exists():
        raise CheckpointError(f"checkpoint {path.name} is missing from data/. {fix}")
    if entry is None:
        raise CheckpointError(f"checkpoint {path.name} has no entry in data/manifest.json. {fix}")
    if sha256_of(path) != entry["sha256"]:
        raise CheckpointError(f"checkpoint {path.name} does not match its sha256 in data/manifest.json. {fix}")
    return load_checkpoint(path, device)
