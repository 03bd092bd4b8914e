"""Checks of foreign.py's module finder that need no GPU (pytest tests/conformance): it must
split `.nv_fatbin` sections and host objects into the same fatbinaries as the library's own
reader (tests/fatbin.rs) and decide as the CUDA driver does which of them hold a cubin for a
given SM.
"""
import os
import struct
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import foreign  # noqa: E402

FIX = os.path.join(HERE, "..", "fixtures", "fatbin")


def mods(name):
    found, note = foreign.modules_in_file(os.path.join(FIX, name))
    assert note is None
    return found


def test_a_section_splits_into_its_three_fatbinaries():
    m = mods("libwarp2.nv_fatbin")
    assert [c.where for c in m] == [f"libwarp2.nv_fatbin#{i}" for i in range(3)]
    # sm_80 SASS everywhere, compute_90 PTX in the two nvcc-compiled units.
    assert [[(k, a) for k, a, _ in c.entries] for c in m] == [[(2, 80)], [(2, 80), (1, 90)], [(2, 80), (1, 90)]]
    assert [c.runnable_cubin((8, 7)) for c in m] == [True, True, True]   # sm_80 SASS runs on 8.7
    assert [c.runnable_cubin((9, 0)) for c in m] == [False, False, False]  # but not on 9.0
    assert [c.ptx((9, 0)) for c in m] == [False, True, True]


def test_a_host_object_yields_its_fatbinary():
    (c,) = mods("warp.sm_90.o")
    assert [(k, a) for k, a, _ in c.entries] == [(2, 90)]
    assert c.runnable_cubin((9, 0)) and not c.runnable_cubin((8, 0)) and not c.runnable_cubin((10, 0))


def test_arch_specific_cubins_run_only_on_their_sm():
    (c,) = mods("arch.none.fatbin")
    a_only = [e for e in c.entries if e[2] & foreign.FLAG_ARCH_SPECIFIC and e[0] == foreign.ENTRY_ELF]
    assert {a for _, a, _ in a_only} == {90, 100}
    c.entries = [e for e in c.entries if e in a_only or e[0] == foreign.ENTRY_PTX]
    assert c.runnable_cubin((9, 0)) and c.runnable_cubin((10, 0))
    assert not c.runnable_cubin((9, 1)) and not c.runnable_cubin((10, 3))


def test_a_cubin_is_one_module_and_other_files_none(tmp_path):
    (m,) = mods("warp.sm_90.cuobjdump.cubin")
    assert m[0] == "cubin"
    p = tmp_path / "x.txt"
    p.write_bytes(b"hello")
    assert foreign.modules_in_file(str(p)) == ([], "not an ELF file or fatbinary")


def test_malformed_fatbinaries_are_refused():
    data = open(os.path.join(FIX, "warp.fatbin"), "rb").read()
    with pytest.raises(ValueError, match="claims"):
        foreign.entries_of(data[:-8])
    bad = bytearray(data)
    struct.pack_into("<I", bad, 16 + 4, 8)  # an entry header shorter than 64 bytes
    with pytest.raises(ValueError, match="entry at 16"):
        foreign.entries_of(bytes(bad))
    with pytest.raises(ValueError, match="magic"):
        foreign.entries_of(b"\0" * 32)
