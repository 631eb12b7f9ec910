"""XLA options of bnnzoo's own programs (bnnzoo.inference.compilation.compiler_options)."""

import jax
import jax.numpy as jnp
import pytest

from bnnzoo.inference import compilation


def test_no_options_on_a_cpu():
    assert jax.default_backend() == "cpu"
    assert compilation.compiler_options() == {}


def test_on_a_gpu_no_tuning_and_cublas_products_unless_asked(monkeypatch):
    monkeypatch.setattr(compilation.jax, "default_backend", lambda: "gpu")
    monkeypatch.delenv(compilation.TUNING_ENV_VAR, raising=False)
    opts = compilation.compiler_options()
    assert opts == {"xla_gpu_autotune_level": 0, "xla_gpu_enable_triton_gemm": False}
    monkeypatch.setenv(compilation.TUNING_ENV_VAR, "1")
    assert compilation.compiler_options() == {}
    monkeypatch.setenv(compilation.TUNING_ENV_VAR, "0")
    assert compilation.compiler_options() == opts
    # XLA knows both options by name (an unknown one is an INVALID_ARGUMENT error when compiling); a CPU ignores
    # GPU options, so the same program compiles and gives the same result with them
    x = jnp.arange(9.0).reshape(3, 3)
    f = jax.jit(lambda v: v @ v)
    assert jnp.array_equal(f.lower(x).compile(opts)(x), f(x))


def _backend_compiles(fn):
    """Run ``fn()`` and count XLA's backend compilations during it."""
    seen = []

    def listen(event, seconds, **_):
        if event.endswith("backend_compile_duration"):
            seen.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        out = fn()
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return out, len(seen)


def test_compile_cached_keys_on_the_program_and_its_constants():
    """Closed-over data enter the lowered text: other data is another program (else the cached one would silently
    compute with the old data)."""
    import numpy as np

    compilation.clear_compiled()
    x = jnp.ones(4)

    def lowered(c):
        A = np.full((4, 4), c, np.float32)
        return jax.jit(lambda v: A @ v).lower(x)

    f1, n1 = _backend_compiles(lambda: compilation.compile_cached(lowered(1.0)))
    f1b, n1b = _backend_compiles(lambda: compilation.compile_cached(lowered(1.0)))
    f2, n2 = _backend_compiles(lambda: compilation.compile_cached(lowered(2.0)))
    assert (n1, n1b, n2) == (1, 0, 1) and f1b is f1
    assert np.allclose(f1(x), 4.0) and np.allclose(f2(x), 8.0)


def test_a_repeated_sample_call_compiles_nothing_and_draws_the_same():
    """The second identical call (another seed, the same model, data and sizes) reuses the first call's programs:
    no XLA compile; same seed, same draws; another task is compiled anew."""
    import numpy as np

    import bnnzoo

    compilation.clear_compiled()
    task = bnnzoo.toy_task(P=12)
    kw = dict(width=8, num_chains=2, num_warmup=6, num_samples=4, sampler="snaper", progress=False)
    a, n_a = _backend_compiles(lambda: bnnzoo.sample("sigmoidal", task, seed=0, **kw))
    b, n_b = _backend_compiles(lambda: bnnzoo.sample("sigmoidal", task, seed=0, **kw))
    c, n_c = _backend_compiles(lambda: bnnzoo.sample("sigmoidal", task, seed=1, **kw))
    _, n_d = _backend_compiles(lambda: bnnzoo.sample("sigmoidal", bnnzoo.toy_task(P=12, seed=5), seed=0, **kw))
    assert n_a >= 2 and n_b == 0 and n_c == 0 and n_d >= 2
    assert np.array_equal(a.posterior["a"].values, b.posterior["a"].values)
    assert not np.array_equal(a.posterior["a"].values, c.posterior["a"].values)


@pytest.mark.parametrize("kind", ["file", "below_a_file"])
def test_a_bad_cache_variable_warns_and_runs_without_the_cache(tmp_path, kind):
    """BNNZOO_COMPILATION_CACHE naming a file, or a path below a file, used to stop `import bnnzoo` (and every CLI
    command); it now gives one warning and bnnzoo runs without the cache."""
    import os
    import subprocess
    import sys

    f = tmp_path / "a_file"
    f.write_text("x")
    value = f if kind == "file" else f / "below"
    env = dict(os.environ, BNNZOO_COMPILATION_CACHE=str(value))
    out = subprocess.run([sys.executable, "-c", "import bnnzoo, jax; print('ok', jax.config.jax_compilation_cache_dir)"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-1500:]
    assert out.stdout.startswith("ok") and str(value) not in out.stdout
    assert out.stderr.count("cannot hold the compilation cache") == 1 and "Traceback" not in out.stderr
