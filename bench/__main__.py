"""``python -m bench KIND ...``: the benchmark lab (``python -m bench --help`` lists the kinds)."""
import sys

from .cli import main

sys.exit(main())
