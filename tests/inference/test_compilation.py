"""XLA options of bnnzoo's own programs (bnnzoo.inference.compilation.compiler_options)."""

import jax
import jax.numpy as jnp

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
