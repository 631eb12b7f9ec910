"""The reproduction experiments: one module per experiment, one command for all of them.

Each experiment module declares ``NAME`` (the command's name), ``CLAIMS`` (the rows of the reproduction page its
runs test), ``SIZES`` (its settings at ``--size ci``, ``cpu`` and ``paper``) and ``run(argv)``, which parses its
options, samples and writes one JSON summary to ``reproduce/results/<stem>.json``.  Pages are never written by an
experiment: ``python -m reproduce render`` makes every result page and the reproduction table from the JSON files
and ``reproduce/claims.toml`` (``render --check`` fails when a committed page differs from what they give).

Run ``python -m reproduce list`` for the experiments, ``python -m reproduce NAME --help`` for one's options.
"""

from __future__ import annotations

import importlib

EXPERIMENTS = (
    "fig2_toy", "finite_size", "readout_scaling", "depth", "other_codes", "neural_collapse", "critical_temperature",
    "ym_sweep", "certified", "mnist_generalization", "cifar10", "richness", "curse_of_detail", "sample_complexity",
    "attention_context", "attention_dim", "gated_xor", "gated_lazy", "gated_delta", "deep_linear_dynamics",
)
"""Every experiment, in the order of the reproduction page."""


def load(name: str):
    """The module of experiment ``name``; ValueError naming the valid names otherwise."""
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {', '.join(EXPERIMENTS)}, got {name!r}")
    return importlib.import_module(f"{__name__}.{name}")


def experiment_of(stem: str) -> str | None:
    """The experiment whose results a result-file stem holds (the longest name the stem starts with), or None."""
    hits = [n for n in EXPERIMENTS if stem == n or stem.startswith(n + "_") or stem.startswith(n + ".")]
    return max(hits, key=len) if hits else None
