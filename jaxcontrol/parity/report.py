"""`check`: a task's parity with dm_control, measured and reported (`ParityReport`).

    report = check("cartpole", "swingup", n_states=20)
    print(report)

`jaxcontrol check DOMAIN TASK` prints it; the full tier's records
(`parity.measure_piece`) measure the same quantities with more states.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jaxcontrol
from jaxcontrol.parity.step import step_parity
from jaxcontrol.parity.tolerance import one_step_misses, one_step_tolerance
from jaxcontrol.parity.trajectory import episode_parity
from jaxcontrol.reference.precision import precision
from jaxcontrol.reference.samples import reference_transitions


@dataclasses.dataclass
class ParityReport:
    """Worst absolute differences from dm_control after one step.

    `ours` is the MJX env, `cpu` our model under C MuJoCo, `raw` stock
    `mjx.step` (qpos and qvel only): raw MJX's own error against C MuJoCo,
    which bounds what MJX can achieve on these states.
    """

    domain: str
    task: str
    dtype: str
    n_states: int
    ours: dict[str, float]
    cpu: dict[str, float]
    raw: dict[str, float]
    episode: dict[str, Any] | None = None

    def worst(self) -> float:
        """The worst one-step difference, MJX or CPU path."""
        return max(max(self.ours.values()), max(self.cpu.values()))

    def tolerance(self) -> float:
        """The one-step target: 1e-9 in float64 (or 10x raw MJX's own error, if
        larger); in float32, 1e-4 of each quantity's scale (`relative`).
        An observation that raw MJX misses by more has its own (`misses`)."""
        return one_step_tolerance(self.dtype, self.raw)

    def misses(self) -> dict[str, tuple[float, float]]:
        """{"ours/KEY" or "cpu/KEY": (difference, tolerance)} over the tolerance."""
        return {
            f"{who}/{key}": miss
            for who, differences in (("ours", self.ours), ("cpu", self.cpu))
            for key, miss in one_step_misses(self.dtype, differences, self.raw).items()
        }

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        lines = [
            f"{self.domain}-{self.task}: {self.n_states} dm_control states, {self.dtype}",
            (
                f"  {'quantity':<22}{'MJX vs dm_control':>20}{'CPU vs dm_control':>20}"
                f"{'raw mjx vs C':>16}"
            ),
        ]
        for key in self.ours:
            cpu = f"{self.cpu[key]:>20.3e}" if key in self.cpu else f"{'':>20}"
            raw = f"{self.raw[key]:>16.3e}" if key in self.raw else f"{'':>16}"
            lines.append(f"  {key:<22}{self.ours[key]:>20.3e}{cpu}{raw}")
        if self.episode:
            e = self.episode
            lines.append(
                f"  episode ({e['steps']} steps, amplitude {e['amplitude']}, constraints active "
                f"on {e['constraint_steps']} steps): return dm_control {e['dm_control']:.9f}, "
                f"MJX {e['ours']:.9f} (rel {e['ours_rel']:.2e}), "
                f"CPU {e['cpu']:.9f} (rel {e['cpu_rel']:.2e}); worst observation difference "
                f"MJX {e['ours_obs']:.2e}, CPU {e['cpu_obs']:.2e}; raw mjx qpos drift from C "
                f"{e['raw_drift']:.2e} (after 100 steps {e['raw_drift_100']:.2e})"
            )
        return "\n".join(lines)


def check(
    domain: str,
    task: str,
    n_states: int = 20,
    seed: int = 0,
    x64: bool = True,
    episode: bool = False,
    amplitude: float = 1.0,
) -> ParityReport:
    """Measures a task's parity with dm_control.

    Args:
      domain, task: the suite task.
      n_states: dm_control states to test one step from.
      seed: seeds dm_control's task and the random actions.
      x64: compare in float64 (`jax_enable_x64`); float32 otherwise.
      episode: also compare a whole episode under fixed actions.
      amplitude: scale of the episode's actions, in (0, 1].
    """
    with precision(x64):
        env = jaxcontrol.load(domain, task)
        transitions = reference_transitions(env, n_states, seed)
        ours, cpu, raw = step_parity(env, transitions, relative=not x64)
        episode_report = episode_parity(env, seed, amplitude=amplitude) if episode else None
    return ParityReport(
        domain, task, "float64" if x64 else "float32", n_states, ours, cpu, raw, episode_report
    )
