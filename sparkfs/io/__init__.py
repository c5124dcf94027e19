"""Readers (libsvm, parquet, csv), job configuration and atomic output writing."""
