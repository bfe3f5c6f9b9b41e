"""The GPU command's report: ``gpu.json`` (what ``benchmarks/gpu.py`` measured, section by section) shown as
``gpu.md`` (``markdown``), and an earlier call's report merged with a later one's (``merged``)."""
from __future__ import annotations

NO_ACCUMULATION = (
    "not retried with gradient accumulation: the image-text contrastive loss takes its negatives from the batch, so "
    "micro-batches of 256 accumulated to 512 would train another loss (each pair against 255 negatives, not 511); "
    "the recipe's fallback is 2 GPUs × 256 with the features gathered across them, the thesis's own split")


def _fmt(x, spec: str, unit: str = "") -> str:
    return "—" if x is None else f"{x:{spec}}{unit}"


def _options(row: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in row.get("options", {}).items() if v is not None)


def _step_row(r: dict) -> str:
    name = f"batch {r['batch']}, {'compiled' if r['compiled'] else 'eager'}"
    if r.get("out_of_memory"):
        reached = f"out of memory at {_fmt(r.get('peak_memory_gib'), '.1f', ' GiB')}"
        return f"| {name} | out of memory | — | — | — | {reached} of {_fmt(r.get('capacity_gib'), '.1f', ' GiB')} | " \
               f"{_options(r)} |"
    return (f"| {name} | {r['pairs_per_s']:.0f} | {r['ms_per_step']:.1f} | "
            f"{_fmt(r.get('mfu') and 100 * r['mfu'], '.0f', ' %')} | {100 * r['teacher_share']:.0f} % | "
            f"{_fmt(r['peak_memory_gib'], '.1f', ' GiB')} | {_options(r)} |")


def steps(report: dict) -> list[str]:
    rows = report.get("steps") or []
    if not rows:
        return []
    lines = ["| step (synthetic tensors) | pairs/s | ms/step | MFU | teacher share | peak memory | ran with |",
             "|---|---:|---:|---:|---:|---:|---|"] + [_step_row(r) for r in rows]
    lines += [f"\nbatch {r['batch']} ({'compiled' if r['compiled'] else 'eager'}) did not fit in one GPU's memory: "
              f"{NO_ACCUMULATION}." for r in rows if r.get("out_of_memory")]
    return lines


def step_rate(report: dict, batch: int | None) -> dict | None:
    """The eager step row at ``batch`` that was measured (else the first eager one measured), or None."""
    rows = [r for r in report.get("steps") or [] if not r["compiled"] and not r.get("out_of_memory")]
    return next((r for r in rows if r["batch"] == batch), rows[0] if rows else None)


def data_loader(report: dict) -> list[str]:
    d = report.get("data_loader")
    if not d:
        return []
    sizes = " and ".join(f"{w} × {h}" for w, h in d["sizes_px"])
    line = (f"data loader (webdataset shards of {sizes} px JPEGs → "
            f"TrainPairs' DataLoader, {d['workers']} workers, {d['decoder']} decoder, both views at {d['view_px']} px, "
            f"batches of {d['batch']} copied to the device): **{d['pairs_per_s']:.0f} pairs/s** end to end "
            f"({d['batches'] - 1} batches after the first, which took {d['first_batch_s']:.1f} s)")
    step = step_rate(report, d["batch"])
    if step:
        ratio = d["pairs_per_s"] / step["pairs_per_s"]
        line += (f"; the training step at batch {step['batch']} (eager) consumes {step['pairs_per_s']:.0f} pairs/s: "
                 f"the data path delivers {ratio:.2f} × that, "
                 f"{'it keeps up' if ratio >= 1 else 'it is the limit'}")
    return ["", line]


def cuda_tests(report: dict) -> list[str]:
    c = report.get("cuda_tests")
    if not c:
        return []
    lines = ["", f"cuda tests (`{c['command']}`, exit code {c['exit_code']}):", "",
             "| test | outcome | seconds | message |", "|---|---|---:|---|"]
    lines += [f"| {t['test']} | {t['outcome']} | {t['seconds']:.1f} | {t['message'].replace('|', '/')} |"
              for t in c["tests"]]
    return lines


def demo_run(report: dict) -> list[str]:
    d = report.get("demo_run")
    if not d:
        return []
    train = d["train"]
    lines = ["", f"demo run on the device (`{d['command']}`): {d['seconds']:.0f} s in all, training "
                 f"{train['time_s']:.0f} s ({train['pairs_per_s']:.0f} pairs/s); ran with {_options(d)}; "
                 f"tolerance: {d['rule']}; **{d['within']} of {d['compared']} metrics within**", "",
             "| metric | ours | committed (CPU) | difference | tolerance | within |", "|---|---:|---:|---:|---:|---|"]
    shown = [r for r in d["metrics"] if r["headline"] or r["within"] is False]
    lines += [f"| {r['metric']} | {_fmt(r['ours'], '.3f')} | {r['committed']:.3f} | {_fmt(r['diff'], '.4f')} | "
              f"{_fmt(r['tolerance'], '.4f')} | {'—' if r['within'] is None else 'yes' if r['within'] else 'NO'} |"
              for r in shown]
    return lines


def notebook(report: dict) -> list[str]:
    nb = report.get("notebook")
    if not nb:
        return []
    lines = ["", f"notebook 03 on the device: {_fmt(nb.get('seconds'), '.0f', ' s')}, "
                 f"{nb.get('runs_done', 0)} runs finished"]
    return lines + [f"- {v}: " + ", ".join(f"{k} {x:.2f}" for k, x in row.items())
                    for v, row in nb.get("table2_means", {}).items()]


def markdown(report: dict) -> str:
    lines = [f"# GPU measurements: {report['device']}, torch {report['torch']}, {report['date']}", "",
             f"preset {report['preset']}; the timed step is the recipe's training step (docs/full_scale.md)", "",
             "| section | status | seconds | budget s |", "|---|---|---:|---:|"]
    lines += [f"| {name} | {s['status']} | {s['seconds']:.0f} | {s['budget_s']:.0f} |"
              for name, s in report["sections"].items()]
    peak = _fmt(report.get("peak_tflops"), ".3g", " TFLOP/s")
    lines += ["", f"{report.get('peak_dtype', '')} matmul peak: {peak}", ""] + steps(report)
    if report.get("data"):
        lines += ["", "| data path | images/s (both views) |", "|---|---:|"]
        lines += [f"| {k} | {v:.0f} |" for k, v in report["data"].items()]
    lines += data_loader(report) + cuda_tests(report) + demo_run(report) + notebook(report)
    lines += [""] + [f"error in {e['section']}: {e['error']}" for e in report["errors"]]
    if report.get("sticky"):
        lines += [f"stopped: {report['sticky']}"]
    lines += [f"skipped: {s}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def merged(earlier: dict, report: dict, where: str) -> dict:
    """``report`` (this call's, nothing measured yet) on top of an earlier call's: its sections, steps, data and
    notebook kept; refused when it was measured on another device (their numbers would sit in one table)."""
    if earlier.get("device") != report["device"]:
        raise SystemExit(f"gpu.py: --merge {where} was measured on {earlier.get('device')!r}, this call runs on "
                         f"{report['device']!r}; merge only calls on the same device")
    calls = earlier.get("calls") or [{k: earlier.get(k) for k in ("date", "torch", "preset")}]
    return {**earlier, "calls": calls + [{k: report[k] for k in ("date", "torch", "preset")}], "sticky": None}
