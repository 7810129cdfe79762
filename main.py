#!/usr/bin/env python3
"""Kernel Tuning Workbench entry point.

No arguments opens the desktop application; subcommands (``tune``, ``show``, ``export``, ``kernels``,
``import-kt``, ``check-kernels``, ``gui``) run headless. See ``python main.py --help``.
"""

import sys

from workbench.launch import main

if __name__ == "__main__":
    sys.exit(main())
