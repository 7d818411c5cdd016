import math

import numpy as np
import pytest
import torch

from helpers.common.validation import check_float_dtype, check_fraction, check_int, check_number, check_positive


@pytest.mark.parametrize("bad", [True, 1.0, "3", None, -1, 11])
def test_check_int_names_what_is_allowed(bad):
    with pytest.raises(ValueError, match=r"steps must be an int in \[0, 10\], got"):
        check_int(bad, "steps", 0, 10)


def test_check_int_returns_python_ints():
    assert check_int(np.int64(3), "n", 1) == 3 and type(check_int(np.int64(3), "n", 1)) is int


@pytest.mark.parametrize("bad", [True, math.nan, math.inf, "1", -0.5])
def test_check_number_rejects_bools_nan_and_out_of_range(bad):
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        check_number(bad, "temperature", 0)


def test_check_positive_excludes_zero():
    with pytest.raises(ValueError, match="> 0"):
        check_positive(0, "bandwidth")
    assert check_positive(np.float32(2.5), "bandwidth") == 2.5


@pytest.mark.parametrize("bad", [0, 1.5, math.nan, True])
def test_check_fraction(bad):
    with pytest.raises(ValueError, match=r"top_p must be a number in \(0, 1\]"):
        check_fraction(bad, "top_p")
    assert check_fraction(1, "top_p") == 1.0


def test_check_float_dtype():
    with pytest.raises(ValueError, match="floating torch.dtype"):
        check_float_dtype(torch.int8)
