"""DNA-binding domains named in a protein FASTA's headers (``>NAME ... dbd=START-END``).

The generator writes each TF's DNA-binding domain span into its header
(:mod:`synthetic.proteins`); real FASTAs would take it from a domain
annotation. Spans are 0-based and half-open.
"""

from __future__ import annotations

import re

from tfbs import storage
from tfbs.errors import BadInputError

_SPAN = re.compile(r"\bdbd=(\d+)-(\d+)\b")


def domain_spans(fasta_uri: str) -> dict[str, tuple[int, int]]:
    """``{name: (start, stop)}`` of every header that names a ``dbd=`` span."""
    spans = {}
    with storage.open_text(fasta_uri) as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.startswith(">"):
                continue
            words = line[1:].split()
            match = _SPAN.search(line)
            if words and match:
                start, stop = int(match.group(1)), int(match.group(2))
                if not 0 <= start < stop:
                    raise BadInputError(fasta_uri, line_number, f"empty DNA-binding domain span dbd={start}-{stop}")
                spans[words[0]] = (start, stop)
    return spans


def domains_only(proteins: dict[str, str], fasta_uri: str) -> dict[str, str]:
    """Each protein cut to its DNA-binding domain.

    Raises
    ------
    BadInputError
        If a protein's header names no ``dbd=`` span, or one past its end.
    """
    spans = domain_spans(fasta_uri)
    out = {}
    for name, sequence in proteins.items():
        if name not in spans:
            raise BadInputError(fasta_uri, 1, f"no dbd=START-END span in the header of {name} (unseen.protein_inputs)")
        start, stop = spans[name]
        if stop > len(sequence):
            raise BadInputError(fasta_uri, 1, f"dbd={start}-{stop} of {name} runs past its {len(sequence)} residues")
        out[name] = sequence[start:stop]
    return out
