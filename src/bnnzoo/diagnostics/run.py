"""A run, read once: :func:`read_run` turns a run (InferenceData / DataTree, or the path to its NetCDF file) into one
:class:`Run` record that every diagnostic, observable and figure takes.  Public functions that also accept an
InferenceData / DataTree or a path convert it once, with :func:`as_run`; :meth:`Run.fcn` is the numpy view of a
fully-connected run (:class:`~bnnzoo.diagnostics._rundata.RunData`), built from the Run and never the other way.

The record holds the posterior and sampler statistics, the run's provenance (parsed once), the zoo entry it is
diagnosed as, the model keywords the theory is evaluated at, the training and test data, and the sampler health
(the one :func:`bnnzoo.sample` stored with the run, or computed once when absent or stale).

**Your own model.**  A run of a NumPyro model of one's own (e.g. a wrapper around :func:`bnnzoo.models.fcn` that puts
priors on the temperature or σ_a²) is diagnosed as the zoo entry named by ``entry=``, as long as its posterior holds
the entry's sites.  Its model keywords are, in increasing precedence: the entry's defaults, the keywords the run was
sampled with (those the entry knows), the sizes read from the posterior's shapes (width, depth), the ``model_kwargs``
given to :func:`read_run`, and finally every entry keyword (and ``temperature``, ``sigma_a2``, ``sigma_w2``) that is a
scalar site of the posterior (a hyperparameter with a prior, named like the keyword, e.g.
``numpyro.sample("temperature", ...)``): the theory is evaluated at its posterior median, and
:attr:`Run.from_posterior` says which keywords were read that way.  Without an entry the same holds with the run's
own keywords in place of the entry's defaults.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from .. import azcompat
from .._record import record_from_dataset
from ..inference.convert import parse_config, provenance_doubt
from ..inference.health import HEALTH_GROUP, judged_values, sampler_health, values_checksum
from ..models.summaries import summary_labels, summary_names
from ..models.zoo import ZOO, ZooEntry, get_entry
from ..tasks.base import _one_hot_labels
from ._rundata import RunData

__all__ = ["Run", "read_run", "as_run"]


@dataclass
class Run:
    """One run, read once (module docstring).

    Attributes
    ----------
    idata : InferenceData or DataTree
        The run itself.
    posterior : xarray.Dataset
        The posterior group, dims (chain, draw, ...).
    sample_stats : xarray.Dataset or None
        The sampler statistics.
    config : dict
        The run's provenance (:func:`bnnzoo.run_config`; empty for runs made elsewhere).
    entry : ZooEntry or None
        The zoo entry the run is diagnosed as (None: a model of its own with no ``entry=``).
    model_kwargs : dict
        The model keywords the diagnostics and the theory use (module docstring).
    from_posterior : dict
        {keyword: posterior median} for the hyperparameters read from the posterior.
    X, Y, labels : ndarray
        Training inputs (point, input), targets (point, class) and class labels (point,).
    X_test, Y_test, labels_test, f_test : ndarray or None
        The test set and the network's outputs on it (chain, draw, test_point, class), when the run has them.
    doubt : str or None
        Why the run's provenance may not describe its draws (its checksum does not match), or None.
    """

    idata: object
    posterior: object
    sample_stats: object
    config: dict
    entry: object
    model_kwargs: dict
    X: np.ndarray
    Y: np.ndarray
    labels: np.ndarray
    from_posterior: dict = field(default_factory=dict)
    X_test: np.ndarray | None = None
    Y_test: np.ndarray | None = None
    labels_test: np.ndarray | None = None
    f_test: np.ndarray | None = None
    doubt: str | None = None
    _health: object = None
    _stored_health: object = None
    _fcn: object = None
    _f64: dict = field(default_factory=dict)

    def float64(self, name: str) -> np.ndarray:
        """The posterior variable ``name`` as a float64 array, converted once: the health check and :meth:`fcn` read
        the same copy of the large readout ``a`` and outputs ``f``."""
        if name not in self._f64:
            self._f64[name] = np.asarray(self.posterior[name].values, float)
        return self._f64[name]

    def start_health_check(self, pool):
        """:meth:`check_stored_health` submitted to the thread pool ``pool`` (a Future), after the float64 copies it
        reads are made on this thread (they are shared with :meth:`fcn`); None when the run has no stored health."""
        if self._stored_health is None:
            return None
        return pool.submit(self.check_stored_health, self._posterior64())

    def _posterior64(self):
        """The posterior with its readout ``a`` and outputs ``f`` replaced by their float64 copies (:meth:`float64`),
        the same values: what the health check reads without converting them again."""
        big = [k for k in ("a", "f") if k in self.posterior]
        return self.posterior.assign({k: (self.posterior[k].dims, self.float64(k)) for k in big})

    @property
    def n_chains(self) -> int:
        return int(self.posterior.sizes["chain"])

    @property
    def n_draws(self) -> int:
        return int(self.posterior.sizes["draw"])

    @property
    def P(self) -> int:
        return int(self.X.shape[0])

    @property
    def m(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 1

    @property
    def analysis(self) -> str:
        """What the entry is diagnosed by (``ZooEntry.analysis``); "none" without an entry."""
        return getattr(self.entry, "analysis", "none") if self.entry is not None else "none"

    @property
    def health(self):
        """The :class:`~bnnzoo.inference.health.SamplerHealth` of the run: the stored one when it matches the
        posterior's size and draws (:meth:`check_stored_health`), else judged once here."""
        if self._health is None:
            self.check_stored_health()
        if self._health is None:
            self._health = sampler_health(self.idata)
        return self._health

    def check_stored_health(self, posterior64=None) -> None:
        """Take the health stored with the run (read by :func:`read_run`) as :attr:`health` when the draws are the
        ones it judged: its checksum of the judged values (:func:`~bnnzoo.inference.health.values_checksum`) is
        the posterior's, or it has none (stored by an older bnnzoo).  Reads the posterior only (array arithmetic
        and hashing, no linear algebra), so :func:`~bnnzoo.diagnostics.report.diagnose` runs it on a second thread
        while it analyses the draws.  ``posterior64``: :meth:`_posterior64`, when already made."""
        h, self._stored_health = self._stored_health, None
        if h is None:
            return
        if (not getattr(h, "values_checksum", "")
                or h.values_checksum == values_checksum(judged_values(
                    self._posterior64() if posterior64 is None else posterior64, self.Y))):
            self._health = h

    def fcn(self):
        """The run as a :class:`~bnnzoo.diagnostics._data.RunData` (fully-connected nets: readout ``a`` (neuron,
        class), hidden weights or recorded preactivations), built once."""
        if self._fcn is None:
            post, mk = self.posterior, self.model_kwargs
            if "a" not in post or tuple(post["a"].dims[2:]) != ("neuron", "class"):
                raise ValueError(f"the posterior has no readout 'a' with dims (neuron, class), which the "
                                 f"fully-connected diagnostics read; variables: {list(post.data_vars)}")
            depth = int(mk.get("depth") or 1)
            self._fcn = RunData(
                a=self.float64("a"), X=self.X, Y=self.Y, labels=self.labels,
                activation=str(mk.get("activation")), depth=depth,
                weights=[np.asarray(post[f"W{l}"].values, float) for l in range(1, depth + 1) if f"W{l}" in post],
                recorded_z={l: np.asarray(post[f"z{l}"].values, float) for l in range(1, depth + 1)
                            if f"z{l}" in post},
                f=self.float64("f") if "f" in post else None,
                summaries=self._summaries(depth), kernel_means=self._kernel_means(depth),
                X_test=self.X_test, Y_test=self.Y_test, labels_test=self.labels_test, f_test=self.f_test,
                readout=mk.get("readout", "nonlazy"), temperature=_float(mk.get("temperature")),
                sigma_a2=_float(mk.get("sigma_a2")), sigma_w2=_float(mk.get("sigma_w2", 1.0)), config=self.config)
        return self._fcn


    def _summaries(self, depth: int) -> dict:
        """The recorded per-draw summaries (:mod:`bnnzoo.models.summaries`) as float arrays (chain, draw, ...);
        empty when the classes the model computed them for (argmax of the targets) are not the run's labels."""
        names = [k for k in summary_names(depth) if k in self.posterior]
        if not names or not np.array_equal(summary_labels(self.Y), self.labels):
            return {}
        return {k: np.asarray(self.posterior[k].values, float) for k in names}

    def _kernel_means(self, depth: int) -> dict:
        """{"K1": (chain, batch, point, point), ...}: the streamed kernel means of ``posterior_thinned``, with
        ``"<site>_draws"`` the number of draws in each mean."""
        if "posterior_thinned" not in azcompat.group_names(self.idata):
            return {}
        th = azcompat.get_group(self.idata, "posterior_thinned")
        out = {}
        for l in range(1, depth + 1):
            for k in (f"K{l}", f"Kz{l}"):
                if k in th and "bnnzoo_mean_of_draws" in th[k].attrs:
                    out[k] = np.asarray(th[k].values, float)
                    out[k + "_draws"] = int(th[k].attrs["bnnzoo_mean_of_draws"])
        return out


