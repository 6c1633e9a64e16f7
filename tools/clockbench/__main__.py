"""`python -m clockbench`: the command line (clockbench.cli.main)."""

import sys

from clockbench.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
