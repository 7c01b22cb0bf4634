"""Preprocessing: ENCODE-DREAM label files to class-balanced shards.

The label reader, the bins' annotation with bedtools, each bin's class and
draw, sequence windows, and the Parquet and record shards with their
manifest (``build_shards.py`` is the Spark job).
"""
