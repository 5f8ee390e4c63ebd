"""``python -m jaxcontrol COMMAND ...``: the command line (`jaxcontrol.cli`)."""

import sys

from jaxcontrol.cli import main

if __name__ == "__main__":
    sys.exit(main())
