"""``python -m ltr`` runs the ``ltr`` command line (see :mod:`ltr.cli`)."""

from ltr.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
