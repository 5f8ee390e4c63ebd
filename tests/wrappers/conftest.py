"""The wrappers' tests share the learners' tiny JAX env (tests/agents/toy_env.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "agents"))
