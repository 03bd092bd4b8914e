"""Checks of the conformance manifest that need no GPU (pytest tests/conformance).

The differential run itself is run.py on a GPU machine; tests/conformance_load.rs checks the
corpus against the cubin loader with nvrtc.
"""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import gen_cases  # noqa: E402

KERNELS = os.path.join(HERE, "kernels")
MAY_REFUSE = {"cdp_parent", "surface_object"}
DTYPES = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"}


def test_cases_txt_is_up_to_date():
    ok, msg = gen_cases.check()
    assert ok, msg


def test_ids_sources_and_kernels():
    ids = [c["id"] for c in corpus.CASES]
    assert len(ids) >= 64
    assert len(set(ids)) == len(ids)
    used = set()
    for c in corpus.CASES:
        assert re.fullmatch(r"[A-Za-z0-9_]+", c["id"]), c["id"]
        found = False
        for s in c["src"]:
            used.add(s)
            text = open(os.path.join(KERNELS, s)).read()
            for m in re.finditer(r'extern\s+"C"\s+__global__([^{;]*)\{', text):
                if re.search(r"(?<![A-Za-z0-9_])" + re.escape(c["kernel"]) + r"\s*\(", m.group(1)):
                    found = True
        assert found, f"{c['id']}: no extern \"C\" __global__ {c['kernel']} in {c['src']}"
    assert used == set(f for f in os.listdir(KERNELS) if f.endswith(".cu")), "unused kernel files"


def _check_fill(fill):
    kind = fill[0]
    assert kind in ("zeros", "const", "iota", "rand", "randint", "bytes"), fill
    if kind in ("const", "iota", "rand", "randint"):
        assert fill[1] in DTYPES, fill
    if kind in ("rand", "randint"):
        assert fill[3] < fill[4], fill


def test_arguments_and_flags():
    for c in corpus.CASES:
        assert c["min_sm"] in (80, 90), c["id"]
        assert c["expect_tg"] in ("ok", "may_refuse"), c["id"]
        assert all(x >= 1 for x in c["grid"] + c["block"]), c["id"]
        assert c["block"][0] * c["block"][1] * c["block"][2] <= 1024, c["id"]
        assert c["dyn"] == "max" or isinstance(c["dyn"], int), c["id"]
        for a in c["args"]:
            assert a["kind"] in ("buf", "scalar", "blob", "tex", "surf", "tensormap"), (c["id"], a)
            if "fill" in a:
                _check_fill(a["fill"])
            if a["kind"] == "scalar":
                assert a["dtype"] in DTYPES and a["dtype"] != "bf16", (c["id"], a)
        assert any(a.get("out") for a in c["args"]) or c["read_globals"], f"{c['id']}: no output"
        for name, fill, nbytes in c["needs_constant"]:
            _check_fill(fill)
            assert nbytes > 0
        for key, (dt, rtol, atol) in c["tol"].items():
            assert dt in ("f16", "f32", "f64"), c["id"]
            assert c["notes"], f"{c['id']}: a tolerance needs a note saying why"
            if isinstance(key, int):
                assert c["args"][key].get("out"), f"{c['id']}: tolerance on a non-output"
        if c["cluster"]:
            assert c["min_sm"] >= 90, c["id"]
        if len(c["src"]) > 1 or c["link"]:
            assert not c["nvrtc"], c["id"]


def test_may_refuse_is_limited_to_the_expected_features():
    assert {c["id"] for c in corpus.CASES if c["expect_tg"] == "may_refuse"} == MAY_REFUSE


def test_inputs_materialise():
    pytest.importorskip("numpy")
    import harness
    for c in corpus.CASES:
        p = harness.Prepared(c, 200000 if c["dyn"] == "max" else c["dyn"])
        for a in p.args:
            if "data" in a:
                assert len(a["data"]) == a["size"], c["id"]
        # the same inputs every time
        q = harness.Prepared(c, 200000 if c["dyn"] == "max" else c["dyn"])
        assert [a.get("data") or a.get("raw") for a in p.args] == [a.get("data") or a.get("raw") for a in q.args]


def test_run_py_help_and_list():
    out = subprocess.run([sys.executable, os.path.join(HERE, "run.py"), "--help"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--no-tg" in out.stdout and "--keep-cubins" in out.stdout
    out = subprocess.run([sys.executable, os.path.join(HERE, "run.py"), "--list"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == len(corpus.CASES)