def _float(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _values(ds, name):
    return np.asarray(ds[name].values) if ds is not None and name in ds else None


def _entry(entry, config: dict):
    if entry is None:
        return ZOO.get(config.get("model")) if isinstance(config.get("model"), str) else None
    if isinstance(entry, ZooEntry):
        return entry
    if isinstance(entry, str):
        return get_entry(entry)
    raise ValueError(f"entry must be a zoo entry name or a ZooEntry, got {type(entry).__name__}")


def _model_kwargs(entry, config: dict, post, X, overrides: dict) -> tuple[dict, dict]:
    """The keywords the diagnostics use, and those read from the posterior (module docstring)."""
    stored = dict(config.get("model_kwargs", {}))               # as the provenance holds them (JSON values)
    if entry is not None and config.get("model") == entry.name:  # a run of the entry itself
        return dict(stored, **overrides), {}
    kw = dict(entry.defaults) if entry is not None else {}
    kw.update({k: v for k, v in stored.items() if entry is None or k in entry.defaults})
    if (entry is None or entry.analysis == "fcn") and "a" in post and "neuron" in post["a"].dims:
        kw["width"] = int(post["a"].sizes["neuron"])          # sizes from the shapes
        depth = max([int(k[1:]) for k in post.data_vars if k[:1] in "Wz" and k[1:].isdigit()] or [0])
        if depth and (entry is not None or "depth" not in kw):
            kw["depth"] = depth
    kw.update(overrides)
    names = (set(entry.defaults) if entry is not None else set()) | {"temperature", "sigma_a2", "sigma_w2"}
    scalars = [k for k in names if k in post and tuple(post[k].dims) == ("chain", "draw") and k not in overrides]
    medians = {k: float(np.median(np.asarray(post[k].values, float))) for k in sorted(scalars)}
    kw.update(medians)
    if entry is not None and entry.resolve is not None:
        kw = entry.resolve(np.asarray(X), kw)
    return kw, medians


def read_run(idata, entry=None, model_kwargs: dict | None = None) -> Run:
    """Read a run once into a :class:`Run`.

    Parameters
    ----------
    idata : InferenceData, DataTree or path
        A run of :func:`bnnzoo.sample` (of a zoo entry or of a model of one's own), or its NetCDF file.
    entry : str, ZooEntry or None
        The zoo entry to diagnose the run as (default: the run's own model when it is a zoo entry).
    model_kwargs : dict or None
        Model keywords that override what the run says (e.g. ``{"activation": "sigmoid"}`` for a model of one's
        own whose keywords the provenance does not hold).

    Returns
    -------
    Run

    Raises
    ------
    ValueError
        When ``entry`` is unknown, or the run lacks constant_data X or observed_data y.
    """
    if isinstance(idata, (str, os.PathLike)):
        idata = azcompat.read_run_file(idata, "idata")
    names = azcompat.group_names(idata)
    get = lambda g: azcompat.get_group(idata, g) if g in names else None  # noqa: E731
    post, const, obs = get("posterior"), get("constant_data"), get("observed_data")
    if post is None:
        raise ValueError("idata has no posterior group: pass a run made by bnnzoo.sample")
    X, Y = _values(const, "X"), _values(obs, "y")
    if X is None or Y is None:
        raise ValueError("the run needs constant_data X and observed_data y (as bnnzoo.sample writes them)")

    attrs = azcompat.get_attrs(idata)
    try:
        config = parse_config(attrs["bnnzoo_config"]) if "bnnzoo_config" in attrs else {}
    except (TypeError, ValueError):
        config = {}
    ent = _entry(entry, config)
    sampled_as = config.get("model")
    if (ent is not None and entry is not None and isinstance(sampled_as, str) and sampled_as in ZOO
            and sampled_as != ent.name):
        raise ValueError(f"entry: this run was sampled as the zoo entry {sampled_as!r}; diagnosing it as "
                         f"{ent.name!r} would label its numbers with another model: drop entry= or pass "
                         f"{sampled_as!r}")
    kw, medians = _model_kwargs(ent, config, post, X, dict(model_kwargs or {}))
    labels = _values(const, "labels")
    if labels is None:                      # a run not written by bnnzoo.sample (az.from_numpyro): as a Task does
        labels = _one_hot_labels(np.asarray(Y, float))
    labels = np.zeros(len(X), int) if labels is None else np.asarray(labels).astype(int)
    test = {}
    pc = get("predictions_constant_data")
    if pc is not None and "predictions" in names:
        test = dict(X_test=_values(pc, "X_test"), Y_test=_values(pc, "y_test"), labels_test=_values(pc, "labels_test"),
                    f_test=_values(get("predictions"), "f"))
        test = {k: (np.asarray(v, float) if k != "labels_test" and v is not None else v) for k, v in test.items()}
    run = Run(idata=idata, posterior=post, sample_stats=get("sample_stats"), config=config, entry=ent,
              model_kwargs=kw, X=np.asarray(X, float), Y=np.asarray(Y, float), labels=labels,
              from_posterior=medians, doubt=provenance_doubt(attrs, post), **test)
    stored = get(HEALTH_GROUP)
    if stored is not None:                  # judged again when unreadable or of another size than the posterior
        try:
            h = record_from_dataset(stored)
        except (KeyError, ValueError, TypeError):
            h = None
        if h is not None and (h.n_chains, h.n_draws) == (run.n_chains, run.n_draws):
            run._stored_health = h          # checked against the draws when first needed (Run.check_stored_health)
    return run



def as_run(idata, entry=None, model_kwargs: dict | None = None) -> Run:
    """The one conversion at the public boundary: a :class:`Run` is taken as it is, anything else is read once with
    :func:`read_run` (``entry``, ``model_kwargs``: as there; a ValueError when they come with a Run, which was read
    with its own)."""
    if not isinstance(idata, Run):
        return read_run(idata, entry=entry, model_kwargs=model_kwargs)
    if entry is not None or model_kwargs:
        raise ValueError("entry, model_kwargs: a Run was read with its own; pass them to read_run instead")
    return idata
