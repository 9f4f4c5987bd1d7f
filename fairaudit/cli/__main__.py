"""``python -m fairaudit.cli``."""

from fairaudit.cli import run

run()
