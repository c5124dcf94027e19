"""Exceptions shared by every layer (io, cli, selectors and the Spark layer import them from here)."""


class InvalidInputError(ValueError):
    """The input data cannot be used; the message names the problem and the rows concerned."""


class SparkResourceError(RuntimeError):
    """Spark ran out of memory or its JVM stopped; the message names the setting to change."""


class DriverBudgetError(ValueError):
    """A configuration whose driver-side arrays would exceed the configured budget, refused before
    any work; the message names the Param (or flag) to change."""


class SelectionTieWarning(UserWarning):
    """A selection decided by equal scores (a flat ranking, or ties at the cut), not by the scores."""
