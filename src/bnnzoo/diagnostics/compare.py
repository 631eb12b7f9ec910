"""Samples next to theory: one function, :func:`compare_with_theory`, that picks the theories that apply to a run and
reports every agreement as a number with its Monte-Carlo uncertainty.

What is compared (docs/theory.md §4–6):

* **linear, one hidden layer** — :func:`bnnzoo.theory.linear.linear_saddle_point` (exact as N → ∞ at finite P, T):
  the readout second moment U = E[a aᵀ] (sampled: aᵀa/N per draw), the hidden kernel K1 = E[zᵀz]/N, the mean
  training output, and the mean predictor on the test set;
* **linear, deeper** — :func:`bnnzoo.theory.linear.linear_leading_order` (large P, T → 0; approximate at CI size):
  U and the kernel of every layer; and, at T <= 0.02, the same against the derived finite-P theory
  :func:`bnnzoo.theory.deep_linear.deep_linear_zero_temperature` (exact as N → ∞, T → 0);
* **one hidden layer, any φ, orthogonal toy task** — :func:`bnnzoo.theory.meanfield.single_neuron_meanfield`:
  branch masses P_γ against the fractions of units on the branch's code at a draw (averaged over the draws: the
  theory's masses are fractions of units at a draw, which a unit's most-visited code misses when units switch codes,
  e.g. 011 → 111 and back), branch centres against the mean time-averaged readout of the units whose modal code it is
  and that stay in it (persistence ≥ 0.9), the set of codes (those on ≥ 2 % of the units at a draw), and U;
* **ReLU** — the mean field has no normalisable bulk (outliers); the comparison is the outlier count against m
  (docs/theory.md §3: m outliers, one per class, on the toy task);
* **GP baseline** — when the run has a test set: the NNGP mean predictor of the run's lazy twin
  (:func:`bnnzoo.theory.gp.gp_posterior`, σ_a² = 1, likelihood variance T) and its generalization error against the
  sampled mean predictor; a tested agreement for linear nets (mean predictor = GP predictor, docs/theory.md §3),
  reported only for nonlinear ones.

Matrix agreements are relative Frobenius errors ‖S − T‖/‖T‖ with the standard error that Monte-Carlo noise alone
gives (√Σ se_ij² / ‖T‖), plus the largest elementwise z-score.  Scalar agreements are differences with their
standard errors.  ``tolerance`` is the agreement the comparison is expected to reach at the run's size (finite-N
corrections are O(1/N) for the saddle point; masses are binomial); ``within`` says whether it did (matrices: within
tolerance + 3 standard errors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._record import Record, array_field
from ..theory import deep_linear as dl
from ..theory import gp as gpt
from ..theory import linear as lt
from ..theory import meanfield as mf
from ._data import RunData, mean_se, run_data
from .branches import find_outliers
from .codes import code_string, neural_codes

__all__ = ["Agreement", "TheoryComparison", "code_fractions_per_draw", "compare_with_theory", "meanfield_applies",
           "meanfield_theory", "MASS_TOLERANCE"]

MASS_TOLERANCE = 0.1


@dataclass(frozen=True, repr=False)
class Agreement(Record):
    """One sample-vs-theory agreement.

    quantity : what is compared ("U", "K1", "mass[011]", ...).   theory : the theory function used.
    kind : "relative_error" (matrices: difference = ‖S − T‖/‖T‖) or "difference" (scalars: S − T).
    sampled, sampled_se : the sampled value (matrices: ‖S‖_F) and its MC standard error.   predicted : theory value
    (matrices: ‖T‖_F).   difference, difference_se : see ``kind``.   max_z : largest ``|S − T|/se`` over elements.
    tolerance : the expected agreement at this size.   within : ``|difference| ≤ tolerance``.   note : caveats.
    """

    quantity: str
    theory: str
    kind: str
    sampled: float
    sampled_se: float
    predicted: float
    difference: float
    difference_se: float
    max_z: float
    tolerance: float
    within: bool
    note: str = ""

    def summary(self) -> list[str]:
        if self.kind == "relative_error":
            txt = (f"{self.quantity}: relative error {self.difference:.3f} ± {self.difference_se:.3f} "
                   f"(max |z| {self.max_z:.1f})")
        elif self.kind == "distance":
            txt = f"{self.quantity}: distance {self.difference:.3f} ± {self.difference_se:.3f}"
        elif self.kind == "set":
            txt = f"{self.quantity}: {int(self.difference)} differences"
        else:
            txt = (f"{self.quantity}: sampled {self.sampled:.3f} ± {self.sampled_se:.3f} vs theory "
                   f"{self.predicted:.3f} (Δ = {self.difference:+.3f}, z = {self.max_z:.1f})")
        note = f"; {self.note}" if self.note else ""
        if not math.isfinite(self.tolerance):
            return [f"{txt} — reported, not tested [{self.theory}]{note}"]
        ok = "ok" if self.within else "OUTSIDE"
        return [f"{txt} — {ok} (tolerance {self.tolerance:.3g}) [{self.theory}]{note}"]


@dataclass(frozen=True, repr=False)
class TheoryComparison(Record):
    """All agreements of a run with the theories that apply.

    theories : names of the theories used.   skipped : {theory: why it was not applied}.
    agreements : tuple of :class:`Agreement`.   all_within : every agreement within its tolerance.
    marginal_label, marginal_grid (grid,), marginal_density (class, grid) : the single-neuron readout marginal the
    solved theory predicts (linear one-hidden-layer nets: N(0, U_rr); the mean field: its marginals), for the
    figures; "" and None when no theory gives one.
    """

    theories: tuple
    skipped: dict
    agreements: tuple
    all_within: bool
    marginal_label: str = ""
    marginal_grid: np.ndarray | None = array_field("grid", default=None)
    marginal_density: np.ndarray | None = array_field("class", "grid", default=None)

    @property
    def tested(self) -> tuple:
        """The agreements that were tested: those with a finite tolerance (the others are reported only)."""
        return tuple(a for a in self.agreements if math.isfinite(a.tolerance))

    def __getitem__(self, quantity: str) -> Agreement:
        return self.get(quantity)

    def get(self, quantity: str, theory: str | None = None) -> Agreement:
        """The first agreement on ``quantity`` (from a theory whose name contains ``theory``, if given)."""
        for a in self.agreements:
            if a.quantity == quantity and (theory is None or theory in a.theory):
                return a
        raise KeyError(f"no agreement {quantity!r}{'' if theory is None else f' from {theory!r}'}; have "
                       f"{[(a.quantity, a.theory) for a in self.agreements]}")

    def summary(self) -> list[str]:
        tested = self.tested
        lines = [f"theories: {', '.join(self.theories) or 'none'}; "
                 f"{sum(a.within for a in tested)}/{len(tested)} tested agreements within tolerance"
                 + (f", {len(self.agreements) - len(tested)} reported only" if len(tested) < len(self.agreements)
                    else "")]
        for a in self.agreements:
            lines += a.summary()
        for k, v in self.skipped.items():
            lines.append(f"(skipped {k}: {v})")
        return lines


# ----------------------------------------------------------------------------------------------------- helpers
def _matrix_agreement(name, theory, samples, predicted, tolerance, note="", scale=None) -> Agreement:
    """``samples`` (C, D, ...) per-draw estimates of a matrix whose theory value is ``predicted``; errors are
    relative to ‖predicted‖ (or to ``scale`` when that is larger, e.g. ‖Y_test‖ for a predictor that vanishes)."""
    mu, se = mean_se(samples)
    pred = np.asarray(predicted, float)
    nrm = max(float(np.linalg.norm(pred)), float(scale or 0.0), 1e-300)
    err = float(np.linalg.norm(mu - pred) / nrm)
    err_se = float(np.sqrt(np.sum(se**2)) / nrm)
    z = np.abs(mu - pred) / np.where(se > 0, se, np.inf)
    return Agreement(quantity=name, theory=theory, kind="relative_error", sampled=float(np.linalg.norm(mu)),
                     sampled_se=err_se * nrm, predicted=nrm, difference=err, difference_se=err_se,
                     max_z=float(np.max(z)), tolerance=float(tolerance),
                     within=bool(err <= tolerance + 3 * err_se), note=note)


def _scalar_agreement(name, theory, value, se, predicted, tolerance, note="") -> Agreement:
    d = float(value - predicted)
    return Agreement(quantity=name, theory=theory, kind="difference", sampled=float(value), sampled_se=float(se),
                     predicted=float(predicted), difference=d, difference_se=float(se),
                     max_z=float(abs(d) / se) if se > 0 else (0.0 if d == 0 else float("inf")),
                     tolerance=float(tolerance), within=bool(abs(d) <= tolerance), note=note)


def _finite_n_tolerance(rd: RunData, factor: float = 5.0) -> float:
    """Expected relative size of the finite-width corrections to an N → ∞ theory, O(1/N): ``factor / width``."""
    return factor / rd.width


def _per_draw_U(rd: RunData) -> np.ndarray:
    return np.einsum("cdnr,cdns->cdrs", rd.a, rd.a, optimize=True) / rd.width


def _kernel_agreement(out, skipped, quantity, name, rd, layer, predicted, tol, note):
    """The kernel of ``layer`` against the theory's, or a note in ``skipped`` when the run holds no kernel."""
    if not rd.has_kernels(layer):
        skipped[f"{name} [{quantity}]"] = (f"the run recorded neither z{layer}, the weights nor the kernel "
                                           f"Kz{layer}")
        return
    out.append(_matrix_agreement(quantity, name, _per_draw_K(rd, layer), predicted, tol, note))


