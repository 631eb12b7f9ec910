"""``write_report``: diagnose one or several runs and write each report as JSON, text and figures.

It lives with the figures (not in :mod:`bnnzoo.diagnostics`) so that data flows one way: the diagnostics compute
reports, the plots draw and write them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import azcompat
from .._record import jsonable
from ..diagnostics.report import diagnose
from ..diagnostics.run import read_run
from .figures import save_figures

__all__ = ["write_report", "summary_entry", "write_summary"]


def _runs(idata_or_paths) -> dict[str, object]:
    """Normalise write_report's input to {name: run}."""
    if isinstance(idata_or_paths, dict):
        return dict(idata_or_paths)
    if isinstance(idata_or_paths, (str, os.PathLike)) or azcompat.is_idata(idata_or_paths):
        idata_or_paths = [idata_or_paths]
    out = {}
    for i, x in enumerate(idata_or_paths):
        if isinstance(x, (str, os.PathLike)):
            name = Path(x).stem
        else:
            try:
                cfg = json.loads(azcompat.get_attrs(x).get("bnnzoo_config", "{}"))
            except (TypeError, ValueError):
                cfg = {}
            name = f"{cfg.get('model', 'run')}_L{cfg.get('model_kwargs', {}).get('depth', 1)}_seed{cfg.get('seed', i)}"
        while name in out:
            name += f"_{i}"
        out[name] = x
    return out


def _write_one(name: str, run, outdir: Path, figures: bool, save_netcdf: bool, verbose: bool, entry,
               traces: dict) -> dict:
    """Diagnose one run and write its folder ``outdir/name`` (what :func:`write_report` does per run); returns
    {"report", "files"}.  The run is read once: the :class:`~bnnzoo.diagnostics.run.Run` diagnosed is the one the
    figures draw."""
    idata = azcompat.read_run_file(run, "run") if isinstance(run, (str, os.PathLike)) else run
    the_run = read_run(idata, entry=entry)
    rep = diagnose(the_run, store=True, verbose=verbose)
    d = outdir / name
    d.mkdir(parents=True, exist_ok=True)
    files = []
    p = d / "report.json"
    p.write_text(rep.to_json(indent=1))
    files.append(str(p))
    p = d / "report.txt"
    p.write_text(repr(rep) + "\n")
    files.append(str(p))
    if figures:
        files += save_figures(the_run, d, report=rep)
        for fname, (var_names, coords) in traces.items():
            p = d / fname
            azcompat.save_plot(azcompat.plot_trace(idata, var_names=var_names, coords=coords), p)
            files.append(str(p))
    if save_netcdf:
        files.append(azcompat.to_netcdf(idata, d / "run.nc"))
    return {"report": rep, "files": files}


def write_report(idata_or_paths, outdir, *, figures: bool = True, save_netcdf: bool = False,
                 verbose: bool = False, entry=None, traces: dict | None = None, summary: bool = True) -> dict:
    """Diagnose one or several runs and write, per run, ``<outdir>/<name>/report.json``, ``report.txt`` (the
    report's repr) and the figures of :func:`bnnzoo.plots.save_figures` (paper-style figures for the
    fully-connected nets, unit-layer, kernel and theory figures for the other entries), plus
    ``<outdir>/summary.json`` with every run's verdicts and numbers.

    Parameters
    ----------
    idata_or_paths : a run, a NetCDF path, a list of them, or {name: run}.
    outdir : folder to write into (created if needed).
    figures : also write the figures.
    save_netcdf : also write ``<name>/run.nc`` with the diagnostics groups added.
    verbose : print the time of each diagnostic.
    entry : zoo entry name (or ZooEntry) to diagnose the runs as (runs of a model of one's own; see
        :func:`bnnzoo.diagnose`); None: each run's own entry.
    traces : {file name: (var_names, coords)}: ArviZ trace plots to write beside each run's figures (with
        ``figures``), e.g. ``{"trace_a.png": (["a"], {"neuron": [0, 1, 2]})}``.
    summary : also write ``<outdir>/summary.json`` (:func:`write_summary`).

    Returns
    -------
    {name: {"report": DiagnosticReport, "files": [paths]}}, in the order of the runs.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    runs = _runs(idata_or_paths)
    args = (outdir, figures, save_netcdf, verbose, entry, dict(traces or {}))
    done = {name: _write_one(name, run, *args) for name, run in runs.items()}
    if summary:
        write_summary(outdir, {name: summary_entry(res["report"], res["files"], outdir) for name, res in done.items()})
    return done


def summary_entry(report, files, outdir) -> dict:
    """One run's entry of ``summary.json``: its run description, coding scheme, verdicts, numbers and files
    (relative to ``outdir``), as JSON values."""
    return jsonable({"run": report.run, "coding_scheme": report.coding_scheme, "verdicts": report.verdicts,
                     "numbers": report.numbers, "files": [os.path.relpath(f, outdir) for f in files]})


def write_summary(outdir, entries: dict) -> Path:
    """Write ``<outdir>/summary.json`` from {run name: :func:`summary_entry`}; returns its path."""
    path = Path(outdir) / "summary.json"
    path.write_text(json.dumps(jsonable(entries), indent=1))
    return path
