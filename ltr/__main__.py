"""``python -m ltr`` runs the ``ltr`` command line (see :mod:`ltr.cli`)."""

from ltr.cli import console_main

if __name__ == "__main__":
    raise SystemExit(console_main())
