"""TensorFlow imported through tf_models leaves Keras' scikit-learn and matplotlib extras out, and only those,
and pauses the garbage collector meanwhile: what the import built is frozen, the collector on again."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

LEAN = """
import gc, sys
import tf_models.motif_cnn  # imports keras and tensorflow
print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'matplotlib', 'keras', 'tensorflow'}))
print(tf_models.lean_import.installed())
print(gc.isenabled(), gc.get_freeze_count() > 100_000)
import keras
from sklearn.ensemble import HistGradientBoostingClassifier
from tf_models.curves_plot import Figure
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
print(model.count_params(), HistGradientBoostingClassifier.__name__, Figure.__name__)
try:
    keras.wrappers.SKLearnClassifier(model=None)
except ImportError as error:
    print(str(error).split(" requires ")[0])
"""

IMPORTED_FIRST = """
import gc, sys
import sklearn, tensorflow
import tf_models
print(tf_models.lean_import.installed(), 'sklearn' in sys.modules, gc.get_freeze_count())
"""

#: A process that had turned the collector off keeps it off.
COLLECTOR_OFF = """
import gc
gc.disable()
import tf_models, keras
print(gc.isenabled(), gc.get_freeze_count() > 100_000)
"""


def _run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_keras_imports_without_its_optional_extras_which_import_after_it():
    imported, still_hooked, collector, built, wrapper = _run(LEAN)
    assert imported == "['keras', 'tensorflow']" and still_hooked == "False"
    # The collector is on again, the import's objects out of its reach.
    assert collector == "True True"
    # Keras and the project's own users of scikit-learn and matplotlib work as before.
    assert built == "4 HistGradientBoostingClassifier Figure"
    # What Keras left out, as where scikit-learn is not installed: its estimator wrappers.
    assert wrapper == "SKLearnClassifier"


def test_nothing_is_hooked_when_tensorflow_came_first():
    assert _run(IMPORTED_FIRST) == ["False True 0"]


def test_a_collector_turned_off_before_the_import_stays_off():
    assert _run(COLLECTOR_OFF) == ["False True"]
