"""`python -m auditor` runs the command line."""

from auditor.cli import main

raise SystemExit(main())
