import ast
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers.decoding import checkpoints
from helpers.decoding.checkpoints import (
    CheckpointError,
    load_checkpoint,
    load_pretrained,
    save_checkpoint,
    training_losses,
)
from helpers.decoding.model import ModelConfig, Transformer
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
    recorded = (tmp_path / "m.pt.sha256").read_text()
    assert recorded == f"{hashlib.sha256(path.read_bytes()).hexdigest()}  m.pt\n"  # the sha256sum format


# ---------------------------------------------------------------- every read checks the sha256 first


def flip_one_byte(path, at=-100):
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def small_checkpoint(tmp_path, name="m.pt"):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=30, max_len=16, d_model=16, n_layer=1, n_head=2)).eval()
    return save_checkpoint(model, "ar", TrainConfig(steps=1), path=tmp_path / name, losses=[3.0, 2.5])


@pytest.mark.parametrize(
    "read",
    [
        lambda: load_pretrained("ar"),
        lambda: training_losses("ar"),
        lambda: load_checkpoint(checkpoints.DATA_DIR / "ar.pt"),
    ],
    ids=["load_pretrained", "training_losses", "load_checkpoint"],
)
def test_every_read_of_a_shipped_checkpoint_refuses_one_flipped_bit(private_data, read):
    read()  # the intact copy loads
    flip_one_byte(private_data / "ar.pt", at=len((private_data / "ar.pt").read_bytes()) // 2)
    with pytest.raises(CheckpointError, match=r"does not match its sha256 in data/manifest\.json.*helpers\.train ar"):
        read()


def test_shipped_losses_are_one_per_training_step():
    losses = training_losses("ar")
    assert losses.shape == (6000,) and losses[-100:].mean() < losses[:100].mean()


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / "manifest.json").unlink(), r"manifest\.json is missing.*git checkout data/"),
        (lambda d: (d / "manifest.json").write_text("{not json"), r"manifest\.json is broken.*git checkout data/"),
        (lambda d: (d / "manifest.json").write_text("[]"), r"manifest\.json is broken.*python -m helpers\.train ar"),
        (
            lambda d: (d / "manifest.json").write_text("{}"),
            r"no entry in data/manifest\.json.*helpers\.train ar --threads 1",
        ),
        (
            lambda d: (d / "manifest.json").write_text(json.dumps({"ar.pt": {"sha256": "abc"}})),
            r"no valid sha256.*git checkout data/",
        ),
    ],
)
@pytest.mark.parametrize("read", [lambda: load_pretrained("ar"), lambda: training_losses("ar")])
def test_a_broken_or_missing_manifest_names_the_fix(private_data, damage, message, read):
    damage(private_data)
    with pytest.raises(CheckpointError, match=message):
        read()


def test_training_losses_of_a_missing_checkpoint_names_the_rebuild_command(private_data):
    (private_data / "mdlm.pt").unlink()
    with pytest.raises(CheckpointError, match=r"missing.*python -m helpers\.train mdlm --threads 1"):
        training_losses("mdlm")


def test_saving_into_data_records_the_sha256_in_the_manifest(private_data):
    path = small_checkpoint(private_data, "ar.pt")
    entry = json.loads((private_data / "manifest.json").read_text())["ar.pt"]
    assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() and entry["bytes"] == path.stat().st_size
    assert "mdlm.pt" in json.loads((private_data / "manifest.json").read_text())  # other entries kept
    assert not (private_data / "ar.pt.sha256").exists()
    assert training_losses("ar").tolist() == [3.0, 2.5]


def test_a_private_checkpoint_is_checked_against_its_sha256_file(tmp_path):
    path = small_checkpoint(tmp_path)
    load_checkpoint(path)
    flip_one_byte(path)
    with pytest.raises(CheckpointError, match=r"m\.pt does not match its sha256.*save_checkpoint"):
        load_checkpoint(path)


