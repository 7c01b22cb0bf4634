"""Chromosome-based train/validation/test splits."""

from __future__ import annotations

TRAIN, VALID, TEST = "train", "valid", "test"


def split_of(chrom: str, test_chroms: list[str], valid_chroms: list[str]) -> str:
    """Return the split a chromosome belongs to.

    Examples
    --------
    >>> split_of("chr8", ["chr1", "chr8", "chr21"], ["chr11"])
    'test'
    """
    if chrom in test_chroms:
        return TEST
    if chrom in valid_chroms:
        return VALID
    return TRAIN
