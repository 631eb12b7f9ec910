"""``bnnzoo demo``'s two-process run (``run_demo(background=True)``: a spawned worker samples and diagnoses the certified
sigmoidal net, this process the others) writes one summary with every net, its report and figures; and (slow) it
gives what the one-process run gives, from the same draws: every net's training MSE equal to the last digit and the
same verdicts.  Tiny nets: the check is about the plumbing, not the physics
(``benchmarks/results/demo_sigmoidal_units.md`` has the demo's own size)."""

import json

import pytest

from bnnzoo.cli import run_demo
from bnnzoo.diagnostics import read_run
from bnnzoo.inference.convert import run_config

TINY = dict(width=6, P=6, sigmoidal_size=6, relu_size=6, chains=2, warmup=20, sigmoidal_warmup=20, relu_warmup=20,
            samples=10, seed=1, progress=False)


def _run(tmp_path_factory, background, entries):
    d = tmp_path_factory.mktemp(f"demo_bg{int(background)}")
    return d, run_demo(d, entries=entries, background=background, **TINY)


def test_the_two_process_demo_writes_every_net(tmp_path_factory):
    # the worker samples and diagnoses the certified sigmoidal net; this process samples and diagnoses the linear one
    d, s = _run(tmp_path_factory, True, ("deep_linear", "sigmoidal"))
    assert list(s) == ["deep_linear", "sigmoidal"]
    assert s["deep_linear"]["sampler"] == "gibbs" and s["sigmoidal"]["sampler"] == "units"
    assert s["deep_linear"]["start_families"] == [] and s["sigmoidal"]["start_families"] == ["prior", "meanfield"]
    assert (s["sigmoidal"]["width"], s["sigmoidal"]["P"], s["sigmoidal"]["warmup"]) == (6, 6, 20)
    assert s["sigmoidal"]["temperature"] == 0.01
    run = read_run(s["sigmoidal"]["netcdf"])          # both families' chains, and the comparison of the two
    cert = run_config(run.idata)["certification"]
    assert cert["families"] == ["prior", "meanfield"] and run.posterior.sizes["chain"] == 2 * TINY["chains"]
    assert json.loads((d / "demo_summary.json").read_text()) == json.loads(json.dumps(s))
    summary = json.loads((d / "report" / "summary.json").read_text())
    assert list(summary) == list(s)
    for name in s:
        assert s[name]["draws"] == 10                     # samples= given: every net, whatever its sampler
        assert summary[name]["verdicts"] == s[name]["verdicts"]
        files = summary[name]["files"]
        assert f"{name}/trace_a.png" in files and f"{name}/order_parameters.png" in files, files
        assert all((d / "report" / f).exists() for f in files)
        assert (d / f"{name}.nc").exists()


@pytest.mark.slow
def test_the_worker_process_gives_the_same_runs(tmp_path_factory):
    entries = ("deep_linear", "sigmoidal", "relu")
    (_, s1), (_, s0) = _run(tmp_path_factory, True, entries), _run(tmp_path_factory, False, entries)
    for name in entries:
        assert s1[name]["mse"] == s0[name]["mse"], name
        assert s1[name]["verdicts"] == s0[name]["verdicts"], name
        assert s1[name]["coding_scheme"] == s0[name]["coding_scheme"], name
