"""Small helpers shared by several test modules (import them as ``from tests._helpers import ...``)."""

import numpy as np


def rng(seed=0):
    return np.random.default_rng(seed)
