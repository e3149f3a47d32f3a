"""``python -m gnnbench`` is the ``gnnbench`` command."""
import sys

from gnnbench.cli import main

sys.exit(main())
