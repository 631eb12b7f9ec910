"""Analytic theory for the zoo's networks, each result a typed record with ``to_dataset()`` (an ``xarray.Dataset``
with named dims, storable as an extra InferenceData / NetCDF group).  Conventions: inputs are rows, X (P, N0),
Y (P, m), K0 = X Xᵀ/N0; non-lazy readout f = zᵀa/N with likelihood variance T/N, lazy f = zᵀa/√N with variance T.

Theories (tag: [paper] van Meegen & Sompolinsky 2025; [derived] ours, checked numerically; [standard] textbook):

* :func:`linear_leading_order` [paper] — deep linear net, leading order in large P, T → 0: readout marginal
  N(0, U), U^{L+1} = σ_a^{2L} Yᵀ K0⁻¹ Y; per-layer kernels K_ℓ (train and test); E[z^L | a] = Y U⁻¹ a;
  mean predictor Yᵀ K0⁻¹ k0(x).  Valid for σ_a² ∝ P^{-1/L} and large P; at finite P it misses the σ_a² U term
  (≈ 20 % in U at σ_a² = 1, P = 5, orthogonal inputs).
* :func:`linear_saddle_point` [derived] — one hidden layer, exact as N → ∞ at any P and rescaled T:
  U⁻¹ = I/σ_a² − Λ K0 Λᵀ, F = U Λ K0 = Yᵀ − TΛ; U, Λ, F, K1 = E[zᵀz/N], test predictor and kernel; lazy readout =
  GP limit.  Agrees with the exact Gibbs sampler within its Monte-Carlo error plus O(1/N) and with the exact
  finite-N quadrature to O(1/N) (docs/validation.md).
* :func:`linear_exact_m1` [derived] — exact finite-N posterior moments (aᵀa/N, f, zᵀz/N) of the one-hidden-layer
  linear net with one output, by 1-D quadrature; any N, P, T.
* :func:`deep_linear_zero_temperature` [derived] — deep linear net, exact as N → ∞ and T → 0 at finite P: U and
  every layer's kernel from an m × m problem (Wishart large-deviation recursion); the leading order is its large-P
  limit.  Agrees with the exact deep Gibbs sampler to O(1/N) at finite P, where the leading order does not
  (docs/validation.md).
* :func:`deep_linear_saddle_point` [derived] — deep linear net, exact as N → ∞ at finite P and rescaled T: the
  layer kernels K_l = K0^{1/2} A^l K0^{1/2} from one P × P minimisation over A; U, the mean training output; any
  target rank (the toy task at y− = −½).  Depth 1 is :func:`linear_saddle_point`, T = 0 is
  :func:`deep_linear_zero_temperature`; agrees with the exact deep Gibbs sampler to O(1/N) (docs/theory.md §4).
* :func:`linear_evidence` [derived] — log evidence log p(Y | X) of the one-hidden-layer linear net at any N, P, T
  (lazy or non-lazy readout): the hidden weights integrated out exactly, the readout's m × m Gram matrix by
  quadrature (m = 1) or importance sampling; an MCMC-free check of the samplers' log Z.
* :func:`single_neuron_meanfield` [derived] — one hidden layer, any φ, orthogonal toy task (K0 = κ I), N → ∞:
  readout density p(a) ∝ N(a|0, σ_a²) Π_c M(λ_cᵀa)^{P_c}, its branches (modes, masses, codes), per-class mean
  activations, posterior-averaged feature kernel.  Reproduces the linear theory for φ = id and the four sigmoid
  branches at P = 40 of docs/theory.md §5.  ReLU at low T: p(a) is not normalisable (outlier neurons, outside this
  picture) — reported in ``status`` / ``normalizable``.
* :mod:`bnnzoo.theory.schemes` [derived] — the sigmoidal net's coding schemes on the toy task from that mean field:
  every self-consistent solution at one (P, y−, T) by a multi-start search of the convex mean-field action, the free
  energy of populations frozen in some of the branches, the law of one code's fraction at N units, and where a code
  appears or vanishes as y− changes.
* :func:`meanfield_critical_temperature` [derived] — the temperature T_c(P) above which that mean field of the
  sigmoidal net on the toy task has the 111 branch only (the redundant code gone): bracketed on a temperature grid,
  bisected, and confirmed by grid-free ascent of log p(a) (:func:`exact_ascent`) from the vanished modes
  (:mod:`bnnzoo.theory.critical_temperature`).
* :func:`nngp_kernel`, :func:`gp_posterior`, :func:`gp_generalization` [standard] — NNGP kernels of any depth for
  linear / ReLU / erf / sigmoid with the FCN scalings; GP predictor with noise T; class-wise generalization error.
  The N → ∞ limit of the lazy readout; for linear nets also the non-lazy mean predictor at T → 0.

The exact sampler used to test the linear theory is :func:`bnnzoo.inference.gibbs_linear.gibbs_linear`.
"""

from ._common import default_sigma_a2
from .critical_temperature import (exact_ascent, is_redundant, meanfield_critical_temperature, redundant_mass,
                                   toy_meanfield)
from .deep_linear import (DeepLinearSaddle, DeepLinearT0, deep_linear_saddle_point,
                          deep_linear_zero_temperature)
from .evidence import LinearEvidence, linear_evidence
from .gp import (GPGeneralization, GPPosterior, NONLINEARITIES, gp_generalization, gp_posterior, nngp_kernel,
                 phi_kernel)
from .linear import (LinearExactM1, LinearLeadingOrder, LinearSaddlePoint, linear_exact_m1, linear_leading_order,
                     linear_saddle_point)
from .meanfield import (MeanFieldResult, activation_moments, readout_marginal, single_neuron_meanfield,
                        single_neuron_meanfield_classes)

__all__ = [
    "default_sigma_a2",
    "linear_leading_order", "LinearLeadingOrder",
    "linear_saddle_point", "LinearSaddlePoint",
    "linear_exact_m1", "LinearExactM1",
    "deep_linear_zero_temperature", "DeepLinearT0",
    "deep_linear_saddle_point", "DeepLinearSaddle",
    "linear_evidence", "LinearEvidence",
    "single_neuron_meanfield", "single_neuron_meanfield_classes", "activation_moments", "readout_marginal",
    "MeanFieldResult",
    "meanfield_critical_temperature", "toy_meanfield", "redundant_mass", "is_redundant", "exact_ascent",
    "nngp_kernel", "phi_kernel", "gp_posterior", "gp_generalization", "GPPosterior", "GPGeneralization",
    "NONLINEARITIES",
]
