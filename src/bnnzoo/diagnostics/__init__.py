"""Diagnostics: what the posterior of a Bayesian network does, in numbers, verdicts and (with :mod:`bnnzoo.plots`)
figures — ergodicity breaking, readout branches and outliers, neural codes and their switching, permutation symmetry,
kernels and richness, and the comparison with analytic theory — for the fully-connected nets (readout and hidden
layers) and, through the unit layers each zoo entry declares (:mod:`bnnzoo.diagnostics.units`) and its own observables
(:mod:`bnnzoo.diagnostics.observables`), for every other entry.

Every diagnostic returns a typed record (a frozen dataclass with a readable repr, ``to_dict`` and
``to_dataset``); :func:`diagnose` runs all that apply and stores them in the InferenceData.

    >>> import bnnzoo
    >>> idata = bnnzoo.sample("sigmoidal", bnnzoo.toy_task(P=100, y_neg=0.5), num_chains=2, record=("z",))
    >>> report = bnnzoo.diagnostics.diagnose(idata)      # also stores diagnostics* groups in idata
    >>> report.verdicts["ergodicity[a]"], report.coding_scheme
    ('broken', 'redundant')
"""

from ._data import RunData, run_data
from .._record import Record
from .branches import BranchResult, OutlierResult, find_outliers, readout_branches
from .codes import CodeResult, code_string, codes_per_layer, neural_codes
from .compare import Agreement, TheoryComparison, compare_with_theory
from .ergodicity import ErgodicityResult, ergodicity, ergodicity_breaking, rhat_neurons
from ..inference.health import SamplerHealth, gate_verdicts, sampler_health
from .kernels import KernelResult, cka, d_lr, kernels_and_richness, nc1, prior_kernels
from .planted import PlantedCheck, planted_check
from .report import DiagnosticReport, diagnose, load_report, order_parameters
from .run import Run, as_run, read_run
from .symmetry import SymmetryResult, identity_correlation, permutation_symmetry, symmetry_of
from .units import ClusterResult, UnitTrajectories, representation_kernels, unit_clusters, unit_trajectories

__all__ = [
    "diagnose", "load_report", "DiagnosticReport", "order_parameters", "read_run", "as_run", "Run",
    "ergodicity_breaking", "ergodicity", "ErgodicityResult", "rhat_neurons",
    "readout_branches", "find_outliers", "BranchResult", "OutlierResult",
    "neural_codes", "codes_per_layer", "CodeResult", "code_string",
    "permutation_symmetry", "identity_correlation", "SymmetryResult", "symmetry_of",
    "unit_trajectories", "UnitTrajectories", "unit_clusters", "ClusterResult", "representation_kernels",
    "kernels_and_richness", "KernelResult", "cka", "d_lr", "nc1", "prior_kernels",
    "compare_with_theory", "TheoryComparison", "Agreement",
    "sampler_health", "gate_verdicts", "SamplerHealth",
    "planted_check", "PlantedCheck",
    "run_data", "RunData", "Record",
]
