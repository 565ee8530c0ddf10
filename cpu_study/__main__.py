"""``python -m cpu_study``: the CPU study's command line (:mod:`cpu_study.cli`)."""

from cpu_study.cli import main

raise SystemExit(main())
