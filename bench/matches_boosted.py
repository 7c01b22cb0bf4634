"""Benchmark: the boosted baseline's trees reading the network's learned motif matches.

Every network candidate of issue 42 came level with the boosted baseline or
lost, including those handed the baseline's own features: the network had
the features and did not read them per TF as the baseline's trees do
(docs/model-quality.md, "Toward a network that beats it"). This asks the
converse: are the network's learned filters worth reading at all? It fits
the baseline's classifier (one per TF, the frozen settings of
:data:`tf_models.boosted.BOOSTED_SETTINGS`) on the baseline's own training
rows (the train split's default sampling, in the training cells) with:

* ``trees_refit``: the baseline's own features, refitted on these rows in
  chromosome order (the report's fit gathers them in Spark's order, and the
  classifier's early-stopping split follows the order: its scores differ bin
  by bin, not in auPRC); the arms below are paired with it;
* ``trees_bagged``: the same, fitted once per run with the early-stopping
  split drawn anew (``random_state`` 0, 1, 2...): averaged, the baseline's
  own ensemble of as many fits as the arms below average, which tells an
  arm's gain from the ensemble's;
* ``trees_matches``: each learned filter's best match at the model's widths
  (``motif_cnn.scales_bp``, before the protein gate, so DNA only) with the
  DNase input and the cells' expression, in place of the motif maxima;
* ``trees_both``: the baseline's features and the learned matches;
* ``trees_matches_dnase`` and ``mlp_matches_dnase``: the learned matches and
  DNase alone, read per TF by the trees or by one hidden layer of 64 units
  (scikit-learn's MLP fitted to convergence): does the reader's kind matter?

It scores them on the report's test rows beside the network and the
boosted baseline, averaged bin by bin over the runs given (one per training
seed) as the challenge averages, with intervals over test sites and each
arm minus the boosted baseline and minus the network, paired.

    .venv/bin/python bench/matches_boosted.py --config conf/demo.yaml --set ... \\
        --runs build/bench/paralogue/7x10/run-default-17 ... --name seed7x10
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import RESULTS, ROOT, write_results  # noqa: E402

log = logging.getLogger("bench.matches_boosted")

#: Each arm: its features (``baseline``, ``matches`` or ``both``) and their reader (``trees`` or an MLP).
ARMS = {
    "trees_refit": ("baseline", "trees"),
    # The baseline fitted once per run with its early-stopping split drawn anew (random_state 0, 1, 2...):
    # averaged over the runs, the baseline's own ensemble, the fair match for the arms' averages.
    "trees_bagged": ("baseline", "trees"),
    "trees_matches": ("matches", "trees"),
    "trees_both": ("both", "trees"),
    # Like against like: trees and a network's hidden layer, per TF, on the learned matches and DNase alone
    # (the cells' expression left out: a debug run's MLP extrapolated the held-out cell's, 0.22 against 0.46).
    "trees_matches_dnase": ("matches_dnase", "trees"),
    "mlp_matches_dnase": ("matches_dnase", "mlp"),
}
#: The MLPs' settings: the network's hidden layer (64 units), fitted to convergence on one process.
MLP_SETTINGS: dict = {
    "hidden_layer_sizes": (64,),
    "alpha": 1e-4,
    "early_stopping": True,
    "validation_fraction": 0.1,
    "n_iter_no_change": 10,
    "max_iter": 200,
    "random_state": 0,
}
#: Windows whose matches are computed at a time.
BATCH = 4096


def filter_weights(export_dir: str) -> tuple[np.ndarray, np.ndarray]:
    """The trained motif filters' ``(kernel, bias)`` of a version's export (the Conv1D named ``motifs``)."""
    import tensorflow as tf

    # The SavedModel keeps the Keras layers as tracked objects with their variables, not as layers.
    motifs = tf.saved_model.load(export_dir).model.motifs
    return motifs._kernel.numpy(), motifs.bias.numpy()


def learned_matches(windows: np.ndarray, weights: tuple[np.ndarray, np.ndarray], window: int, scales_bp: list[int]):
    """Each filter's best match, either strand, in each width of ``scales_bp``: ``(n, scales * filters)``.

    The network's own reading before its protein gate and dropout
    (:class:`tf_models.motif_cnn.MotifCNN`), with a linear match.
    """
    import tensorflow as tf

    from tf_models.encoding import dna_one_hot, reverse_complement
    from tf_models.motif_cnn import scale_slices

    kernel, bias = weights
    first, length, slices = scale_slices(window, scales_bp, kernel.shape[0])
    out = []
    for lo in range(0, len(windows), BATCH):
        chunk = windows[lo : lo + BATCH]
        dna = dna_one_hot(tf.constant(chunk))[:, first : first + length]
        best = [
            tf.stack([tf.reduce_max(maps[:, a : a + n], axis=1) for a, n in slices], axis=1)
            for maps in (tf.nn.conv1d(x, kernel, 1, "VALID") + bias for x in (dna, reverse_complement(dna)))
        ]
        out.append(tf.reshape(tf.maximum(*best), [len(chunk), -1]).numpy())
    return np.concatenate(out).astype(np.float32)


def training_rows(config, manifest):
    """The boosted baseline's training rows (:func:`tf_models.boosted_fit.fit_boosted_baseline`) as one table."""
    import pandas as pd
    import pyarrow.parquet as pq

    from tfbs.formats.draws import drawn_by_default
    from tfbs.formats.dream import TRAIN

    tables = [pq.read_table(entry.path).to_pandas() for entry in manifest.parquet[TRAIN]]
    rows = pd.concat(tables, ignore_index=True)
    rows = rows[~rows["cell"].isin(manifest.heldout_cells)]
    if config.preprocess.cross_cell_negatives:
        keep = np.zeros(len(rows), bool)
        for (tf, cell, chrom), group in rows.groupby(["tf", "cell", "chrom"]):
            drawn = drawn_by_default(
                config.preprocess.seed,
                tf,
                cell,
                chrom,
                group["start"].to_numpy(),
                group["draw"].to_numpy(),
                group["dnase"].to_numpy(),
                manifest.draw_probabilities[f"{tf}/{cell}/{TRAIN}"],
            )
            keep[rows.index.get_indexer(group.index)] = drawn
        rows = rows[keep]
    return rows.sort_values(["chrom", "start"]).reset_index(drop=True)


