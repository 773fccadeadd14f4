import sys

from rypsok.cli import main

sys.exit(main())
