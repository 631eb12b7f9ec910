"""Where does ``bnnzoo demo``'s time go?  Each net's sampling and diagnosis timed alone, one after the other, in one
process (run it bound to one core with one XLA thread to get each piece's cost on a core of its own):

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" taskset -c 0 \\
        python benchmarks/demo_pieces.py --seed 0 [--entries sigmoidal] [--out-dir DIR]

Calls the demo's own steps (``bnnzoo.cli._demo_sample`` and ``_demo_report``, with ``run_demo``'s defaults) for each
net and appends one JSON line per net to ``--out`` (default ``benchmarks/results/demo_pieces.jsonl``): the wall and
CPU seconds of its sampling and of its diagnosis (report, figures, trace plot), the load average around them, its
sampler settings, health, certification (where certified) and verdicts.  The two-process demo runs these pieces in
two queues (``run_demo``); this script does not time that.
"""

from __future__ import annotations

import argparse
import inspect
import json
import resource
import tempfile
import time
from pathlib import Path

from bnnzoo import azcompat, cli
from bnnzoo.inference.convert import run_config
from bnnzoo.inference.health import sampler_health

HERE = Path(__file__).resolve().parent


def _load() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _theory_lines(path: Path) -> list[str]:
    """The comparison lines of a report's theory section (report.txt)."""
    lines = path.read_text().splitlines()
    start = next((i for i, l in enumerate(lines) if l.strip() == "— theory"), None)
    if start is None:
        return []
    out = []
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        out.append(line.strip())
    return out


def _timed(fn, *args):
    t0, c0 = time.time(), _cpu()
    res = fn(*args)
    return res, round(time.time() - t0, 1), round(_cpu() - c0, 1)


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--entries", default="deep_linear,sigmoidal,relu", help="nets, comma-separated")
    p.add_argument("--out-dir", default=None, help="folder for the runs and reports (default: a temporary one)")
    p.add_argument("--out", default=str(HERE / "results" / "demo_pieces.jsonl"))
    a = p.parse_args(argv)

    defaults = {k: v.default for k, v in inspect.signature(cli.run_demo).parameters.items()
                if v.default is not inspect.Parameter.empty}
    settings = {k: defaults[k] for k in ("width", "P", "chains", "warmup", "relu_size", "relu_warmup", "samples",
                                         "sampler", "sigmoidal_temperature", "sigmoidal_size", "sigmoidal_warmup")}
    settings.update(seed=a.seed, progress=False)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(a.out_dir or tmp)
        out.mkdir(parents=True, exist_ok=True)
        for name in a.entries.split(","):
            load0 = _load()
            res, s_wall, s_cpu = _timed(cli._demo_sample, name, out, settings)
            rep, r_wall, r_cpu = _timed(cli._demo_report, name, out)
            idata = azcompat.from_netcdf(res["netcdf"])
            cert, h = run_config(idata).get("certification"), sampler_health(idata)
            rows.append(dict(net=name, seed=a.seed, sampler=res["sampler"], width=res["width"], P=res["P"],
                             temperature=res["temperature"], chains=settings["chains"], warmup=res["warmup"],
                             draws=res["draws"], start_families=res.get("start_families", []),
                             sample_wall_s=s_wall, sample_cpu_s=s_cpu, report_wall_s=r_wall, report_cpu_s=r_cpu,
                             load_before=load0, load_after=_load(),
                             health=h.status, relaxing=list(h.relaxing), criterion=h.criterion,
                             families_agree=None if not cert else bool(cert["agree"]),
                             not_compared=[] if not cert else list(cert.get("not_compared", [])),
                             coding_scheme=rep["coding_scheme"], verdicts=rep["verdicts"],
                             theory=_theory_lines(Path(rep["report"]) / "report.txt")))
            with open(a.out, "a") as fh:
                fh.write(json.dumps(rows[-1]) + "\n")
            print(json.dumps(rows[-1], indent=1), flush=True)
    return rows


if __name__ == "__main__":
    main()
