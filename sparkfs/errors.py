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


class SolverConvergenceWarning(UserWarning):
    """Model fits of a run that stopped at their iteration limit before converging: one warning per
    run (the counts are in the summary), never one per fit."""


class DefaultSampleWarning(UserWarning):
    """A default bounded the work on a large input (for example the Relief family drew a sample of
    query rows because ``sampleSize`` was unset): the message says what it did and the Param to set;
    the summary records it."""


class LargeWorkWarning(UserWarning):
    """A run within its bounds whose memory is large enough to say so beforehand (for example
    ReliefF's neighbour table with thousands of classes): the message names the size and the Params
    that lower it."""


class LabelWarning(UserWarning):
    """A label column the fit takes but which looks wrong: classes of a single row among several
    (a typo such as '1_0' for '1' makes one); the message names them."""


class PrecisionWarning(UserWarning):
    """Features whose values are too small for float64's squares, scored by a statistic that keeps
    their unit (so cannot be computed on them rescaled): their scores say nothing of the classes; the
    message names them and the setting that computes them scale-free."""


class ParamBoundError(ValueError):
    """A Param whose work or memory the input would make too large (rows, classes, features or the
    driver budget set the bound), refused after the first cheap pass and before any heavy one; the
    message names the class, the Param, the value, the bound and where the bound comes from."""


class InvalidModelError(ValueError):
    """A saved selector or model whose files do not hold what sparkfs writes (damaged or edited):
    the message names the path, the file and the problem. Nothing of it is used."""


class SparkMasterError(ValueError):
    """A master (or Spark Connect URL) Spark refuses; the message names it and the forms accepted."""


class SparkStartError(RuntimeError):
    """No Spark session could be started for a reason outside the input: a Spark Connect server that
    cannot be reached. The message names the URL and what to check."""
