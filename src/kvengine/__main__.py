import sys

from kvengine.cli import main

sys.exit(main())
