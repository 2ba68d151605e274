"""Fixtures of the Python package's tests (pytest tests/python; the README's scripts/test.sh).

They test the installed package (`pip install .`). Shared data: ../shared/data relative to
the repository root; tests that need it skip with a message when it is absent."""

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def tensorflow_stays_out_of_the_suite():
    """TensorFlow and PyTorch loaded into one process crash (SIGSEGV in torch's first import or call
    after tensorflow's), so TensorFlow code runs in child processes (run_with_tensorflow). A test
    that loads it here fails by name instead of crashing a later test."""
    before = "tensorflow" in sys.modules
    yield
    if not before and "tensorflow" in sys.modules:
        pytest.fail("this test imported tensorflow into the pytest process; run TensorFlow code with "
                    "run_with_tensorflow (a child process) or check with skip_unless_installed")


@pytest.fixture(scope="session")
def shared_data():
    if not SHARED.is_dir():
        pytest.skip(f"shared data folder {SHARED} is absent")
    return SHARED


@pytest.fixture(scope="session")
def cli():
    """The CLI the package runs (installed into the package)."""
    import ctrain

    path = ctrain.cli_path()
    assert os.access(path, os.X_OK), f"no ctrain CLI at {path}"
    return path


@pytest.fixture(scope="session")
def ctrain_cli(request):
    """The CLI under test: $CTRAIN_CLI (a build tree's ctrain) when set, else the package's."""
    path = os.environ.get("CTRAIN_CLI")
    if not path:
        path = request.getfixturevalue("cli")
    assert os.access(path, os.X_OK), f"no ctrain CLI at {path}"
    return path


@pytest.fixture(scope="session")
def va10k_split(shared_data, tmp_path_factory):
    """criteo_deepfm_va10k: the first 8000 lines train, the last 2040 valid (tmp copies,
    never in the repository: the data is CC BY-NC-SA). Read with VA10K options."""
    lines = (shared_data / "criteo_deepfm_va10k.libsvm").read_bytes().splitlines(keepends=True)
    assert len(lines) == 10040
    d = tmp_path_factory.mktemp("va10k")
    tr, va = d / "tr.libsvm", d / "va.libsvm"
    tr.write_bytes(b"".join(lines[:8000]))
    va.write_bytes(b"".join(lines[8000:]))
    return tr, va


# criteo_deepfm_va10k.libsvm: 39 fields, ids 1-based in 1..921 (tests/train/acceptance_test.cc).
VA10K = dict(format="libsvm", field_size=39, id_base=1, feature_size=921)


def write_stripped_criteo(directory, n):
    """Writes `n` Criteo TSV rows twice: full.tsv (40 cells) and stripped.tsv, where row r lacks its last
    r % 4 cells (empty ones, as some public copies of Kaggle's train.txt drop them). Returns both paths."""
    full, stripped = [], []
    for r in range(n):
        cells = [str(r % 2)] + [str(r + i) for i in range(13)] + ["c%d" % ((r + j) % 3) for j in range(23)] + [""] * 3
        full.append("\t".join(cells))
        stripped.append("\t".join(cells[:40 - r % 4]))
    (directory / "full.tsv").write_text("\n".join(full) + "\n")
    (directory / "stripped.tsv").write_text("\n".join(stripped) + "\n")
    return directory / "full.tsv", directory / "stripped.tsv"


def skip_unless_installed(module: str, reason: str):
    """Skips the test when `module` is not installed, without importing it: pytest.importorskip
    would load TensorFlow into the suite's process, and a later torch import there crashes."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(reason)


def skip_without_tensorflow():
    skip_unless_installed("tensorflow", "TensorFlow is not installed (scripts/install-deps.sh installs tensorflow-cpu)")


def run_with_tensorflow(code: str, **values):
    """Runs `code` (asserts) in a fresh Python process that imports TensorFlow; skips when it is not
    installed. TensorFlow and PyTorch loaded into one process crash (a segfault in torch's first
    call after tensorflow's import), and the suite's other tests use torch. `values` (JSON) are the
    child's global `values`; the child fails the test with its stderr."""
    skip_without_tensorflow()
    prelude = "import json, sys\nimport numpy as np\nimport tensorflow as tf\nimport ctrain\nvalues = json.loads(sys.argv[1])\n"
    p = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code), json.dumps(values)],
                       capture_output=True, text=True, timeout=600, cwd=str(REPO / "tests" / "python"))
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout
