"""Fixtures of the Python package's tests (pytest tests/python; the README's scripts/test.sh).

They test the installed package (`pip install .`). Shared data: ../shared/data relative to
the repository root; tests that need it skip with a message when it is absent."""

import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"


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
