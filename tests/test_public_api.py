"""Every class the README names is importable from the package itself (``from sparkfs import X``)."""

import re
from pathlib import Path

import sparkfs

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_class_the_readme_names_is_importable_from_sparkfs():
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[A-Z][a-z0-9]+)+"
                           r"(?:Selector|SelectorModel|Ranker|RankerModel|Weighter|Error|Warning))[`(]", text))
    assert {"UnivariateTestSelector", "FisherMarkovSelector", "MarginInstanceWeighter"} <= named
    import pyspark.ml.feature

    named = {name for name in named if not hasattr(pyspark.ml.feature, name)}  # Spark ML's own, named for comparison
    missing = sorted(name for name in named if not hasattr(sparkfs, name))
    assert not missing, f"named in the README but not importable from sparkfs: {missing}"
    assert set(sparkfs.__all__) >= named
