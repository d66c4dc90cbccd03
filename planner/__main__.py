"""``python -m planner`` runs the command line."""

from planner.cli import main

raise SystemExit(main())
