"""``python -m helpers``: the command line (:mod:`helpers.cli`)."""

from helpers.cli import main

raise SystemExit(main())
