"""helpers.bench's results as text: the table `python -m helpers.bench` prints, and the few
lines notebook 05 shows of a reference result (data/bench_*.json). A section that a failed or
skipped stage left empty prints as such, with the errors at the end."""

from __future__ import annotations


def format_report(result: dict) -> str:
    """The dict from run_bench as a readable table."""
    m = result["machine"]
    lines = [
        f"helpers.bench on {m['device']}: {m['cpu']}, torch {m['torch']}"
        + (" (quick)" if result["settings"]["quick"] else "")
    ]
    r, d = result.get("roofs"), result.get("decode")
    lines += _roof_lines(r, result["settings"]["repeat"], m) if r else [f"Roofs: {_missing(result, 'roofs')}"]
    lines += _decode_lines(d, result.get("ops_per_step")) if d else [f"Decode step: {_missing(result, 'decode')}"]
    if result.get("width_sweep"):
        lines += _width_lines(result["width_sweep"])
    else:
        lines.append(f"Diffusion passes over W positions: {_missing(result, 'width_sweep')}")
    lines += _tiny_lines(result.get("tiny")) if result.get("tiny") else [f"Tiny models: {_missing(result, 'tiny')}"]
    lines += _format_lines(result.get("formats"), d["shape"] if d else "")
    lines += _graph_lines(result.get("graphs"), result.get("matmul_sweep"))
    for e in result.get("errors") or []:
        lines.append(f"Stage {e['stage']} failed: {e['exception']}")
    return "\n".join(lines)


def _missing(result: dict, stage: str) -> str:
    """Why a stage left its section empty, from the run's stage list."""
    for s in result.get("stages") or []:
        if s["stage"] == stage:
            return {"failed": "failed (see below)", "skipped": f"skipped ({s.get('reason', '')})"}.get(s["status"], "-")
    return "not run"


def _roof_lines(r: dict, repeat: int, m: dict) -> list[str]:
    return [
        f"Roofs: medians of {repeat} runs, arrays of {r['array_mib']} MiB (last-level cache {m['llc_mib']} MiB)",
        f"  STREAM copy      {r['copy_gb_s']:9.2f} GB/s     (IQR {r['copy_iqr_gb_s']})",
        f"  STREAM triad     {r['triad_gb_s']:9.2f} GB/s     (IQR {r['triad_iqr_gb_s']})",
        f"  GEMV y = W x     {r['gemv_gb_s']:9.2f} GB/s     (IQR {r['gemv_iqr_gb_s']}; {r['gemv_dtype']}, batch 1, "
        "4096 columns)",
        f"  matmul peak      {r['matmul_gflop_s']:9.1f} GFLOP/s  (IQR {r['matmul_iqr_gflop_s']}; {r['matmul_dtype']}, "
        f"n = {r['matmul_n']})",
        f"  ridge point      {r['ridge_flop_per_byte']:9.2f} FLOP/B   = matmul peak / GEMV bandwidth "
        f"({r['ridge_stream_flop_per_byte']} with the STREAM bandwidth)",
    ]


def _decode_lines(d: dict, ops: dict | None) -> list[str]:
    lines = [
        f"Decode step: {d['shape']}, random weights, {d['dtype']}, vocabulary {d['vocab_size']}, {d['layout']} "
        f"layout, batch {d['batch']}, {d['context']} positions in the KV cache",
        f"  measured         {d['measured_ms_eager']:9.3f} ms/token (IQR {d['measured_iqr_ms_eager']} ms; eager: "
        f"{d['eager_contains']})",
    ]
    if d["graph_ms"] is not None:
        lines.append(
            f"  as a CUDA graph  {d['graph_ms']:9.3f} ms/token (IQR {d['graph_iqr_ms']}; launch overhead "
            f"{d['launch_overhead_ms']} ms; logits identical to eager: {d['graph_exact']})"
        )
    if ops:
        lines.append(f"  operations       {ops['total']:9d} per step, {ops['compute']} of them compute (not views)")
    lines += [
        f"  model's GEMVs    {d['gemv_model_gb_s_eager']:9.2f} GB/s     (its weight matrices times one vector, back to "
        "back, eager)",
        f"  predicted        {d['predicted_ms']:9.3f} ms/token (roofline with the model's GEMV bandwidth"
        + (f", {d['gemv_model_graph_gb_s']} GB/s as a graph" if d["gemv_model_graph_gb_s"] is not None else "")
        + f"; error {d['error_pct']:+.1f} %)",
        f"  predicted        {d['predicted_generic_ms']:9.3f} ms/token (with the single large GEMV above; "
        f"error {d['error_generic_pct']:+.1f} %)",
        f"  bytes per step   {d['bytes_per_step'] / 1e6:9.1f} MB -> {d['achieved_gb_s']} GB/s achieved "
        f"({d['timed_as']}) = "
        f"{100 * d['vs_gemv']:.0f} % of the model's GEMVs; MBU {100 * d['mbu_vs_stream']:.0f} % of STREAM",
    ]
    if d["datasheet_device"] is not None:
        graph = d["mbu_vs_datasheet_graph"]
        lines.append(
            f"  MBU vs datasheet {100 * d['mbu_vs_datasheet_eager']:8.1f} % eager"
            + (f", {100 * graph:.1f} % as a graph" if graph is not None else "")
            + f" (of {d['datasheet_gb_s']:g} GB/s, {d['datasheet_device']} in data/hardware.csv)"
        )
    return lines


