import sys

from rypsok.entry import main

sys.exit(main())
