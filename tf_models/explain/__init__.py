"""What a model version learned: attributions, motif patterns, TOMTOM matches and logos (``tfbs explain``).

One module per operation: :mod:`.attribution` (in-silico mutagenesis of the
exported model), :mod:`.seqlets` (high-attribution windows aligned into
position probability matrices), :mod:`.tomtom` (matching them against a
MEME motif database, with q-values), :mod:`.logos` (logomaker drawings) and
:mod:`.report` (the stage: top predictions in, ``motifs.json`` out).
"""
