"""bnnzoo: a zoo of Bayesian neural networks as NumPyro models, sampled into ArviZ, diagnosed and compared with
analytic theory (van Meegen & Sompolinsky 2025 and related work)."""

__version__ = "0.1.0"

from . import azcompat, diagnostics, models, plots, tasks, theory  # noqa: E402
from .diagnostics import diagnose  # noqa: E402
from .inference import run_config, sample  # noqa: E402
from .models import get_entry, list_entries  # noqa: E402
from .tasks import Task, toy_task  # noqa: E402

__all__ = ["sample", "run_config", "diagnose", "diagnostics", "plots", "theory", "Task", "toy_task", "get_entry", "list_entries", "models", "tasks", "azcompat",
           "__version__"]
