"""Issue 47: `pip install .` installed nothing the program needs (pyproject declared no dependencies). The runtime
dependencies are declared with requirements.txt's pins, and a wheel installed into a fresh virtual environment, from
the same packages requirements.txt installed and nothing else, runs."""
import os
import re
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import REPO, write


TEST_ONLY = ("pytest==", "selenium==", "ruff==")  # requirements.txt's pins the product does not need


def _runtime_pins() -> list[str]:
    lines = (REPO / "requirements.txt").read_text().splitlines()
    return [x.strip() for x in lines if x.strip() and not x.startswith(("#", "-")) and not x.startswith(TEST_ONLY)]


def test_pyproject_declares_every_runtime_pin_of_requirements():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert declared == _runtime_pins()
    assert "torch==2.13.0" in declared  # never an unpinned torch (it pulls CUDA)


@pytest.mark.slow
def test_a_wheel_in_a_fresh_venv_installs_from_what_is_there_and_searches(tmp_path):
    """The wheel's declared dependencies resolve with no index at all (from the packages requirements.txt installed,
    seen through a .pth naming this interpreter's site dirs), and the installed command runs a search."""
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv must import the wheel's own copy
    run = lambda *a, **kw: subprocess.run(a, capture_output=True, text=True, timeout=600, env=clean, **kw)  # noqa: E731
    r = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO))
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = wheels.glob("thread_rag-*.whl")
    # no pip or setuptools of its own (an older copy would hide the one requirements.txt brought): this pip installs.
    # It sees the packages of the interpreter running the tests, a venv's included: --system-site-packages would show
    # the base interpreter's instead, which inside a venv lacks what requirements.txt installed there.
    assert run(sys.executable, "-m", "venv", "--without-pip", str(venv)).returncode == 0
    py = venv / "bin" / "python"
    purelib = run(str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip()
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    Path(purelib, "tests-parent-env.pth").write_text("import site; " + "; ".join(f"site.addsitedir({p!r})" for p in ours) + "\n")
    r = run(sys.executable, "-m", "pip", "--python", str(py), "install", "--no-index", str(wheel))  # nothing fetched
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r = run(str(py), "-c", "import thread_rag, importlib.metadata as m; print(thread_rag.__file__); "
                           "print(len(m.requires('thread-rag')))", cwd=tmp_path)
    where, n = r.stdout.split()
    assert where.startswith(str(venv)) and int(n) == len(_runtime_pins()), r.stdout  # the wheel's copy, its metadata
    exe = str(venv / "bin" / "thread-rag")
    assert run(exe, "--help", cwd=tmp_path).returncode == 0
    import zipfile

    inside = zipfile.ZipFile(wheel).namelist()  # the product only: the lab (bench/) stays in the clone
    assert all(n.startswith(("thread_rag/", "thread_rag-")) for n in inside), sorted(inside)[:20]
    assert not [n for n in inside if n.startswith("thread_rag/bench/")]  # nor an old build's copy of it
    r = run(exe, "bench", "retrieval", "--dataset", "musique", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.startswith("error: the benchmark lab is not installed"), r.stderr[-2000:]
    doc = write(tmp_path / "pump.md", "# Pump\n\nOpen the inlet valve before you start the pump.\n")
    home = str(tmp_path / "home")
    r = run(exe, "--data-dir", home, "index", str(doc), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    r = run(exe, "--data-dir", home, "search", "which valve do I open", "--k", "1", cwd=tmp_path)
    assert r.returncode == 0 and re.search(r"DOC1_000", r.stdout), r.stdout + r.stderr[-2000:]


def test_no_product_module_imports_the_lab():
    """The product (ingest, store, retrieve, agent, doors, eval on the user's own library) uses nothing of the
    benchmark lab (``bench/`` beside it); the lab uses the product. ``thread-rag bench`` finds the lab beside the
    package by its path (a clone), never by an import statement."""
    import ast

    pkg = REPO / "thread_rag"
    assert not list((pkg / "bench").rglob("*.py"))  # (a clone from before the move may keep its __pycache__)
    found = []
    for path in sorted(pkg.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []  # relative: inside thread_rag
            else:
                continue
            found += [f"{path.relative_to(pkg)}:{node.lineno} {n}" for n in names if n.split(".")[0] == "bench"]
    assert found == []
