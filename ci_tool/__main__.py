import sys

from ci_tool.cli import main

sys.exit(main())
