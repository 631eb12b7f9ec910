"""``reproduce/influence.py``: fits with and without their most influential point, and the rows' quoted slopes.

The last test checks every fit of :data:`reproduce.influence.ROWS` against the number the row's ``value`` quotes in
the committed ``reproduce/claims.toml`` (hard-coded here, each with the row it comes from), within its rounding.
"""

import re
import tomllib

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import load_script

I = load_script("influence")
R = load_script("render")


@pytest.mark.parametrize("se", [None, "relative"])
def test_exact_power_law_gives_its_exponent_with_and_without_every_point(se):
    """On y = 3 x^0.7 the slope is 0.7 with every point and with any one left out (weighted or not)."""
    x = np.array([2.0, 4, 8, 16, 32])
    y = 3 * x ** 0.7
    f = I.fit_with_and_without(x, y, se=None if se is None else 0.05 * y)
    assert f["slope"] == pytest.approx(0.7, abs=1e-12) and f["n"] == 5
    assert f["se"] == pytest.approx(0, abs=1e-6 if se is None else 0.1)
    assert f["without"]["slope"] == pytest.approx(0.7, abs=1e-12) and f["without"]["x"] in x
    assert all(b == pytest.approx(0.7, abs=1e-12) for _, b, _ in f["left_out"])


def test_linear_scale_fits_y_on_x():
    """With log=False the slope is that of y on x (here a line through negative values)."""
    f = I.fit_with_and_without([1, 2, 3, 4], [-1.0, -3.0, -5.0, -7.0], log=False)
    assert f["slope"] == pytest.approx(-2) and f["without"]["slope"] == pytest.approx(-2)


def test_planted_outlier_is_the_most_influential_point():
    """A point at the end of the range, ten times off an exact power law, is the one named (of every point left out
    it changes the slope most) and without it the exponent is recovered; with the outlier at the other end, too.
    (Influence is on the slope: a point off the line near the middle of log x moves the intercept more than the
    slope, and leaving out an end point can then change the slope more.)"""
    x = np.array([1.0, 2, 4, 8, 16, 32])
    for i in (0, 5):
        y = x ** 0.5
        y[i] *= 10
        f = I.fit_with_and_without(x, y)
        assert f["without"]["x"] == x[i]
        assert f["without"]["slope"] == pytest.approx(0.5, abs=1e-12)
        assert abs(f["slope"] - 0.5) > 0.05


@pytest.mark.parametrize("x, y, word", [([1, 2], [1, 2], "x must hold at least 3 points"),
                                        ([1, 2, 3], [1, 2], "y must have one value per x"),
                                        ([1, 1, 2], [1, 2, 3], "x must take at least 3 distinct"),
                                        ([1, 2, 3], [1, -2, 3], "positive on a log scale")])
def test_bad_points_raise_one_line(x, y, word):
    """Fewer than 3 points (and other unusable input) raise a one-line ValueError naming the argument."""
    with pytest.raises(ValueError, match=word) as e:
        I.fit_with_and_without(x, y)
    assert "\n" not in str(e.value)


def test_rows_are_every_row_that_quotes_a_slope():
    """ROWS covers exactly the rows whose ``value`` matches the render check's pattern."""
    with open(R.CLAIMS, "rb") as f:
        claims = tomllib.load(f)["claim"]
    assert set(I.ROWS) == {c["id"] for c in claims if R.SLOPE.search(c.get("value", ""))}


