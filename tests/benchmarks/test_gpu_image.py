"""`gpu_image.py`: this venv's Python as the GPU image has it (what the prepared session
runs under on the CPU, test_benchmark_session.py), and the session installing every
wheel it carries there."""

import json
import os
import re
import subprocess
import sys

import gpu_image
import harness

PROBE = ("import importlib.util as u, json, sys; "
         "print(json.dumps({m: u.find_spec(m) is not None for m in sys.argv[1:]}))")


def test_the_image_python_lacks_what_the_image_lacks_and_keeps_the_rest(tmp_path):
  env = {**os.environ, **gpu_image.write_env(tmp_path)}
  absent = ["tensorflow", "seqio", "clu", "jieba", "rouge_score", "pysbd"]  # not on the image
  present = ["jax", "flax", "optax", "orbax", "torch", "transformers", "sentencepiece",
             "gin", "rapidfuzz", "rouge", "nltk", "crosstask"]  # the image's, carried, the tree
  out = subprocess.run([sys.executable, "-c", PROBE, *absent, *present], env=env,
                       capture_output=True, text=True, check=True, cwd=str(harness.ROOT))
  found = json.loads(out.stdout)
  assert found == {**dict.fromkeys(absent, False), **dict.fromkeys(present, True)}
  # Built again over the same directory (the venv may have changed since).
  assert gpu_image.write_env(tmp_path) == {k: env[k] for k in gpu_image.write_env(tmp_path)}


def test_the_session_installs_its_wheels_when_a_carried_package_is_missing():
  # gpu_session.sh tries one package of each carried wheel and installs them all if
  # one fails.
  script = (harness.ROOT / "benchmarks" / "gpu_session.sh").read_text()
  checked = {m.strip() for m in re.search(r"-c 'import ([^']+)'", script).group(1).split(",")}
  owners = gpu_image.top_level_entries()
  assert {d for m in checked for d in owners[m]} == set(gpu_image.CARRIED)
  assert ".whl/*.whl" in script