def _per_draw_K(rd: RunData, layer: int, max_draws: int = 150) -> np.ndarray:
    """zᵀz/N of ``layer`` at up to ``max_draws`` draws per chain, (C, D', P, P); without z, the streamed block
    means (C, B, P, P), whose spread gives the batch-means error — as one sequence (1, C·B, P, P) when a chain holds
    fewer than 4 blocks (many chains), too few for a within-chain autocorrelation."""
    if not rd.has_z(layer):
        Kb, _ = rd.kernel_batches(layer, pre=True)
        per_chain = Kb.shape[0] // rd.n_chains
        return Kb.reshape(((rd.n_chains, per_chain) if per_chain >= 4 else (1, Kb.shape[0])) + Kb.shape[1:])
    z = rd.z(layer)
    D = z.shape[1]
    sub = np.unique(np.linspace(0, D - 1, min(max_draws, D)).astype(int))
    return np.einsum("cdnp,cdnq->cdpq", z[:, sub], z[:, sub], optimize=True) / rd.width


# ------------------------------------------------------------------------------------------------------ theories
def _linear(rd: RunData, out: list, used: list, skipped: dict, solved: dict):
    tol = _finite_n_tolerance(rd)
    if rd.depth == 1:
        th = lt.linear_saddle_point(rd.X, rd.Y, temperature=rd.temperature, sigma_a2=rd.sigma_a2,
                                    sigma_w2=rd.sigma_w2, readout=rd.readout, X_test=rd.X_test)
        name = "theory.linear.linear_saddle_point"
        used.append(name)
        sd = np.sqrt(np.diag(th.U))
        g = np.linspace(-4 * sd.max(), 4 * sd.max(), 400)
        solved.update(marginal_label="theory N(0, U)", marginal_grid=g,
                      marginal_density=np.array([np.exp(-g**2 / (2 * v**2)) / np.sqrt(2 * np.pi * v**2) for v in sd]))
        note = "N → ∞ theory; finite-N corrections O(1/N)"
        out.append(_matrix_agreement("U", name, _per_draw_U(rd), th.U, tol, note))
        _kernel_agreement(out, skipped, "K1", name, rd, 1, th.K1, tol, note)
        if rd.f is not None:
            out.append(_matrix_agreement("f_train", name, rd.f, th.f_train, tol, note))
        if rd.f_test is not None and th.f_test is not None:
            out.append(_matrix_agreement("f_test", name, rd.f_test, th.f_test, tol, note,
                                         scale=None if rd.Y_test is None else np.linalg.norm(rd.Y_test)))
    else:
        if rd.readout != "nonlazy":
            skipped["theory.linear.linear_leading_order"] = "non-lazy readout only"
            return
        th = lt.linear_leading_order(rd.X, rd.Y, depth=rd.depth, sigma_a2=rd.sigma_a2, sigma_w2=rd.sigma_w2,
                                     X_test=rd.X_test)
        name = "theory.linear.linear_leading_order"
        used.append(name)
        note = "leading order in large P at T → 0: approximate at finite P"
        tol = max(tol, 0.5)
        out.append(_matrix_agreement("U", name, _per_draw_U(rd), th.U, tol, note))
        for l in range(1, rd.depth + 1):
            _kernel_agreement(out, skipped, f"K{l}", name, rd, l, th.K[l - 1], tol, note)
        _deep_linear_t0(rd, out, used, skipped)


