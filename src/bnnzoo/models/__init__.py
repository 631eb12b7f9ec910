"""NumPyro models of the zoo (plain functions of their data) and the registry of named entries."""

from .activations import ACTIVATIONS, get_activation, sigmoid_erf
from .fcn import (check_fcn_args, default_sigma_a2, fcn, fcn_dims, fcn_forward, fcn_prior_variances,
                  likelihood_variance, readout_scale)
from .zoo import ZOO, Observable, ZooEntry, get_entry, list_entries, register

# Each model file registers its entries on import.
from .attention import attention, attention_forward, attention_prior_variances  # noqa: E402
from .gated import gated, gated_forward, gated_prior_variances, pathway_map  # noqa: E402
from .three_layer import three_layer, three_layer_forward, three_layer_prior_variances  # noqa: E402

__all__ = ["fcn", "check_fcn_args", "default_sigma_a2", "fcn_dims", "likelihood_variance", "readout_scale",
           "ACTIVATIONS", "get_activation", "sigmoid_erf", "ZOO", "ZooEntry", "Observable", "get_entry",
           "list_entries", "register", "three_layer", "attention", "gated", "pathway_map", "fcn_forward",
           "three_layer_forward", "attention_forward", "gated_forward", "fcn_prior_variances",
           "three_layer_prior_variances", "attention_prior_variances", "gated_prior_variances"]
