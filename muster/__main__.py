import sys

from muster_exact.cli import main

sys.exit(main())
