"""Checkpoints: saved with their config, verified by sha256 before anything reads them.

Every read checks the file's sha256 first, against
- data/manifest.json for the shipped checkpoints (data/ar.pt, data/mdlm.pt);
- `expected_sha256`, when the caller passes one;
- otherwise the `<file>.sha256` written next to it by save_checkpoint (the format of `sha256sum`,
  so `sha256sum -c m.pt.sha256` checks it too).
A file that does not match, or that has nothing to be checked against, raises CheckpointError
naming the fix.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import warnings
from dataclasses import asdict
from pathlib import Path

import torch

from helpers.common.validation import check_path
from helpers.decoding.model import ModelConfig, Transformer
from helpers.decoding.train_config import KINDS, TrainConfig, check_kind

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
MANIFEST = DATA_DIR / "manifest.json"
SHA256 = re.compile(r"[0-9a-f]{64}")

__all__ = [
    "CheckpointError",
    "KINDS",
    "load_checkpoint",
    "load_pretrained",
    "rebuild_command",
    "save_checkpoint",
    "sha256_of",
    "training_losses",
]


class CheckpointError(RuntimeError):
    """A checkpoint is missing, or does not match its recorded sha256, or has no sha256 to check."""


def rebuild_command(kind: str) -> str:
    """The command that trained the shipped checkpoint (one thread: the run is reproducible)."""
    check_kind(kind)
    return f"python -m helpers.train {kind} --threads 1"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _shipped_fix(kind: str | None) -> str:
    rebuild = f"`{rebuild_command(kind)}`" if kind else "`python -m helpers.train <kind> --threads 1`"
    return (
        f"Rebuild it with {rebuild} (6000 steps, about 40 minutes on one CPU core) "
        "or restore it with `git checkout data/`."
    )


def _read_manifest(strict: bool = False) -> dict:
    """data/manifest.json as a dict ({} if it is missing and not strict). A manifest that cannot
    be read raises CheckpointError when strict, and is treated as empty (with a warning) otherwise."""
    if not MANIFEST.exists():
        if strict:
            raise CheckpointError(f"data/manifest.json is missing, so no checkpoint in data/ can be checked. {_fix()}")
        return {}
    try:
        manifest = json.loads(MANIFEST.read_text())
        if not isinstance(manifest, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError) as error:
        if strict:
            raise CheckpointError(f"data/manifest.json is broken ({error}). {_fix()}") from None
        warnings.warn(f"data/manifest.json is broken ({error}); starting a new one", stacklevel=3)
        return {}
    return manifest


def _fix() -> str:
    return (
        "Restore it with `git checkout data/`, or rebuild the checkpoints with "
        "`python -m helpers.train ar --threads 1` and `python -m helpers.train mdlm --threads 1`."
    )


def _in_data_dir(path: Path) -> bool:
    return path.resolve().parent == Path(DATA_DIR).resolve()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _check_sha256(value, name: str = "expected_sha256") -> str:
    if not isinstance(value, str) or not SHA256.fullmatch(value.lower()):
        raise ValueError(f"{name} must be a sha256 hex digest (64 characters 0-9a-f), got {value!r}")
    return value.lower()


def _fix_for(path: Path, expected_sha256) -> str:
    """What to do when this checkpoint is missing or does not match."""
    if expected_sha256 is not None:
        return "Pass the sha256 of the file that was saved, or save it again with save_checkpoint."
    if _in_data_dir(path):
        return _shipped_fix(path.stem if path.stem in KINDS else None)
    return (
        f"Save it again with helpers.decoding.checkpoints.save_checkpoint (which writes {_sidecar(path).name} "
        "next to it), or pass expected_sha256."
    )


def _expected_sha256(path: Path, expected_sha256, fix: str) -> str:
    """The sha256 the file must have: the caller's, the manifest's (data/) or the sidecar's."""
    if expected_sha256 is not None:
        return _check_sha256(expected_sha256)
    if _in_data_dir(path):
        entry = _read_manifest(strict=True).get(path.name)
        if entry is None:
            raise CheckpointError(f"checkpoint {path.name} has no entry in data/manifest.json. {fix}")
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or not SHA256.fullmatch(digest):
            raise CheckpointError(f"the entry of {path.name} in data/manifest.json has no valid sha256. {fix}")
        return digest
    sidecar = _sidecar(path)
    if not sidecar.is_file():
        raise CheckpointError(f"checkpoint {path} has no {sidecar.name} next to it, so it cannot be checked. {fix}")
    recorded = sidecar.read_text().split()
    if not recorded or not SHA256.fullmatch(recorded[0]):
        raise CheckpointError(f"{sidecar} does not hold a sha256. {fix}")
    return recorded[0]