# (row, series key) -> (quoted number, decimals): the "with" fit (for per-seed fits the mean over seeds; a list:
# the per-seed slopes) as the row's `value` in reproduce/claims.toml quotes it.
QUOTED = {
    ("A1", "linear"): (-0.014, 3),              # A1: "log–log slopes −0.014 ± 0.003, ..."
    ("A1", "sigmoidal"): (-0.010, 3),           # A1: "..., −0.010 ± 0.002, ..."
    ("A1", "relu"): (-0.017, 3),                # A1: "..., −0.017 ± 0.004"
    ("A1", "linear_fixed"): (0.482, 3),         # A1: "control ...: slope 0.482 ± 0.001"
    ("A1", "relu_bulk"): (-0.42, 2),            # A1: "ReLU bulk readout shrinks as P^(−0.42 ± 0.04)"
    ("Q1", "readout"): (0.500, 3),              # Q1: "fitted exponent ... 0.500 ± 0.012 (readout)"
    ("Q1", "preactivation"): (0.494, 3),        # Q1: "0.494 ± 0.012 (preactivation)"
    ("S4", "excess_111"): (-0.91, 2),         # S4: "log–log slope of the excess in N −0.91 ± 0.06"
    ("B1", "readout"): (0.51, 2),               # B1: "(exponents 0.51 and 0.50 over the two widths)"
    ("B1", "preactivation"): (0.50, 2),         # B1: idem
    ("B2", "softplus_readout"): (0.50, 2),      # B2: "softplus exponent 0.50 (|a|) and 0.48 (z)"
    ("B2", "softplus_preactivation"): (0.48, 2),
    ("B2", "relu2_readout"): (0.34, 2),         # B2: "ReLU² 0.34 and 0.31"
    ("B2", "relu2_preactivation"): (0.31, 2),
    ("C1", "fixed"): (0.67, 2),                 # C1: "slope per seed 0.32 / 1.02 / 0.67, mean 0.67 ± 0.20"
    ("C1", "fixed_A0.5"): ([0.90, 1.05], 2),    # C1: "A = 0.5 ... (seeds 1, 2): slopes 0.90, 1.05" (per seed)
    ("C1", "proportional"): (1.14, 2),          # C1: "slope per seed 1.00 / 1.28 / 1.15, mean 1.14 ± 0.08"
    ("C1", "proportional_A0.5"): (1.11, 2),     # C1: "A = 0.5 reached by one seed (slope 1.11)"
    ("C1", "proportional_6"): (1.17, 2),       # C1: "slope per seed 0.79 / 1.41 / 1.19 / 1.35 / 0.85 / 1.46, mean 1.17 ± 0.12"
    ("C1", "proportional_aligned"): (1.18, 2),  # C1: "from the aligned start ... mean 1.18 ± 0.11"
    ("C2", "nngp"): (2.10, 2),                  # C2: "1.75 / 2.83 / 1.73, mean 2.10 ± 0.37"
    ("C4", "N1_d4"): (0.42, 2),                 # C4: "exponent in N1 0.42 ± 0.05, 0.48 ± 0.04, 0.56 ± 0.05,
    ("C4", "N1_d8"): (0.48, 2),                 #      0.51 ± 0.11 at d = 4, 8, 16, 32"
    ("C4", "N1_d16"): (0.56, 2),
    ("C4", "N1_d32"): (0.51, 2),
    ("C4", "joint_b"): (0.52, 2),               # C4: "b = 0.52 ± 0.04, c = −0.29 ± 0.05"
    ("C4", "joint_c"): (-0.29, 2),
    ("C6", "pstar"): (1.10, 2),                 # C6: "slope per seed 1.78 / 0.94 / 0.57, mean 1.10 ± 0.36"
    ("C6", "specialists"): (0.61, 2),           # C6: "exponent 0.61 ± 0.06 (per seed 0.72 / 0.51 / 0.60)"
    ("C7", "d"): (1.31, 2),                     # C7: "per seed 1.35 / 1.03 / 1.57 / 1.21 / 1.38, mean 1.31 ± 0.09"
    ("C8", "fixed"): (-0.13, 2),                # C8: "β = 1: −0.13 ± 0.05"
    ("C8", "sqrtL"): (0.18, 2),                 # C8: "β = √L: +0.18 ± 0.07"
    ("C9", "fixed"): (0.67, 2),                 # C9: "per seed 0.32 / 1.02 / 0.67, mean 0.67 ± 0.20"
    ("C9", "fixed_A0.5"): ([0.90, 1.05], 2),    # C9: "(seeds 1, 2): slopes 0.90, 1.05" (per seed)
    ("G6", "gaussian_small"): (0.723, 3),       # G6: "log-slope of T90 in D 0.723 ± 0.010 per layer"
    ("G6", "gaussian_scaled"): (0.07, 2),       # G6: "(log-slope 0.07 ± 0.03)"
    ("G7", "end_to_end_alpha"): (1.45, 2),      # G7: "end-to-end b0, exponents α = 1.45 ± 0.10, β = −0.54 ± 0.06"
    ("G7", "end_to_end_beta"): (-0.54, 2),
    ("G7", "per_layer_alpha"): (1.96, 2),       # G7: "per-layer b0, α = 1.96 ± 0.18, β = −3.38 ± 0.49"
    ("G7", "per_layer_beta"): (-3.38, 2),
    ("G8", "orthogonal"): (0.002, 3),           # G8: "slope 0.002 ± 0.007 per layer"
    ("G8", "gaussian_scaled"): (0.07, 2),       # G8: "(log-slope 0.07 ± 0.03)"
}


@pytest.mark.parametrize("row", sorted(I.ROWS))
def test_each_row_reproduces_its_quoted_slope(row):
    """Every fit of the row gives the number its ``value`` quotes (to its digits), and the sentence states the fit
    without its most influential point, or that it rests on two points (the render check's words)."""
    fits = I.influence(row)
    assert {(row, f["key"]) for f in fits} == {k for k in QUOTED if k[0] == row}
    for f in fits:
        want, digits = QUOTED[(row, f["key"])]
        got = [v for v in f["per_seed"] if v is not None] if isinstance(want, list) else f["value"]
        assert got == pytest.approx(want, abs=0.5 * 10 ** -digits + 1e-9), (row, f["key"])
    sentence = I.summary(row)
    assert re.search(r"\bwithout\b|\btwo points\b", sentence) and "\n" not in sentence


def test_unknown_row_is_one_line():
    """An unknown row id is a one-line ValueError naming the argument."""
    with pytest.raises(ValueError, match="row_id must be one of"):
        I.summary("Z9")


def test_main_prints_one_line_per_row(capsys):
    """``main`` prints ``id: sentence`` per row named."""
    assert I.main(["C2", "B1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["C2", "B1"]
    assert "without d = 16" in out[0] and "two points" in out[1]
