"""``python -m workbench.cli``: the command line, as ``main.py`` and the installed ``kernel-workbench`` start it."""

import sys

from workbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
