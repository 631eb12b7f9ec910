"""The zoo: named model entries with the paper's defaults, their observables and the theory that predicts them.

Each model file registers its own entries (:func:`register`) when it is imported; the contract every entry
answers is in the docs' "entry contract" page.

An entry follows the spirit of the Inference Gym model contract: besides the NumPyro model it declares what to
look at (observables: a site or a derived quantity) and which theory in :mod:`bnnzoo.theory` predicts it, so a
diagnostic can put samples next to theory without guessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..tasks import Task

__all__ = ["Observable", "UnitLayer", "PopulationSpec", "ZooEntry", "ZOO", "register", "get_entry", "list_entries",
           "START_FAMILIES"]

START_FAMILIES = ("prior", "annealed", "meanfield", "planted")
"""The start families :func:`bnnzoo.sample` can certify a run from (:mod:`bnnzoo.workflows.certify`); "planted"
(chains started at the teacher) on a planted task only (:func:`bnnzoo.tasks.planted_task`), for every entry."""


@dataclass(frozen=True)
class Observable:
    """One quantity a model exposes.

    name : site name in the posterior or a derived quantity's name.
    description : what it is, in words.
    theory : the function in :mod:`bnnzoo.theory` that predicts it ("" if none), with the regime where it holds.
    """

    name: str
    description: str
    theory: str = ""


@dataclass(frozen=True)
class UnitLayer:
    """One layer of exchangeable units that the per-unit diagnostics (ergodicity, permutation symmetry, unit
    clustering and codes) run on.

    Attributes
    ----------
    name : str
        The label used in the report (``ergodicity[<name>]``, ...).
    site : str
        The posterior site holding the units (e.g. "h1", "attn", "a").
    dim : str
        The site's dim that indexes the units (e.g. "neuron1", "head"); every other dim of the site is a feature of
        the unit (a "point" dim is the unit's value on the training inputs: its class means give the codes).
    description : str
        What the units are, in words.
    """

    name: str
    site: str
    dim: str
    description: str = ""


@dataclass(frozen=True)
class PopulationSpec:
    """The population observables of an entry and the start families that ``bnnzoo.sample(..., certify=True)``
    compares them across (:mod:`bnnzoo.diagnostics.populations`, :mod:`bnnzoo.workflows.certify`).

    Attributes
    ----------
    observables : tuple of str
        The kinds of population observable the entry has, computed per draw by
        :func:`bnnzoo.diagnostics.populations.population_observables` (its ``KINDS``: "code_fraction",
        "class_kernel", "branch_mass", "outliers", "mse", "specialist_fraction", "second_layer_q3", "alignment",
        "specialist_heads", "pathway_sv").
    families : tuple of str
        The start families certification runs (``START_FAMILIES``: "prior", "annealed", "meanfield"; two or more);
        on a planted task "planted" is added to them.
    temperature : str
        The model keyword that sets the likelihood temperature (the annealed start raises it).
    note : str
        In words: why a start family is missing, or where the offered ones hold.
    """

    observables: tuple[str, ...]
    families: tuple[str, ...] = ("prior", "annealed")
    temperature: str = "temperature"
    note: str = ""

    def __post_init__(self):
        bad = [f for f in self.families if f not in START_FAMILIES]
        if bad or len(set(self.families)) < 2:
            raise ValueError(f"PopulationSpec.families must be two or more of {START_FAMILIES}, got "
                             f"{self.families!r}")


@dataclass(frozen=True)
class ZooEntry:
    """A model of the zoo with its defaults.

    Attributes
    ----------
    name : str
        Registry key (``bnnzoo list`` prints it).
    model : callable
        The plain NumPyro model function, called as ``model(X, Y, **kwargs)``.
    defaults : dict
        Model keyword arguments (the paper's settings); user keywords override them.
    task_defaults : dict
        Keyword arguments of ``make_task`` for the demo / CLI (e.g. y_neg).
    make_task : callable
        Builds the entry's default task (the paper's toy task for FCNs).
    validate : callable
        ``validate(X, Y, **kwargs)`` raises ValueError on bad arguments before anything compiles.
    dims : callable
        ``dims(**kwargs)`` gives the named dims of every site.
    observables : tuple of Observable
        What to look at, and which theory predicts it.
    description : str
        One line.
    reference : str
        The paper / section the defaults come from.
    resolve : callable or None
        ``resolve(X, kwargs)`` fills data-dependent defaults (e.g. the paper's σ_a² rule) so the stored provenance
        holds the values actually used.
    units : tuple of UnitLayer
        The layers of units the per-unit diagnostics run on (:class:`UnitLayer`).
    analysis : str
        What :func:`bnnzoo.diagnose` runs on the entry (``bnnzoo.diagnostics.analyses.ANALYSES``): "fcn" (readout,
        hidden layers, codes, branches, outliers and the fully-connected theories), "three_layer", "attention",
        "gated" (the declared unit layers and the entry's own observables and theory), or "units" (the declared
        unit layers only, the default).  A kind, not a function: the diagnostics sit above the models in the
        package's data flow.
    record : tuple of str
        The sites recorded by default (what :func:`bnnzoo.sample` and ``bnnzoo sample`` record without
        ``record=`` / ``--record``), names that the entry's ``dims`` and model accept (FCN: ``("summaries",)``,
        the per-unit class means and per-draw richness of every layer, :mod:`bnnzoo.models.summaries`).
    streamed_kernels : bool
        The model records its layers' kernels with ``record=("kernels",)`` (sites ``K1``, ``Kz1``, ...), and
        :func:`bnnzoo.sample` adds them, as means over blocks of draws, to a run that records ``"summaries"``
        through the chunked driver.
    unread_sites : callable or None
        ``unread_sites(model_kwargs) -> tuple`` of latent sites the diagnostics do not read when the run records
        ``"summaries"`` (the fully-connected nets: the hidden weights W1..WL, N·N0 + (L−1)·N² numbers per draw);
        ``bnnzoo sample`` leaves them out unless ``--exclude`` says otherwise.  :func:`bnnzoo.sample` keeps them
        (:func:`bnnzoo.predict` needs them).
    forward : callable or None
        ``forward(X, params, **model_kwargs) -> f`` of shape (point, class): the network output for one parameter
        draw ``params`` (a dict of the weight sites, e.g. ``{"W1": ..., "a": ...}``) without the likelihood, so the
        network can be used inside another model.  Keywords the forward pass does not need (temperature, record,
        ...) are ignored.
    likelihood_variance : callable or None
        ``likelihood_variance(model_kwargs) -> float``: the variance of the Gaussian likelihood per output entry,
        from the resolved model keywords (after ``resolve``).
    prior_variances : callable or None
        ``prior_variances(X=None, **model_kwargs)`` gives the prior variance of every weight site ({site:
        variance}); ``X`` (the training inputs) is needed only where a variance depends on the data (attention's
        token dimension; an FCN's unresolved ``sigma_a2=None``).
    samplers : tuple of str
        The samplers :func:`bnnzoo.sample` may run on this entry (``bnnzoo.inference.SAMPLERS``; "gibbs", the exact
        blocked Gibbs sampler, for the linear fully-connected nets only; "smc", the tempered sampler, for every
        entry with a likelihood).
    reparams : tuple of str
        The reparametrisations :func:`bnnzoo.sample` may use (``bnnzoo.inference.REPARAMS``; the fully-connected
        nets: "readout", "data_space", the first only with the second).
    auto_sampler : str
        The sampler ``sampler="auto"`` runs on this entry with two or more chains: the one the performance
        benchmark (``benchmarks/results/merit_cpu.md``) found fastest on it; one of ``samplers``.
    populations : PopulationSpec or None
        The entry's population observables and the start families ``sample(..., certify=True)`` compares them
        across (:class:`PopulationSpec`); None: the entry cannot be certified.
    """

    name: str
    model: Callable
    defaults: dict
    task_defaults: dict
    make_task: Callable[..., Task]
    validate: Callable
    dims: Callable[..., dict]
    observables: tuple[Observable, ...]
    description: str
    reference: str = ""
    resolve: Callable[[Any, dict], dict] | None = None
    units: tuple[UnitLayer, ...] = ()
    analysis: str = "units"
    record: tuple[str, ...] = ()
    streamed_kernels: bool = False
    unread_sites: Callable[[dict], tuple] | None = None
    forward: Callable | None = None
    likelihood_variance: Callable[[dict], float] | None = None
    prior_variances: Callable[..., dict[str, float]] | None = None
    samplers: tuple[str, ...] = ("nuts", "hmc", "chees", "snaper", "smc")
    reparams: tuple[str, ...] = ()
    auto_sampler: str = "snaper"
    populations: PopulationSpec | None = None

    def kwargs(self, **overrides) -> dict:
        """The model's keyword arguments: defaults updated with ``overrides``."""
        kw = dict(self.defaults)
        kw.update(overrides)
        return kw


ZOO: dict[str, ZooEntry] = {}


def register(entry: ZooEntry) -> ZooEntry:
    """Add an entry to the zoo (the model modules register theirs on import); ValueError if the name is taken."""
    if entry.name in ZOO:
        raise ValueError(f"a zoo entry called {entry.name!r} exists already")
    ZOO[entry.name] = entry
    return entry


def get_entry(name: str) -> ZooEntry:
    """The zoo entry called ``name`` (ValueError listing the known names otherwise)."""
    try:
        return ZOO[name]
    except KeyError:
        raise ValueError(f"unknown zoo entry {name!r}; known entries: {', '.join(sorted(ZOO))}") from None


def list_entries() -> list[ZooEntry]:
    return [ZOO[k] for k in sorted(ZOO)]