def _width_lines(points: list) -> list[str]:
    graph = points[0]["timed_as"] == "cuda graph"
    lines = [
        "One diffusion pass over W positions (bidirectional, same weights) in AR decode steps"
        + (", both as CUDA graphs (eager in brackets):" if graph else ":"),
        "      W   pass ms   measured ratio   roofline ratio   FLOP/B",
    ]
    for p in points:
        eager = f"   ({p['measured_ms_eager']:.2f} ms, ratio {p['ratio_eager']:.2f})" if graph else ""
        lines.append(
            f"  {p['width']:5d} {p['measured_ms']:9.2f} {p['ratio']:16.2f} {p['predicted_ratio']:17.2f} "
            f"{p['intensity']:8.2f}{eager}"
        )
    return lines


def _tiny_lines(t: dict) -> list[str]:
    lines = [
        f"Tiny model, N = {t['n_tokens']} new tokens, greedy, batch 1 ({t['params']:,} parameters)",
        f"  note: {t['note']}",
        "  decoder          passes   measured ms   ms/pass   roofline ms   (eager)",
    ]
    for run in (t["ar"], t["dllm"]):
        lines.append(
            f"  {run['decoder']:15s} {run['passes']:7d} {run['measured_ms_eager']:13.2f} "
            f"{run['ms_per_pass_eager']:9.3f} "
            f"{run['predicted_ms']:13.3f}"
        )
    lines.append(f"  dLLM is {t['dllm_speedup_eager']:.2f}x faster than AR here (< 1: slower; both eager)")
    return lines


def _format_lines(formats: list | None, shape: str) -> list[str]:
    if not formats:
        return []
    lines = [f"One decode step ({shape}) with its weights in three formats, timed in turn:"]
    lines += ["  format   measured ms   bytes/step   time vs fp32   bytes vs fp32"]
    base = formats[0]
    for f in formats:
        if f["measured_ms"] is None:
            lines.append(f"  {f['format']:6s}   not timed: {f['note']}")
            continue
        lines.append(
            f"  {f['format']:6s} {f['measured_ms']:13.2f} {f['bytes_per_step'] / 1e6:10.1f} MB "
            f"{f['measured_ms'] / base['measured_ms']:14.2f} {f['bytes_per_step'] / base['bytes_per_step']:15.2f}"
        )
    return lines


_EXACT = {True: "bitwise", False: "differs", None: "-"}  # graph_exact: are the graph's logits the eager step's?


def _graph_lines(graphs: list | None, matmuls: list | None) -> list[str]:
    lines = []
    if graphs:
        lines += [
            "Decode step by shape, batch 1: eager (a launch per operation) against one CUDA graph",
            "  shape               params  compute  datasheet  roofline     eager     graph   MBU of datasheet"
            "  graph =",
            "                               ops      ms (100%)  ms (GEMV)    ms        ms      eager   graph    eager",
        ]
        for g in graphs:
            d = g["decode"]
            sheet = "-" if d["datasheet_gb_s"] is None else f"{d['bytes_per_step'] / d['datasheet_gb_s'] / 1e6:.4f}"
            graph_ms = "-" if d["graph_ms"] is None else f"{d['graph_ms']:.4f}"
            mbu = "  ".join("    -" if x is None else f"{100 * x:4.0f}%" for x in (
                d["mbu_vs_datasheet_eager"], d["mbu_vs_datasheet_graph"]))  # fmt: skip
            lines.append(
                f"  {d['shape']:18s} {g['params'] / 1e6:7.1f}M {g['compute_ops_per_step']:6d} {sheet:>10s} "
                f"{d['predicted_ms']:10.4f} {d['measured_ms_eager']:9.4f} {graph_ms:>9s}   {mbu}"
                f"  {_EXACT[d['graph_exact']]:>7s}"
            )
    if matmuls:
        lines.append("Matmul roof by size: " + ", ".join(f"n = {m['n']}: {m['gflop_s']:.0f} GFLOP/s" for m in matmuls))
    return lines


def reference_summary(result: dict) -> str:
    """A run_bench result (a data/bench_*.json) in a few lines: what it ran on and how it was set,
    the roofs, and for each shape its datasheet time (bytes / datasheet bandwidth), its roofline
    (with the model's own GEMV bandwidth), its eager and CUDA-graph times and their MBU."""
    m, r = result["machine"], result.get("roofs")
    setup = f"{m['device']}, torch {m['torch']}"
    if "cuda" in m:
        setup += f", CUDA {m['cuda']}, driver {m.get('driver_version', '?')}, TF32 matmuls {m['tf32_matmul']}"
    lines = [f"{setup} ({result['command']})"]
    if r:
        lines.append(
            f"  roofs: STREAM {max(r['copy_gb_s'], r['triad_gb_s']):.0f} GB/s, GEMV {r['gemv_gb_s']:.0f} GB/s "
            f"({r['gemv_dtype']}), matmul {r['matmul_gflop_s'] / 1e3:.1f} TFLOP/s "
            f"({r['matmul_dtype']}, n = {r['matmul_n']})"
        )
    graphs = result.get("graphs") or []
    if not graphs and result.get("decode"):
        lines += _decode_lines(result["decode"], result.get("ops_per_step"))
    lines += [f"  stage {e['stage']} failed: {e['exception']}" for e in result.get("errors") or []]
    return "\n".join(lines + _graph_lines(graphs, result.get("matmul_sweep")))
