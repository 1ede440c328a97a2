"""``python -m campaign.repro``: the reproduction's command line (``build.py``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
