"""Preprocessing library: DREAM formats, labels, bedtools steps, balancing,
sequence windows, and the Parquet shards with their manifest."""
