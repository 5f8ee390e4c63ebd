"""Learning results: sweeps' run directories into committed records, and docs/results.md.

A sweep (``jaxcontrol sweep``) trains every (task, seed) as an ordinary run directory of
``jaxcontrol train``. `collect` copies each finished run's small records into a committed
tree (``results/AGENT/DOMAIN-TASK/seed-S/``), `records` reads that tree back, `published`
holds the published figures we measure against, `stats` the statistics over seeds and
tasks (aggregates through rliable), `aggregates` our IQM over sets of tasks beside the
published ones, `targets` the project's learning targets, and `page` writes docs/results.md
with the figures of `figures`. See
docs/design/learning-results.md.
"""
