"""bnnzoo: a zoo of Bayesian neural networks as NumPyro models, sampled into ArviZ, diagnosed and compared with
analytic theory (van Meegen & Sompolinsky 2025 and related work)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bnnzoo")
except PackageNotFoundError:          # run from a source tree that was never installed
    __version__ = "unknown"
del PackageNotFoundError, version

from . import azcompat, diagnostics, models, plots, tasks, theory, workflows  # noqa: E402
from .diagnostics import diagnose  # noqa: E402
from .inference import predict, run_config  # noqa: E402
from .inference.compilation import _from_environment, enable_compilation_cache  # noqa: E402
from .models import get_entry, list_entries  # noqa: E402
from .tasks import Task, toy_task  # noqa: E402
from .workflows import sample  # noqa: E402

_from_environment()
del _from_environment

__all__ = ["sample", "enable_compilation_cache", "predict", "run_config", "diagnose", "diagnostics", "plots", "theory", "Task", "toy_task",
           "get_entry", "list_entries", "models", "tasks", "workflows", "azcompat", "__version__"]
