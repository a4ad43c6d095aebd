"""``python -m tsrnn``: the same command as ``tsrnn`` (see :mod:`tsrnn.cli`)."""

from tsrnn.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
