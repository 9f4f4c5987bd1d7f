"""``python -m fairaudit``: the same command line as ``fairaudit`` (for environments whose
scripts folder is not on PATH, and for ``python -m`` in schedulers)."""

from __future__ import annotations

from fairaudit.cli import run

if __name__ == "__main__":
    run()