def row_features(config, kept, rows, windows_of, weights_by_run):
    """Per row: the baseline's motif columns, and each run's learned matches (bins computed once per chromosome)."""
    from tfbs.formats.genome import load_chromosome, read_fai

    fasta = config.data.genome_fasta
    fai = read_fai(fasta)
    window = config.preprocess.window
    scales = config.train.model.motif_cnn.scales_bp
    motif = None
    matches = {run: None for run in weights_by_run}
    for chrom, group in rows.groupby("chrom"):
        started = time.monotonic()
        bases = load_chromosome(fasta, fai[chrom])
        starts, inverse = np.unique(group["start"].to_numpy(), return_inverse=True)
        at = group.index.to_numpy()
        per_bin = kept.motif_features(bases, starts)
        if motif is None:
            motif = np.zeros((len(rows), per_bin.shape[1]), np.float32)
        motif[at] = per_bin[inverse]
        windows = windows_of(bases, starts, group)
        for run, weights in weights_by_run.items():
            per_bin = learned_matches(windows, weights, window, scales)
            if matches[run] is None:
                matches[run] = np.zeros((len(rows), per_bin.shape[1]), np.float32)
            matches[run][at] = per_bin[inverse]
        log.info("%s: %d rows, %d bins in %.1f s", chrom, len(group), len(starts), time.monotonic() - started)
    return motif, matches


def arm_features(kind: str, kept, motif, matches, dnase, cells) -> np.ndarray:
    """One arm's feature matrix (:data:`ARMS`)."""
    from tf_models.boosted import feature_matrix

    base = feature_matrix(kept.inputs, motif, dnase, cells)
    if kind == "baseline":
        return base
    if kind == "matches":
        return np.concatenate([matches, base[:, motif.shape[1] :]], axis=1)
    if kind == "matches_dnase":
        return np.concatenate([matches, np.asarray(dnase, np.float32)[:, None]], axis=1)
    return np.concatenate([base, matches], axis=1)