def _verified_bytes(path: Path, expected_sha256=None) -> bytes:
    """The file's bytes, once their sha256 matches the recorded one."""
    fix = _fix_for(path, expected_sha256)
    if not path.is_file():
        where = "data/" if _in_data_dir(path) else str(path.parent)
        raise CheckpointError(f"checkpoint {path.name} is missing from {where}. {fix}")
    expected = _expected_sha256(path, expected_sha256, fix)
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != expected:
        where = "its sha256 in data/manifest.json" if expected_sha256 is None and _in_data_dir(path) else "its sha256"
        raise CheckpointError(f"checkpoint {path.name} does not match {where}. {fix}")
    return data


def _payload(data: bytes, path: Path) -> dict:
    try:
        payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as error:  # any failure to unpickle means the same thing here
        raise CheckpointError(f"{path.name} is not a checkpoint written by save_checkpoint ({error})") from None
    if not isinstance(payload, dict) or not {"config", "state_dict"} <= payload.keys():
        raise CheckpointError(f"{path.name} is not a checkpoint written by save_checkpoint (no config / state_dict)")
    return payload


def save_checkpoint(
    model: Transformer, kind: str, train_config: TrainConfig, path=None, losses=None, command=None
) -> Path:
    """Save weights + configs (+ the per-step training losses, if given). The file's sha256 is
    recorded in data/manifest.json for a checkpoint saved to data/, and in `<file>.sha256` next
    to it otherwise."""
    check_kind(kind)
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a helpers.decoding.model.Transformer, got {type(model).__name__}")
    if model.config.causal != (kind == "ar"):
        raise ValueError(f"kind {kind!r} needs causal={kind == 'ar'}, the model has causal={model.config.causal}")
    if not isinstance(train_config, TrainConfig):
        raise ValueError(f"train_config must be a TrainConfig, got {type(train_config).__name__}")
    if command is not None and not isinstance(command, str):
        raise ValueError(f"command must be None or a str, got {type(command).__name__}")
    path = check_path(path, DATA_DIR / f"{kind}.pt")
    # float16 halves the file; the head is dropped when it is tied to the token embedding
    state = {k: v.detach().to("cpu", torch.float16) for k, v in model.state_dict().items()}
    if model.config.tie_weights:
        del state["head.weight"]
    payload = {"kind": kind, "config": asdict(model.config), "train": asdict(train_config), "state_dict": state}
    if losses is not None:
        losses = torch.as_tensor(losses, dtype=torch.float32)
        if losses.dim() != 1:
            raise ValueError(f"losses must be 1-D (one loss per step), got shape {tuple(losses.shape)}")
        payload["losses"] = losses
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if _in_data_dir(path):
        manifest = _read_manifest()
        manifest[path.name] = {
            "sha256": digest,
            "bytes": len(data),
            "command": command or rebuild_command(kind),
            "parameters": model.num_params(),
        }
        MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    else:
        _sidecar(path).write_text(f"{digest}  {path.name}\n")
    return path


def load_checkpoint(path, device=None, expected_sha256: str | None = None) -> Transformer:
    """Load a checkpoint written by save_checkpoint, after checking its sha256 (against
    `expected_sha256` if given, else data/manifest.json for data/, else `<file>.sha256`)."""
    if not isinstance(path, str | os.PathLike):  # check_path would take None for a default; here None is an error
        raise ValueError(f"path must be a str or a pathlib.Path (the checkpoint to load), got {path!r}")
    path = Path(path)
    if device is not None:
        try:
            torch.device(device)
        except (RuntimeError, TypeError):
            raise ValueError(f"device must be None, a torch.device or a name such as 'cpu', got {device!r}") from None
    return _model_from(_payload(_verified_bytes(path, expected_sha256), path), device)


def _model_from(payload: dict, device) -> Transformer:
    model = Transformer(ModelConfig(**payload["config"]))
    state = {k: v.float() for k, v in payload["state_dict"].items()}
    if model.config.tie_weights:
        state["head.weight"] = state["tok_emb.weight"]
    model.load_state_dict(state)
    return model.decode_layout_().to(device).eval()


def training_losses(kind: str):
    """The per-step training losses (nats/token) stored with a shipped checkpoint, or None.
    The checkpoint is checked against data/manifest.json first."""
    check_kind(kind)
    path = DATA_DIR / f"{kind}.pt"
    losses = _payload(_verified_bytes(path), path).get("losses")
    return None if losses is None else losses.numpy()


def load_pretrained(kind: str, device=None) -> Transformer:
    """The shipped model of this kind ("ar" or "mdlm"), checked against data/manifest.json."""
    check_kind(kind)
    return load_checkpoint(DATA_DIR / f"{kind}.pt", device)
