"""pyspark.ml Estimators/Models, one per selector family, sharing :mod:`sparkfs.selectors._base`."""
