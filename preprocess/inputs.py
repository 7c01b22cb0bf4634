"""Driver-side checks of a stage's inputs, before any Spark work starts."""

from __future__ import annotations

from tfbs import storage
from tfbs.config import DataConfig
from tfbs.errors import BadInputError
from tfbs.formats.bed import read_bed
from tfbs.formats.dream import parse_label_header, read_dnase_peaks
from tfbs.formats.genome import check_fasta_index
from tfbs.formats.proteins import read_protein_fasta
from tfbs.storage import require


def read_label_cells(labels_uri: str) -> list[str]:
    """Read and check the header of a DREAM label file.

    Raises
    ------
    BadInputError
        If the file is empty, not valid gzip, its header is wrong, or no
        row follows it.
    """
    try:
        with storage.open_text(labels_uri) as handle:
            header, first_row = handle.readline(), handle.readline()
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise BadInputError(labels_uri, 1, f"cannot be read ({err})") from None
    if not header:
        raise BadInputError(labels_uri, 1, "file is empty")
    cells = parse_label_header(header, labels_uri)
    if not first_row:
        raise BadInputError(labels_uri, 1, "header but no data rows")
    return cells


def _configured_cells(
    labels_uri: str, header_cells: list[str], configured: list[str], key: str = "data.cells"
) -> list[str]:
    """The cells of ``data.cells`` among a label file's, in the file's order.

    A configured cell missing from the header is refused, not dropped: the
    run would otherwise train and report without it and nothing would say so.

    Raises
    ------
    BadInputError
        Naming the header (line 1) and the missing cells.
    """
    missing = [cell for cell in configured if cell not in header_cells]
    if missing:
        raise BadInputError(
            labels_uri,
            1,
            f"{key} {missing} not in the header (its cells: {', '.join(header_cells)})",
        )
    return [cell for cell in header_cells if cell in configured]


def check_preprocess_inputs(data: DataConfig) -> dict[str, list[str]]:
    """Check every input of ``tfbs preprocess``; return each TF's cells.

    Cells are the label file's, restricted to ``data.cells`` and
    ``data.heldout_cells`` when ``data.cells`` is given; every cell of both
    must then be in each label file (a held-out cell's column gives the test
    split's labels; no other row of it is read).
    The label files' headers are checked here and their rows by the job;
    every other input is checked whole: the genome's index against the
    FASTA, the proteins, and each DNase peak file and the blacklist line by
    line against the genome's chromosomes (blacklist lines on other
    chromosomes are ignored).

    Raises
    ------
    MissingInputError
        A label, DNase, genome, index, protein or blacklist file is missing.
    BadInputError
        A malformed or stale input, naming file, line and reason, or a
        configured cell or TF that is absent.
    """
    require(data.genome_fasta, "genome FASTA")
    require(f"{data.genome_fasta}.fai", "genome FASTA index (.fai; run `samtools faidx` or pyfaidx)")
    sizes = {name: entry.length for name, entry in check_fasta_index(data.genome_fasta).items()}
    if data.blacklist is not None:
        read_bed(require(data.blacklist, "blacklist BED"), sizes, unknown_chroms="skip", past_end="allow")
    proteins = read_protein_fasta(require(data.proteins_fasta, "TF protein FASTA"))
    cells_by_tf: dict[str, list[str]] = {}
    for tf in data.tfs:
        labels_uri = require(data.labels_uri(tf), f"label file of {tf}")
        cells = read_label_cells(labels_uri)
        if data.cells is not None:
            cells = _configured_cells(labels_uri, cells, [*data.cells, *data.heldout_cells])
        _configured_cells(labels_uri, cells, data.heldout_cells, "data.heldout_cells")
        if not set(cells) - set(data.heldout_cells):
            raise BadInputError(labels_uri, 1, f"every cell of {tf} is held out (data.heldout_cells): none to train on")
        if tf not in proteins:
            raise BadInputError(data.proteins_fasta, 0, f"no protein sequence named {tf}")
        for cell in cells if data.has_dnase else []:
            require(data.dnase_peaks_uri(cell), f"DNase peaks of {cell}")
        cells_by_tf[tf] = cells
    for cell in sorted({cell for cells in cells_by_tf.values() for cell in cells}) if data.has_dnase else []:
        read_dnase_peaks(data.dnase_peaks_uri(cell), sizes)  # summits included: each must lie in its peak
    return cells_by_tf
