"""The files the pipeline reads and writes, each line checked: a module per format.

ENCODE-DREAM's label and submission files (:mod:`~tfbs.formats.dream`,
:mod:`~tfbs.formats.submission`) and their official scoring
(:mod:`~tfbs.formats.metrics`); BED intervals (:mod:`~tfbs.formats.bed`) and
the bedtools binary over them (:mod:`~tfbs.formats.bedtools`,
:mod:`~tfbs.formats.annotate`, :mod:`~tfbs.formats.labels`); the genome
(:mod:`~tfbs.formats.genome`), motifs (:mod:`~tfbs.formats.motifs`), proteins
(:mod:`~tfbs.formats.proteins`) and RNA-seq (:mod:`~tfbs.formats.expression`);
the shards' fixed-length records (:mod:`~tfbs.formats.records`), which
unbound bins a negative draw keeps (:mod:`~tfbs.formats.draws`) and the
run's manifest (:mod:`~tfbs.formats.manifest`). They read and write through
:mod:`tfbs.storage` and import nothing above it.
"""