def fit_and_score(reader: str, features, labels, tfs, test_features, test_tfs, random_state: int = 0) -> np.ndarray:
    """Fit ``reader`` per TF on the training rows and return P(bound) of the test rows.

    ``random_state`` 0 fits the trees exactly as :func:`tf_models.boosted.fit_boosted` does.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from tf_models.boosted import BOOSTED_SETTINGS, one_thread

    scores = np.full(len(test_tfs), np.nan)
    for name in np.unique(tfs):
        if reader == "trees":
            model = HistGradientBoostingClassifier(**{**BOOSTED_SETTINGS, "random_state": random_state})
        else:
            model = make_pipeline(StandardScaler(), MLPClassifier(**{**MLP_SETTINGS, "random_state": random_state}))
        with one_thread():
            model.fit(features[tfs == name], labels[tfs == name])
        scores[test_tfs == name] = model.predict_proba(test_features[test_tfs == name])[:, 1]
    return scores


def main() -> None:
    import pyarrow.parquet as pq

    from tf_models.kept_baseline import read_kept_baseline
    from tf_models.protocol import BASELINES, JOINED, joined_probability, site_intervals
    from tfbs.config import load_config
    from tfbs.formats.genome import gather_windows
    from tfbs.formats.manifest import read_manifest
    from tfbs.formats.metrics import score_predictions
    from tfbs.lineage.paths import boosted_uri, export_uri

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--runs", nargs="+", required=True, help="run dirs, one evaluated version each")
    parser.add_argument("--name", required=True)
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS), help="the arms fitted")
    parser.add_argument("--out", type=Path, default=RESULTS / "matches_boosted.json")
    parser.add_argument(
        "--predictions", type=Path, default=ROOT / "build" / "bench" / "matches_boosted", help="per-bin scores go here"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    config = load_config(args.config, args.overrides)
    manifest = read_manifest(config.shards_uri)
    versions = {}
    for run in args.runs:
        found = [d for d in (Path(run) / "models").iterdir() if (d / "report" / "report.json").exists()]
        if len(found) != 1:
            raise SystemExit(f"{run}: {len(found)} evaluated versions, one expected")
        versions[run] = found[0].name
    kept = read_kept_baseline(boosted_uri(args.runs[0], versions[args.runs[0]]))
    weights = {run: filter_weights(export_uri(run, v)) for run, v in versions.items()}

    train = training_rows(config, manifest)
    log.info("training rows: %d (%s)", len(train), train.groupby("tf").size().to_dict())
    window = config.preprocess.window
    motif, matches = row_features(
        config,
        kept,
        train,
        lambda bases, starts, group: np.stack(
            group.drop_duplicates("start")["sequence"].map(lambda s: np.frombuffer(s, np.uint8)).to_numpy()
        ),
        weights,
    )

    order = ["tf", "cell", "chrom", "start"]
    tables = [
        pq.read_table(Path(run) / "models" / v / "report" / "predictions").to_pandas().sort_values(order)
        for run, v in versions.items()
    ]
    test = tables[0].reset_index(drop=True)
    for table in tables[1:]:
        if not (table[order].to_numpy() == test[order].to_numpy()).all():
            raise SystemExit("the runs scored different test rows")
    test["model"] = np.mean([t["probability"].to_numpy() for t in tables], axis=0)
    test = test.sort_values(["chrom", "start"]).reset_index(drop=True)
    test_motif, test_matches = row_features(
        config, kept, test, lambda bases, starts, group: gather_windows(bases, starts, window), weights
    )

    labels, tfs, cells = train["label_code"].to_numpy(np.int64), train["tf"].to_numpy(), train["cell"].to_numpy()
    scored = {arm: [] for arm in ARMS}
    for run in args.runs:
        for arm, (kind, reader) in ARMS.items():
            if arm not in args.arms or (arm == "trees_refit" and scored[arm]):
                continue
            started = time.monotonic()
            features = arm_features(kind, kept, motif, matches[run], train["dnase"].to_numpy(), cells)
            test_features = arm_features(
                kind, kept, test_motif, test_matches[run], test["dnase"].to_numpy(), test["cell"].to_numpy()
            )
            random_state = len(scored[arm]) if arm == "trees_bagged" else 0
            scored[arm].append(
                fit_and_score(reader, features, labels, tfs, test_features, test["tf"].to_numpy(), random_state)
            )
            log.info("%s %s: fitted and scored in %.1f s", run, arm, time.monotonic() - started)
    fitted = [arm for arm in ARMS if scored[arm]]
    for arm in fitted:
        test[arm] = np.mean(scored[arm], axis=0)
    # The report's joined scorer, and the same join with the trees over both feature sets.
    joins = {JOINED: "boosted", f"trees_both+{JOINED}": "trees_both"}
    joins = {name: trees for name, trees in joins.items() if trees in ("boosted", *fitted)}
    for name, trees in joins.items():
        test[name] = joined_probability(test["model"].to_numpy(), test[trees].to_numpy())
    scorers = [*fitted, *joins]
    # The per-bin scores, for analyses that should not recompute the features.
    args.predictions.mkdir(parents=True, exist_ok=True)
    test[["tf", "cell", "chrom", "start", "label", "model", *BASELINES, *scorers]].to_parquet(
        args.predictions / f"{args.name}.parquet"
    )

    per_key = {}
    for (tf, cell), rows in test.groupby(["tf", "cell"]):
        per_key[f"{tf}/{cell}"] = {
            "chrom": rows["chrom"].to_numpy(),
            "start": rows["start"].to_numpy(),
            "label": rows["label"].to_numpy(),
            **{name: rows[name].to_numpy() for name in ("model", *BASELINES, *scorers)},
        }
    # Each scorer against the report's baseline and the network; each arm against the baseline refitted alike.
    pairs = [(a, "boosted") for a in scorers] + [("model", "boosted")]
    pairs += [(a, "model") for a in fitted if ARMS[a][0] != "baseline"]
    pairs += [(f"trees_both+{JOINED}", JOINED)] if f"trees_both+{JOINED}" in joins else []
    for reference in ("trees_refit", "trees_bagged"):
        if reference in fitted:
            pairs += [(a, reference) for a in scorers if a not in ("trees_refit", "trees_bagged")]
    heldout = list(config.data.heldout_cells)
    intervals = site_intervals(per_key, heldout, 1000, seed=0, pairs=pairs)
    per_run = {
        arm: [
            {
                key: score_predictions(test.loc[idx, "label"].to_numpy(), values[idx])["auprc"]
                for key, idx in test.groupby(["tf", "cell"]).groups.items()
            }
            for values in scored[arm]
        ]
        for arm in fitted
    }
    results = {
        key: {
            name: {m: score_predictions(arrays["label"], arrays[name])[m] for m in ("auprc", "recall_at_fdr_10")}
            for name in ("model", "boosted", *scorers)
        }
        for key, arrays in per_key.items()
    }
    groups = {}
    for group, entry in intervals["groups"].items():
        groups[group] = {
            "auprc": {name: entry["methods"][name]["auprc"] for name in ("model", "boosted", *scorers)},
            "differences": {f"{d['a']} - {d['b']}": d["auprc"] for d in entry["differences"]},
        }
        if group not in ("held-out cells", "training cells"):
            continue
        keys = [k for k in per_key if (k.split("/")[1] in heldout) == (group == "held-out cells")]
        for arm in fitted:
            groups[group][f"{arm}_each_training"] = [
                float(np.mean([run[tuple(k.split("/"))] for k in keys])) for run in per_run[arm]
            ]
    payload = json.loads(args.out.read_text()) if args.out.exists() else {"benchmark": "matches_boosted"}
    payload[args.name] = {
        "config": args.config,
        "overrides": args.overrides,
        "versions": list(versions.values()),
        "arms": {arm: {"features": ARMS[arm][0], "reader": ARMS[arm][1]} for arm in fitted},
        "mlp_settings": {k: list(v) if isinstance(v, tuple) else v for k, v in MLP_SETTINGS.items()},
        "training_rows": int(len(train)),
        "groups": groups,
        "results": results,
    }
    write_results(args.out, payload)
    for group in ("held-out cells", "training cells"):
        figures = groups[group]
        line = ", ".join(f"{k} {v['estimate']:.3f}" for k, v in figures["auprc"].items())
        print(f"{group}: {line}")
        for name, d in figures["differences"].items():
            print(f"  {name}: {d['estimate']:+.3f} ({d['ci'][0]:+.3f} to {d['ci'][1]:+.3f})")
    for key in sorted(results):
        if key.startswith("FOXA"):
            print(key, "recall at 10 % FDR", {n: round(r["recall_at_fdr_10"], 3) for n, r in results[key].items()})


if __name__ == "__main__":
    main()
