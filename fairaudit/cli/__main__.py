"""``python -m fairaudit.cli``."""

from fairaudit.cli import main

main()
