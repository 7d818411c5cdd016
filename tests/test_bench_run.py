"""helpers.bench as a run that cannot be wasted: each stage in isolation, its JSON rewritten after
every stage, the width sweep on graphs, eager fields named so, a warm-up and a snapshot around the
stages, and the prepared reference command end to end on the CPU."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_gpu import roofs

from helpers.bench import cli, graphs, stages
from helpers.bench.decode import DecodeStep, decode_step
from helpers.bench.roofs import BenchSettings
from helpers.bench.rows import as_json
from helpers.bench.tiny import DecoderRun, TinyRun
from helpers.bench.widths import WidthPoint, width_sweep
from helpers.decoding.model import ModelConfig, gpt2_small_config
from helpers.measure.measurement import Measurement
from helpers.roofline.costs import decode_step_cost
from helpers.roofline.fixtures import bidirectional_twin, random_model
from helpers.roofline.hardware import get_hardware

ROOT = Path(__file__).resolve().parents[1]
SMALL = ModelConfig(vocab_size=50, max_len=40, d_model=16, n_layer=2, n_head=2)
FAST = BenchSettings(
    warmup=0, repeat=2, decode_repeat=2, width_repeat=1, tiny_repeat=1, widths=(1, 4), format_rounds=1,
    warm_up_s=0.0,
)  # fmt: skip
RUN = dict(decode_config=SMALL, context=8, n_tokens=8, steps=2, settings=FAST)


@pytest.fixture
def fake_gpu_run(fake, monkeypatch):
    """run_bench on the fake GPU, with fixed roofs, stage 6 on the tiny shape only, small matmuls."""
    monkeypatch.setattr(stages, "measure_machine", lambda device=None, settings=None: roofs())
    monkeypatch.setattr(stages, "GPU_SHAPES_BESIDE", ("tiny (0.8M)",))
    monkeypatch.setattr(graphs, "MATMUL_SWEEP", (32,))
    return fake


def test_a_failing_stage_does_not_lose_the_others(fake_gpu_run, monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(stages, "eager_and_graph", broken)  # stage 6 raises
    files = cli.RunFiles(tmp_path)
    seen = []
    result = stages.run_bench("cpu", on_stage=lambda r: (files.write(r), seen.append(len(r["stages"]))), **RUN)
    status = {s["stage"]: s["status"] for s in result["stages"]}
    assert status == {
        "roofs": "ok", "decode": "ok", "width_sweep": "ok", "tiny": "ok", "formats": "skipped", "graphs": "failed",
        "matmul_sweep": "ok",
    }  # fmt: skip
    [error] = result["errors"]
    assert error["stage"] == "graphs" and "illegal memory access" in error["exception"]
    assert "Traceback" in error["traceback"] and "broken" in error["traceback"]
    assert seen == [1, 2, 3, 4, 5, 6, 7]  # the JSON was handed over after every stage
    on_disk = json.loads(files.json.read_text())
    assert on_disk["roofs"] and on_disk["decode"] and on_disk["width_sweep"] and on_disk["tiny"]
    assert on_disk["errors"][0]["stage"] == "graphs" and on_disk["matmul_sweep"]
    log = files.log_path.read_text()
    assert "stage graphs failed" in log and "illegal memory access" in log and "decode: ok" in log


def test_a_stage_that_needs_a_failed_one_is_skipped_with_the_reason(fake_gpu_run, monkeypatch):
    monkeypatch.setattr(stages, "time_shape", lambda *a, **k: 1 / 0)  # stage 2 raises
    result = stages.run_bench("cpu", **RUN)
    entry = {s["stage"]: s for s in result["stages"]}
    assert entry["decode"]["status"] == "failed" and entry["width_sweep"]["status"] == "skipped"
    assert entry["width_sweep"]["reason"] == "needs decode, which did not finish"
    assert entry["tiny"]["status"] == "ok" and result["decode"] is None
    assert "Decode step: failed" in stages_text(result)


def stages_text(result: dict) -> str:
    from helpers.bench.text import format_report

    return format_report(result)


def test_the_command_line_writes_every_file_and_exits_non_zero_on_a_failure(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(stages, "measure_machine", lambda device=None, settings=None: 1 / 0)
    code = cli.main(["--device", "cpu", "--smoke", "--json", "--out", str(tmp_path), "--name", "run"])
    assert code == 1
    printed = json.loads(capsys.readouterr().out)  # --json to stdout as before
    on_disk = json.loads((tmp_path / "run.json").read_text())
    assert printed == on_disk and on_disk["errors"][0]["stage"] == "roofs"
    assert "ZeroDivisionError" in (tmp_path / "run.log").read_text()
    assert {s["stage"]: s["status"] for s in on_disk["stages"]}["formats"] == "ok"  # needs no roofs: it ran


def test_warm_up_first_and_a_snapshot_after_every_stage(fake_gpu_run):
    result = stages.run_bench("cpu", **{**RUN, "settings": dataclasses.replace(FAST, warm_up_s=0.5)})
    log = fake_gpu_run.log
    assert log.index("warm_up") < log.index("record")  # before the first timed call
    assert result["warm_up_s"] == 0.5 and result["gpu_start"]["snapshot"] == 1
    ran = [s for s in result["stages"] if s["status"] != "skipped"]
    assert [s["gpu_after"]["snapshot"] for s in ran] == list(range(2, 2 + len(ran)))


def test_the_width_sweep_on_a_gpu_replays_one_graph_per_width(fake):
    model = random_model(SMALL)
    step = decode_step(model, roofs=roofs(), context=8, warmup=1, repeat=2)
    before = fake.captures
    points = width_sweep(bidirectional_twin(model), [1, 4, 16], roofs=roofs(), step=step, repeat=3)
    assert fake.captures - before == 3  # one capture per width, on a fixed canvas
    assert all(n >= 3 for n in fake.replays_of[before:])  # each width's time comes from its replays
    for p in points:
        assert p.timed_as == "cuda graph" and p.eager is not None
        assert p.ratio == pytest.approx(p.measured.si / step.graphed.si)  # graph against graph
        assert p.ratio_eager == pytest.approx(p.eager.si / step.measured.si)
    assert as_json(points[0])["timed_as"] == "cuda graph"
    with pytest.raises(ValueError, match="graph=True needs a CUDA device"):
        width_sweep(bidirectional_twin(model), [1], roofs=roofs(), step=dataclasses.replace(step, graphed=None),
                    graph=True)  # fmt: skip


# ----------------------------------------------------------------------------- *_eager: named so


def _ms(x: float) -> Measurement:
    return Measurement(x, "s", 0.0, [x])


def _gb(x: float) -> Measurement:
    return Measurement(x, "GB/s", 0.0, [x])


def _changed(a: dict, b: dict, prefix: str = "") -> set[str]:
    out = set()
    for key in a:
        if isinstance(a[key], dict):
            out |= _changed(a[key], b[key], f"{prefix}{key}.")
        elif a[key] != b[key]:
            out.add(prefix + key)
    return out


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _scaled(inputs: dict, factors) -> dict:
    """Each input times its own factor (distinct factors: a ratio of two inputs moves too)."""
    scaled = zip(inputs.items(), factors[: len(inputs)], strict=True)
    return {k: Measurement(v.value * f, v.unit, 0.0, [v.value * f]) for (k, v), f in scaled}


def check_names(make, eager: dict, graph: dict, both=()):
    """Perturb the eager inputs, then the graph inputs, of `make(**inputs)`; every field that moves
    with the eager inputs alone must end in _eager, and none that ends so may move with the graph."""
    base = as_json(make(**eager, **graph))
    with_eager = _changed(base, as_json(make(**_scaled(eager, (2, 5, 7)), **graph)))
    with_graph = _changed(base, as_json(make(**eager, **_scaled(graph, (3, 11, 13)))))
    eager_only = {f for f in with_eager - with_graph if _leaf(f) not in both}
    assert eager_only and all(_leaf(f).endswith("_eager") for f in eager_only), sorted(eager_only)
    assert not {f for f in with_graph if _leaf(f).endswith("_eager")}, "an *_eager field moved with the graph"
    return eager_only


def test_every_eager_based_field_is_named_so():
    cost = decode_step_cost(gpt2_small_config(), context=512, bytes_per_param=2)  # 250 MB: MBUs far from 0

    def step(measured, gemv, graphed, gemv_graphed):
        return DecodeStep("s", "bfloat16", 1, 8, measured, cost, gemv, 1e-4, 1e-4, 4e12, graphed, gemv_graphed,
                          True, get_hardware("NVIDIA H200"))  # fmt: skip

    eager = check_names(step, dict(measured=_ms(3e-4), gemv=_gb(2000.0)),
                        dict(graphed=_ms(1e-4), gemv_graphed=_gb(3000.0)), both=("launch_overhead_ms",))  # fmt: skip
    assert {"measured_ms_eager", "achieved_gb_s_eager", "mbu_vs_stream_eager", "mbu_vs_datasheet_eager",
            "gemv_model_gb_s_eager", "vs_gemv_eager"} <= eager  # fmt: skip

    def point(eager, step_eager, measured, step_measured):
        return WidthPoint(16, measured, 1e-4, step_measured.si, 1e-4, 8.0, eager, step_eager.si)

    check_names(point, dict(eager=_ms(2e-3), step_eager=_ms(1.5e-3)),
                dict(measured=_ms(2e-4), step_measured=_ms(1e-4)))  # fmt: skip

    def tiny(ar, dllm):  # the course's decoding loops: eager only, so every time-based field says so
        return TinyRun("n", 8, 2, 10, DecoderRun("AR", ar, 8, 1e-3), DecoderRun("dLLM", dllm, 2, 1e-3))

    fields = check_names(tiny, dict(ar=_ms(0.5), dllm=_ms(0.2)), {})
    assert "dllm_speedup_eager" in fields and "ar.ms_per_pass_eager" in fields


# ----------------------------------------------------------------------------- the prepared command


def test_the_reference_command_runs_end_to_end_on_the_cpu(tmp_path):
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "helpers.bench.reference", str(tmp_path), "--quick", "--device", "cpu"],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["bench.json", "bench.log", "environment.json", "reference.json", "repeat.json", "repeat.log",
                     "smoke.json"]  # fmt: skip
    assert len(files) <= 8  # what a lent GPU machine sends back
    summary = json.loads((tmp_path / "reference.json").read_text())
    assert [p["part"] for p in summary["parts"]] == ["environment", "smoke", "bench", "repeat"] and summary["ok"]
    assert {r["key"] for r in summary["repeatability"]} >= {"copy_gb_s", "measured_ms_eager"}
    smoke = json.loads((tmp_path / "smoke.json").read_text())
    assert [c["status"] for c in smoke["checks"]] == ["ok"] * 4
    env = json.loads((tmp_path / "environment.json").read_text())
    assert env["torch"] and env["numpy"] and "python" in env
    bench = json.loads((tmp_path / "bench.json").read_text())
    assert bench["errors"] == [] and "--smoke" in bench["command"]
    assert seconds < 90, f"the CPU check of the reference run took {seconds:.0f} s"


def test_a_part_that_hangs_is_cut_off_and_the_rest_still_runs(tmp_path, monkeypatch):
    from helpers.bench import reference

    def commands(folder, device, quick):
        py = [sys.executable, "-c"]
        return {"environment": [*py, "import time; time.sleep(30)"], "smoke": [*py, "print('fine')"],
                "bench": [*py, "raise SystemExit(3)"], "repeat": [*py, "pass"]}  # fmt: skip

    monkeypatch.setattr(reference, "part_commands", commands)
    summary = reference.reference(tmp_path, limits={"environment": 1, "smoke": 20, "bench": 20, "repeat": 20})
    by = {p["part"]: p for p in summary["parts"]}
    assert by["environment"]["timed_out"] and by["smoke"]["returncode"] == 0 and by["bench"]["returncode"] == 3
    assert by["repeat"]["returncode"] == 0 and not summary["ok"]
    assert json.loads((tmp_path / "reference.json").read_text())["parts"][2]["returncode"] == 3