def test_a_private_checkpoint_without_a_sha256_file_is_refused(tmp_path):
    path = small_checkpoint(tmp_path)
    (tmp_path / "m.pt.sha256").unlink()
    with pytest.raises(CheckpointError, match=r"no m\.pt\.sha256 next to it.*expected_sha256"):
        load_checkpoint(path)
    (tmp_path / "m.pt.sha256").write_text("not a digest\n")
    with pytest.raises(CheckpointError, match=r"does not hold a sha256"):
        load_checkpoint(path)


def test_expected_sha256_is_checked_when_given(tmp_path):
    path = small_checkpoint(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "m.pt.sha256").unlink()
    assert load_checkpoint(path, expected_sha256=digest.upper()).config.vocab_size == 30
    with pytest.raises(CheckpointError, match=r"does not match its sha256"):
        load_checkpoint(path, expected_sha256="0" * 64)
    with pytest.raises(ValueError, match=r"expected_sha256 must be a sha256 hex digest \(64 characters 0-9a-f\)"):
        load_checkpoint(path, expected_sha256="abc")


def test_a_file_that_is_not_a_checkpoint_is_refused_even_with_a_matching_sha256(tmp_path):
    path = tmp_path / "notes.pt"
    path.write_bytes(b"hello")
    with pytest.raises(CheckpointError, match=r"not a checkpoint written by save_checkpoint"):
        load_checkpoint(path, expected_sha256=hashlib.sha256(b"hello").hexdigest())


def test_a_missing_private_checkpoint_is_a_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match=r"nothing\.pt is missing"):
        load_checkpoint(tmp_path / "nothing.pt")


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda p: load_checkpoint(None),
            r"path must be a str or a pathlib\.Path \(the checkpoint to load\), got None",
        ),
        (lambda p: load_checkpoint(3), r"path must be a str or a pathlib\.Path \(the checkpoint to load\), got 3"),
        (lambda p: save_checkpoint(Transformer(ModelConfig()), "ar", TrainConfig(), path=3), r"path must be .*got 3"),
        (lambda p: load_checkpoint(p, device="gpu7"), r"device must be None, a torch\.device or a name such as 'cpu'"),
        (lambda p: load_pretrained(None), r"kind must be one of \('ar', 'mdlm'\), got None"),
        (lambda p: training_losses("gpt"), r"kind must be one of \('ar', 'mdlm'\), got 'gpt'"),
        (
            lambda p: save_checkpoint("model", "ar", TrainConfig(), path=p),
            r"model must be a helpers\.decoding\.model\.Transformer",
        ),
        (
            lambda p: save_checkpoint(Transformer(ModelConfig(causal=False)), "ar", TrainConfig(), path=p),
            r"kind 'ar' needs causal=True",
        ),
        (
            lambda p: save_checkpoint(Transformer(ModelConfig()), "ar", {}, path=p),
            r"train_config must be a TrainConfig",
        ),
        (
            lambda p: save_checkpoint(Transformer(ModelConfig()), "ar", TrainConfig(), path=p, losses=[[1.0]]),
            r"losses must be 1-D",
        ),
    ],
)
def test_bad_arguments_name_what_is_allowed(tmp_path, call, message):
    with pytest.raises(ValueError, match=message):
        call(tmp_path / "m.pt")


# ---------------------------------------------------------------- no import cycle between checkpoints and train


def imports_of(module: str) -> set[str]:
    tree = ast.parse((Path(checkpoints.__file__).parent / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_checkpoints_does_not_import_train():
    assert "helpers.train" not in imports_of("checkpoints")
    assert "helpers.decoding.checkpoints" not in imports_of("train_config")
    assert "helpers.train" not in imports_of("train_config")
    code = "import sys, helpers.decoding.checkpoints; assert 'helpers.train' not in sys.modules; import helpers.train"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(checkpoints.__file__).parent.parent)


def test_train_still_exports_the_shared_names():
    from helpers import train
    from helpers.decoding import train_config

    assert train.TrainConfig is train_config.TrainConfig and train.KINDS == checkpoints.KINDS == ("ar", "mdlm")
    assert train.check_kind is train_config.check_kind
