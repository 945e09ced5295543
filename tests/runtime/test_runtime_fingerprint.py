"""The task fingerprint: stable for one definition, different when what scores it differs."""

import functools

import seqio

import crosstask.tasks.clue  # noqa: F401  Registers the tasks.
from crosstask.metrics import classification
from crosstask.runtime.predict import fingerprint


def test_stable_and_short():
  task = seqio.get_mixture_or_task("clue_iflytek")
  first = fingerprint.fingerprint(task)
  assert first == fingerprint.fingerprint(task) and len(first) == fingerprint.LENGTH
  assert int(first, 16) >= 0


def test_tasks_that_score_differently_differ():
  names = ("clue_iflytek", "clue_tnews", "clue_afqmc", "clue_afqmc_rank", "clue_cmrc2018")
  prints = {fingerprint.fingerprint(seqio.get_mixture_or_task(n)) for n in names}
  assert len(prints) == len(names)


def test_metric_code_reached_through_a_module_is_hashed():
  # label_metrics calls macro_f1 through `ev.macro_f1`: its source is part of the hash.
  from crosstask.tasks.clue import tasks as clue_tasks  # pylint: disable=g-import-not-at-top
  seen = {}
  fingerprint._reachable(clue_tasks.label_metrics, seen)  # pylint: disable=protected-access
  assert "crosstask.metrics.classification.macro_f1" in seen
  described = fingerprint.describe_callable(
      functools.partial(classification.macro_f1, label_set=("a", "b")))
  assert described["keywords"] == {"label_set": ["a", "b"]}
  assert described["partial"]["fn"] == "crosstask.metrics.classification.macro_f1"
