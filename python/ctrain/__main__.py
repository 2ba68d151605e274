"""``python -m ctrain ARGS`` runs the ctrain CLI (the binary installed into this package).

The CLI is a separate binary rather than its main linked into the extension module: it
installs its own signal handlers (an interrupted run removes its temporary files and exits
with the signal's status) and re-executes itself with the OpenMP wait policy it chose, neither of
which belongs inside a Python interpreter. exec replaces this process, so exit status,
signals and stdin/stdout behave exactly as with build/ctrain."""

import os
import sys


def main() -> None:
    from . import cli_path

    path = cli_path()
    if not os.access(path, os.X_OK):
        sys.stderr.write(f"ctrain: the CLI binary is missing at {path} (reinstall the package: pip install .)\n")
        sys.exit(1)
    sys.stdout.flush()
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    main()