def _deep_linear_t0(rd: RunData, out: list, used: list, skipped: dict):
    """The derived finite-P theory of deep linear nets (exact as N → ∞, T → 0).  Its T → 0 limit differs from the
    finite-T posterior by O(T) relatively, so it is compared only at T <= 0.02, with tolerance 5/N + 2T."""
    name = "theory.deep_linear.deep_linear_zero_temperature"
    if not rd.temperature <= 0.02:
        skipped[name] = f"a T → 0 theory; the run's T = {rd.temperature} > 0.02"
        return
    try:
        th = dl.deep_linear_zero_temperature(rd.X, rd.Y, depth=rd.depth, sigma_a2=rd.sigma_a2, sigma_w2=rd.sigma_w2)
    except (ValueError, RuntimeError) as e:
        skipped[name] = str(e)
        return
    used.append(name)
    tol = _finite_n_tolerance(rd) + 2 * rd.temperature
    note = "N → ∞, T → 0 at finite P: corrections O(1/N) and O(T)"
    out.append(_matrix_agreement("U", name, _per_draw_U(rd), th.U, tol, note))
    for l in range(1, rd.depth + 1):
        _kernel_agreement(out, skipped, f"K{l}", name, rd, l, th.K[l - 1], tol, note)


def meanfield_applies(rd: RunData) -> bool:
    """Whether :func:`compare_with_theory` compares the run ``rd`` with the single-neuron mean field (module
    docstring: a nonlinear net of one hidden layer on the orthogonal toy task, m ≤ 3, non-lazy readout)."""
    return (rd.activation != "linear" and rd.depth == 1 and rd.is_orthogonal_toy and rd.m <= 3
            and rd.readout == "nonlazy")


