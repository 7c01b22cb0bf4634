"""Unseen TFs, measured: leave-one-TF-out training and its controls (``tfbs unseen``).

One operation per module:

:mod:`~tf_models.unseen.proteins`
    the protein controls: residues shuffled, the nearest other protein;
:mod:`~tf_models.unseen.shards`
    the shards without one TF (filtered record files, a derived manifest);
:mod:`~tf_models.unseen.score`
    one model scored on a TF's test rows under several proteins;
:mod:`~tf_models.unseen.table`
    the unseen-TF table (JSON and bar chart) beside the report;
:mod:`~tf_models.unseen.run`
    the whole measurement.
"""
