"""``python -m pysketch``: the command-line interface (see pysketch.cli)."""

from .cli import main

raise SystemExit(main())
