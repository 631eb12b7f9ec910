"""NumPyro models of the zoo (plain functions of their data) and the registry of named entries."""

from .activations import ACTIVATIONS, get_activation, sigmoid_erf
from .fcn import check_fcn_args, default_sigma_a2, fcn, fcn_dims, likelihood_variance, readout_scale
from .zoo import ZOO, Observable, ZooEntry, get_entry, list_entries, register

__all__ = ["fcn", "check_fcn_args", "default_sigma_a2", "fcn_dims", "likelihood_variance", "readout_scale",
           "ACTIVATIONS", "get_activation", "sigmoid_erf", "ZOO", "ZooEntry", "Observable", "get_entry",
           "list_entries", "register"]
