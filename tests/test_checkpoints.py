import json
import shutil

import pytest
import torch

from helpers import checkpoints
from helpers.checkpoints import CheckpointError, load_checkpoint, load_pretrained, save_checkpoint
from helpers.model import ModelConfig, Transformer
from helpers.train import TrainConfig


@pytest.mark.parametrize("kind, causal", [("ar", True), ("mdlm", False)])
def test_shipped_checkpoints_load_and_match_their_manifest(kind, causal):
    model = load_pretrained(kind)
    assert model.config.causal is causal
    assert not model.training
    assert model.head.weight is model.tok_emb.weight  # tying survives the round trip
    entry = checkpoints._read_manifest()[f"{kind}.pt"]
    assert entry["command"].startswith(f"python -m helpers.train {kind}")
    assert entry["bytes"] < 3_000_000


@pytest.fixture
def private_data(tmp_path, monkeypatch):
    """A copy of data/ that a test may damage."""
    for name in ("ar.pt", "mdlm.pt", "manifest.json"):
        shutil.copy(checkpoints.DATA_DIR / name, tmp_path / name)
    monkeypatch.setattr(checkpoints, "DATA_DIR", tmp_path)
    monkeypatch.setattr(checkpoints, "MANIFEST", tmp_path / "manifest.json")
    return tmp_path


def test_corrupted_checkpoint_names_the_rebuild_command(private_data):
    path = private_data / "ar.pt"
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"sha256.*python -m helpers\.train ar"):
        load_pretrained("ar")


def test_missing_checkpoint_names_the_rebuild_command(private_data):
    (private_data / "mdlm.pt").unlink()
    with pytest.raises(CheckpointError, match=r"missing.*python -m helpers\.train mdlm"):
        load_pretrained("mdlm")


def test_the_rebuild_command_is_the_one_in_the_manifest_with_its_duration(private_data):
    (private_data / "ar.pt").unlink()
    with pytest.raises(CheckpointError) as error:
        load_pretrained("ar")
    manifest = json.loads((private_data / "manifest.json").read_text())
    assert f"`{manifest['ar.pt']['command']}`" in str(error.value)
    assert "--threads 1" in str(error.value) and "about 40 minutes on one CPU core" in str(error.value)


def test_unknown_kind_is_a_value_error():
    with pytest.raises(ValueError, match="kind must be one of"):
        load_pretrained("gpt")


def test_save_and_load_round_trip_in_float16(tmp_path):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=30, max_len=16, d_model=16, n_layer=1, n_head=2)).eval()
    path = save_checkpoint(model, "ar", TrainConfig(steps=1), path=tmp_path / "m.pt")
    loaded = load_checkpoint(path)
    assert loaded.config == model.config
    idx = torch.randint(0, 30, (2, 10))
    with torch.no_grad():
        assert torch.allclose(loaded(idx), model(idx), atol=2e-2)
    assert not (tmp_path / "manifest.json").exists()  # only data/ checkpoints enter the manifest
