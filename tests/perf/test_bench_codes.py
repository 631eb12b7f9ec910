"""The benchmarks' code helpers (``benchmarks/_bench.py``: ``persistent_switches``, ``codes_of``) on small hand-made
arrays whose answers are counted by hand."""

import numpy as np
import pytest


def test_persistent_switches_count_changes_of_the_modal_code_between_windows(bench):
    # windows of 3 draws; the 10th draw is left over and must not count (its code 9 is nowhere else)
    codes = np.array([[[0, 3, 2], [0, 3, 1], [1, 3, 0],       # unit 0: modal 0, then 1, then 2: two switches
                       [1, 3, 2], [1, 0, 2], [0, 3, 2],       # unit 1: 3 throughout, one flicker per window: none
                       [1, 3, 0], [2, 3, 1], [2, 1, 2],       # unit 2: three codes once each (a tie: the smallest,
                       [9, 9, 9]],                            # 0), then 2, then a tie again (0): two switches
                      np.full((10, 3), 4)])                   # chain 1: every unit on 4: none
    switches, modal = bench.persistent_switches(codes, 3)
    assert switches.tolist() == [[2, 0, 2], [0, 0, 0]]
    assert modal.tolist() == [[[0, 3, 0], [1, 3, 2], [2, 3, 0]], [[4, 4, 4]] * 3]


def test_persistent_switches_refuse_an_empty_window(bench):
    with pytest.raises(ValueError, match="window must be >= 1"):
        bench.persistent_switches(np.zeros((1, 5, 2), int), 0)


def test_codes_of_sets_bit_c_where_the_class_c_mean_is_positive(bench):
    # points of classes 0, 0, 1, 2 (the fourth class has no point: its bit stays 0)
    Y = np.eye(4)[[0, 0, 1, 2]]
    z = np.array([[1.0, -3.0, 2.0, -1.0],                     # class means -1, 2, -1: code 2 (bit 1)
                  [3.0, -1.0, -0.5, 0.1]])[None, None]        # class means 1, -0.5, 0.1: code 5 (bits 0 and 2)
    assert bench.codes_of(z, Y).tolist() == [[[2, 5]]]
