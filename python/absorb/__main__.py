"""`python -m absorb`: the absorb command line."""

import sys

from absorb.cli import main

sys.exit(main())
