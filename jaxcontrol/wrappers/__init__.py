"""Wrappers over the pure `Env`: auto-reset for batched training loops."""

from jaxcontrol.wrappers.auto_reset import AutoReset

__all__ = ["AutoReset"]
