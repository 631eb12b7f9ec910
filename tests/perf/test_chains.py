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
