"""DLPack on the CPU: the view the GPU path reads a DLPack-only array
through (``DlpackView``) describes a NumPy array's capsule as that array's
own interface says (address, shape, type, strides in bytes), takes the
capsule as DLPack's consumers do, and runs the producer's deleter when
dropped; the CPU path takes host arrays that have DLPack only."""

import gc
import sys

import numpy as np
import pytest

import gpu_scan
from gpu_scan._native import DlpackView


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32, np.int64, np.float32, np.float64, np.bool_])
def test_a_view_reads_a_capsule_as_the_array_interface_says(dtype):
    a = np.zeros((3, 5), dtype=dtype)
    view = DlpackView(a.__dlpack__())
    cai = view.__cuda_array_interface__
    assert view.device == (1, 0) and view.on_host
    assert cai["data"][0] == a.__array_interface__["data"][0]
    assert cai["shape"] == (3, 5)
    assert np.dtype(cai["typestr"]) == a.dtype
    # Strides in bytes, or None for C order (NumPy may give either).
    assert cai["strides"] in (None, (5 * a.itemsize, a.itemsize))
    t = a[:, 1:4].T  # a strided view: 3 x 3, transposed, offset by one
    cai = DlpackView(t.__dlpack__()).__cuda_array_interface__
    assert cai["shape"] == (3, 3)
    assert cai["data"][0] == t.__array_interface__["data"][0]
    assert cai["strides"] == t.strides


def test_the_capsule_is_taken_once_and_the_deleter_runs():
    a = np.arange(10, dtype=np.int32)
    before = sys.getrefcount(a)
    capsule = a.__dlpack__()
    view = DlpackView(capsule)
    with pytest.raises(ValueError, match="dltensor"):
        DlpackView(capsule)  # used: renamed "used_dltensor"
    del capsule
    gc.collect()
    assert sys.getrefcount(a) > before  # the producer's reference, held by the view
    del view
    gc.collect()
    assert sys.getrefcount(a) == before  # the deleter let it go
    with pytest.raises(ValueError):
        DlpackView(a)  # not a capsule


class HostDlpackOnly:
    """A host array that offers DLPack alone (no buffer protocol, no array
    interface), as some frameworks' arrays do."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_host_arrays_with_dlpack_only_are_scanned_on_the_cpu():
    a = np.arange(1, 11, dtype=np.int64)
    np.testing.assert_array_equal(gpu_scan.cumsum(HostDlpackOnly(a)), np.cumsum(a))