def meanfield_theory(rd: RunData) -> mf.MeanFieldResult:
    """The single-neuron mean field at the run's data and hyperparameters (what :func:`compare_with_theory`
    compares with); it reads only the data and the hyperparameters, so it can be solved before the draws are
    analysed."""
    return mf.single_neuron_meanfield(rd.X, rd.Y, labels=rd.labels, nonlinearity=rd.activation,
                                      temperature=rd.temperature, sigma_a2=rd.sigma_a2, sigma_w2=rd.sigma_w2)


def code_fractions_per_draw(ids, m: int) -> dict:
    """{code string: fraction of the units on that code at a draw, averaged over the draws} from the code ids
    (chain, draw, unit) of :class:`~bnnzoo.diagnostics.codes.CodeResult` (``ids``) on ``m`` classes; every one of the
    2^m codes, zeros included."""
    ids = np.asarray(ids, int)
    counts = np.bincount(ids.reshape(-1), minlength=1 << m)
    return {code_string(i, m): float(c / ids.size) for i, c in enumerate(counts)}


def _meanfield(rd: RunData, out: list, used: list, skipped: dict, solved: dict, codes=None, meanfield=None):
    name = "theory.meanfield.single_neuron_meanfield"
    th = meanfield.result() if meanfield is not None else meanfield_theory(rd)
    if not th.normalizable:
        skipped[name] = th.status
        return th
    used.append(name)
    solved.update(marginal_label="mean-field theory", marginal_grid=np.asarray(th.grid),
                  marginal_density=np.asarray(th.marginals))

    cr = codes if codes is not None else neural_codes(rd, 1)
    m = rd.m
    modal = np.array([code_string(k, m) for k in np.asarray(cr.modal).reshape(-1)])  # all units
    n = modal.size
    # fraction of the units on each code at a draw, averaged over the draws (all units, every chain); a code off the
    # theory is compared when it holds one unit's share (1/n) on average; the standard error is binomial over the
    # n units (each unit one observation: a unit's draws are not independent of each other)
    fractions = code_fractions_per_draw(cr.ids, m)
    per_draw = {k: f for k, f in fractions.items() if f >= 1.0 / n or k in th.branch_code}
    abar = rd.a.mean(1).reshape(-1, m)
    th_codes = list(th.branch_code)
    all_codes = th_codes + sorted(set(per_draw) - set(th_codes))
    for k in all_codes:
        p = per_draw.get(k, 0.0)
        p_th = float(th.branch_mass[th_codes.index(k)]) if k in th_codes else 0.0
        se = math.sqrt(max(p * (1 - p), 1.0 / n) / n)
        note = "" if k in th_codes else "code absent from the theory"
        out.append(_scalar_agreement(f"mass[{k}]", name, p, se, p_th, MASS_TOLERANCE, note))
    # centres from the units that stay in their branch (persistence ≥ 0.9): the theory's branch mean is the mean
    # within one basin, and a unit that hops between basins (011 ↔ 111 at N = 100) has a time average in between
    steady = np.asarray(cr.persistence_per_unit).reshape(-1) >= 0.9
    for k in th_codes:
        sel = (modal == k) & steady
        if sel.sum() < 2:
            continue
        g = th_codes.index(k)
        cen = abar[sel].mean(0)
        se = abar[sel].std(0, ddof=1) / math.sqrt(sel.sum())
        ref = th.branch_mean[g]
        err = float(np.linalg.norm(cen - ref))
        # tolerance: finite-N shifts of a branch centre, taken as |a_γ|/√N
        tol = max(float(np.linalg.norm(ref)), 1.0) / math.sqrt(rd.width)
        out.append(Agreement(
            quantity=f"centre[{k}]", theory=name, kind="distance", sampled=float(np.linalg.norm(cen)),
            sampled_se=float(np.linalg.norm(se)), predicted=float(np.linalg.norm(ref)), difference=err,
            difference_se=float(np.linalg.norm(se)),
            max_z=float(np.max(np.abs(cen - ref) / np.where(se > 0, se, np.inf))), tolerance=float(tol),
            within=bool(err <= tol), note=f"sampled ({', '.join(f'{v:.2f}' for v in cen)}) vs theory "
                                          f"({', '.join(f'{v:.2f}' for v in ref)})"))
    present = {k for k, f in fractions.items() if f >= 0.02}
    missing = sorted(set(th_codes) - present)
    extra = sorted(present - set(th_codes))
    out.append(Agreement(
        quantity="codes", theory=name, kind="set", sampled=float(len(present)), sampled_se=0.0,
        predicted=float(len(th_codes)), difference=float(len(missing) + len(extra)), difference_se=0.0, max_z=0.0,
        tolerance=0.0, within=not missing and not extra,
        note=f"theory {sorted(map(str, th_codes))}, sampled (≥ 2 % of units at a draw) {sorted(map(str, present))}"))
    out.append(_matrix_agreement("U", name, _per_draw_U(rd), th.U, _finite_n_tolerance(rd),
                                 "N → ∞ theory; finite-N corrections O(1/N)"))
    return th


