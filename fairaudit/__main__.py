"""``python -m fairaudit``: the same command line as ``fairaudit`` (for environments whose
scripts folder is not on PATH, and for ``python -m`` in schedulers)."""

from __future__ import annotations

from fairaudit.cli import main

if __name__ == "__main__":
    main(prog_name="fairaudit")
