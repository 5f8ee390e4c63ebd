"""Learners for jaxcontrol: PPO, SAC and D4PG, each one jitted program.

Every learner follows the same shape: ``make_learner(config, env)`` gives the
pieces (``init``, ``run_chunk``, ``policy``) and ``make_train(config, env)``
composes them into ``train(key)``, a single jittable, key-vmappable function.
"""

AGENTS = ("ppo", "sac", "d4pg")