def _outliers(rd: RunData, out: list, used: list, branches=None):
    o = branches.outliers if branches is not None and branches.outliers is not None else \
        find_outliers(rd.a, unit_msq=rd.unit_msq(rd.depth))
    name = "docs/theory.md §3 (sparse code: m outliers, one per class)"
    used.append(name)
    per = np.array(o.per_chain, float)
    out.append(_scalar_agreement("outliers_per_chain", name, per.mean(),
                                 per.std(ddof=1) / math.sqrt(len(per)) if len(per) > 1 else 0.0, rd.m, 0.5,
                                 f"per chain {list(o.per_chain)}; one per class: {o.one_per_class}"))
    # the count alone can agree while a chain holds two outliers of one class (not yet relaxed): check the classes
    ok = np.array(o.one_per_class_per_chain, float)
    chains, classes = np.asarray(o.outlier_chain, int), np.asarray(o.outlier_class, int)
    out.append(_scalar_agreement("chains_with_one_outlier_per_class", name, ok.mean(),
                                 ok.std(ddof=1) / math.sqrt(len(ok)) if len(ok) > 1 else 0.0, 1.0, 0.0,
                                 f"outlier classes per chain: "
                                 f"{[sorted(classes[chains == c].tolist()) for c in range(len(ok))]}"))


