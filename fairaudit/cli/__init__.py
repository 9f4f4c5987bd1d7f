"""The ``fairaudit`` command line (``fairaudit.cli:main``; the installed script and ``python -m
fairaudit`` run it through :func:`~fairaudit.cli.base.run`). The only package that prints or exits.

Exit codes: 0 ran and every error-severity threshold passed; 1 ran and a threshold failed;
2 usage, configuration or input error; 3 internal error; 130 interrupted (Ctrl-C); 143
terminated (SIGTERM). ``--debug`` adds a traceback and fairaudit's debug log, never another code;
``--verbose`` (``-v``) fairaudit's info log (what each step did), on stderr.

:mod:`fairaudit.cli.base` holds the ``main`` group and what every command shares; the commands
register on it when their modules are imported here.
"""

from fairaudit.cli import (  # noqa: F401  (register the commands)
    ledger_commands,
    other_commands,
    repair_commands,
    run_commands,
)
from fairaudit.cli.base import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, main, run
from fairaudit.cli.run_commands import demo_data_path

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "demo_data_path", "main",
           "run"]
