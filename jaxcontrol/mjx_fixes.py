"""The former name of `jaxcontrol.mjx_line_search`, kept for the code that imports it.

`import jaxcontrol.mjx_fixes` gives the `jaxcontrol.mjx_line_search` module itself
(`applied`, `stock`, `touching`, `STOCK_ENV`, ...), so state and monkeypatches are
shared. New code imports `jaxcontrol.mjx_line_search`; the import-time decision is
in `jaxcontrol.import_setup`.
"""

import sys

from jaxcontrol import mjx_line_search

sys.modules[__name__] = mjx_line_search