def _gp(rd: RunData, out: list, used: list, skipped: dict):
    if rd.X_test is None or rd.f_test is None:
        skipped["theory.gp.gp_posterior"] = "the run has no test set"
        return
    if rd.Y_test is None:
        skipped["theory.gp.gp_posterior"] = "the run's test inputs have no targets (e.g. added by bnnzoo.predict)"
        return

    if rd.activation not in gpt.NONLINEARITIES:
        skipped["theory.gp.gp_posterior"] = f"no NNGP kernel for {rd.activation!r}"
        return
    name = "theory.gp.gp_posterior"
    # the GP baseline is the run's lazy twin: output kernel σ_a² K_φ with σ_a² = 1 (lazy) and likelihood variance T
    sa2 = rd.sigma_a2 if rd.readout == "lazy" else 1.0
    gp = gpt.gp_posterior(rd.X, rd.Y, rd.X_test, nonlinearity=rd.activation, depth=rd.depth,
                          temperature=rd.temperature, sigma_w2=rd.sigma_w2, sigma_a2=sa2, Y_test=rd.Y_test,
                          labels_test=rd.labels_test)
    used.append(name)
    f_mean, f_se = mean_se(rd.f_test)
    eg_s = float(np.mean((rd.Y_test - f_mean) ** 2))
    d = 2 * (f_mean - rd.Y_test) * f_se
    eg_se = float(np.sqrt(np.sum(d**2)) / d.size)
    eg_gp = float(np.mean((rd.Y_test - gp.mean) ** 2))
    if rd.activation == "linear":
        note, tol = "linear nets: mean predictor = GP predictor (docs/theory.md §3)", _finite_n_tolerance(rd)
        tol_e = max(3 * tol * eg_gp, 1e-3)
    else:
        note, tol, tol_e = "nonlinear non-lazy nets need not match the GP (reported, not tested)", float("inf"), \
            float("inf")
    out.append(_matrix_agreement("f_test_vs_GP", name, rd.f_test, gp.mean, tol, note,
                                 scale=np.linalg.norm(rd.Y_test)))
    out.append(_scalar_agreement("generalization_error_vs_GP", name, eg_s, eg_se, eg_gp, tol_e,
                                 "mean over test points and outputs of (y − f̄)²; " + note))


def compare_with_theory(idata, codes=None, branches=None, meanfield=None) -> TheoryComparison:
    """Compare a run with every theory that applies (module docstring).  ``codes`` / ``branches``: results already
    computed by :func:`~bnnzoo.diagnostics.codes.neural_codes` / :func:`~bnnzoo.diagnostics.branches.readout_branches`
    (recomputed if None); ``meanfield``: a :class:`concurrent.futures.Future` of :func:`meanfield_theory` already
    started (solved here if None; its errors are those of the solve)."""
    rd = run_data(idata)
    out: list[Agreement] = []
    used: list[str] = []
    skipped: dict[str, str] = {}
    solved: dict = {}
    if rd.activation == "linear":
        try:
            _linear(rd, out, used, skipped, solved)
        except (ValueError, RuntimeError) as e:
            skipped["theory.linear"] = str(e)
    elif meanfield_applies(rd):
        try:
            _meanfield(rd, out, used, skipped, solved, codes=codes, meanfield=meanfield)
        except (ValueError, RuntimeError, NotImplementedError) as e:
            skipped["theory.meanfield"] = str(e)
    else:
        skipped["theory.meanfield"] = "needs one hidden layer, the orthogonal toy task, m ≤ 3, non-lazy readout"
    if rd.activation == "relu" and rd.readout == "nonlazy" and rd.is_orthogonal_toy:
        _outliers(rd, out, used, branches)
    try:
        _gp(rd, out, used, skipped)
    except (ValueError, np.linalg.LinAlgError) as e:
        skipped["theory.gp.gp_posterior"] = str(e)
    return TheoryComparison(theories=tuple(used), skipped=skipped, agreements=tuple(out),
                            all_within=bool(all(a.within for a in out)), **solved)
