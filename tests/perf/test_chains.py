"""Many chains: vectorised on one device, and split across several (CPU host) devices with the same draws."""

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, warnings
    import jax, numpy as np, bnnzoo
    from bnnzoo import azcompat
    warnings.simplefilter("ignore")
    t = bnnzoo.toy_task(P=6, N0=8, y_neg=0.5)
    kw = dict(num_chains=8, num_warmup=30, num_samples=20, seed=2, width=4, progress=False, chunk_size=10)
    sharded = bnnzoo.sample("sigmoidal", t, **kw)                    # auto: 8 chains over the 4 devices
    vec = bnnzoo.sample("sigmoidal", t, chain_method="vectorized", **kw)
    ps, pv = azcompat.get_group(sharded, "posterior"), azcompat.get_group(vec, "posterior")
    eng = bnnzoo.run_config(sharded)["engine"]
    print(json.dumps(dict(devices=jax.local_device_count(), method=eng["chain_method"],
                          used=eng["timing"]["devices_used"], chains=int(ps.sizes["chain"]),
                          maxdiff={v: float(np.abs(ps[v].values - pv[v].values).max()) for v in pv.data_vars},
                          scale={v: float(np.abs(pv[v].values).max()) for v in pv.data_vars})))
""")


def test_chains_sharded_over_host_devices_match_vectorised():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["devices"] == 4 and out["method"] == "sharded" and out["used"] == 4 and out["chains"] == 8
    for v, d in out["maxdiff"].items():        # bit-identical here; allow float rounding across XLA versions
        assert d <= 1e-4 * max(1.0, out["scale"][v]), (v, d)


COUPLED = textwrap.dedent("""
    import json, tempfile, warnings
    import jax, numpy as np, bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.inference.chees import ChEES
    from bnnzoo.inference.chunked import run_chunked
    from bnnzoo.inference.store import RunStore
    warnings.simplefilter("ignore")
    t = bnnzoo.toy_task(P=6, N0=8, y_neg=0.5)
    out = {}
    for sampler in ("chees", "snaper"):
        kw = dict(num_chains=8, num_warmup=60, num_samples=20, seed=2, width=4, progress=False, chunk_size=10,
                  sampler=sampler)
        sharded = bnnzoo.sample("sigmoidal", t, **kw)                # auto: the 8 chains over the 4 devices
        vec = bnnzoo.sample("sigmoidal", t, chain_method="vectorized", **kw)
        ps, pv = azcompat.get_group(sharded, "posterior"), azcompat.get_group(vec, "posterior")
        ss, sv = azcompat.get_group(sharded, "sample_stats"), azcompat.get_group(vec, "sample_stats")
        eng = bnnzoo.run_config(sharded)["engine"]
        out[sampler] = dict(
            method=eng["chain_method"], used=eng["timing"]["devices_used"], chains=int(ps.sizes["chain"]),
            maxdiff={v: float(np.abs(ps[v].values - pv[v].values).max()) for v in pv.data_vars},
            scale={v: float(np.abs(pv[v].values).max()) for v in pv.data_vars},
            same_steps=bool((ss["n_steps"].values == sv["n_steps"].values).all()),
            eps_rel=float(np.abs(ss["step_size"].values / sv["step_size"].values - 1).max()))

    # a sharded ChEES run stopped after 3 blocks and resumed from its checkpoint = the uninterrupted sharded run
    kw = bnnzoo.models.get_entry("sigmoidal").kwargs(width=3, temperature=0.05)
    X, Y = t.X[:5], t.Y[:5]

    def run(store, **extra):
        kernel = ChEES(bnnzoo.models.fcn, criterion="snaper")
        post = lambda k: (lambda z, c, d, pp=k.postprocess_fn((X, Y), kw): jax.vmap(pp)(z))
        return run_chunked(kernel, model_args=(X, Y), model_kwargs=kw, make_post=post,
                           init_keys=jax.random.split(jax.random.PRNGKey(0), 4), num_chains=4, num_warmup=40,
                           num_samples=60, thinning=1, chunk_size=20, chain_method="sharded", store=store, **extra)

    full = run(None)
    store = RunStore(tempfile.mkdtemp() + "/s")
    run(store, max_blocks=3)
    rest = run(store, resume=True)
    out["resume"] = dict(from_block=rest.resumed_from_block, used=full.timing["devices_used"],
                         equal=all(bool((rest.samples[k] == full.samples[k]).all()) for k in ("a", "f", "W1")))
    print(json.dumps(out))
""")


def test_coupled_chains_sharded_over_host_devices_match_vectorised():
    """ChEES and SNAPER share their tuning across the chains; sharded over 4 host devices (each device runs its chains
    and the tuning gathers all chains onto every device) they draw what the vectorised run draws.  Float64, because
    the gathered tuning arithmetic, compiled into a different program, rounds differently: in float32 the diagonal
    mass moves by one ulp at its first update (checked: step size equal to 7 digits, draws within 3e-6 after 20-100
    warm-up iterations; not traced further), and the chains' dynamics can grow such differences into different,
    equally valid chains.  In float64 they agree to 1e-14 (checked: 6e-15 after 100 warm-up iterations)."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu",
               JAX_ENABLE_X64="1")
    res = subprocess.run([sys.executable, "-c", COUPLED], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for sampler in ("chees", "snaper"):
        o = out[sampler]
        assert o["method"] == "sharded" and o["used"] == 4 and o["chains"] == 8, o
        assert o["same_steps"] and o["eps_rel"] < 1e-12, o
        for v, d in o["maxdiff"].items():
            assert d <= 1e-10 * max(1.0, o["scale"][v]), (sampler, v, d)
    assert out["resume"] == dict(from_block=2, used=4, equal=True), out["resume"]
