"""The lent GPU machine's Python packages, the wheels a GPU session carries there, and
this machine's Python made to see only those (to try a session's scripts before a
device call is spent on them).

    python benchmarks/gpu_image.py --download .whl   # the carried wheels, for its CPython
    python benchmarks/gpu_image.py --env DIR         # prints the variables of a Python as on the image

Why: the image has no package index, and a package it lacks fails a row only when the
row reaches the import (run 9's eval-only rows: `rapidfuzz`, after 28 and 48 s of their
time). `--env` builds DIR/site-packages, links to this venv's packages less those the
image lacks (its own list below, and what those need as installed here; not what
crosstask needs), and a `sitecustomize` that puts it in the venv's place: a row that
imports a missing package fails here the same way.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig

# The device image's distributions (/work/.library/device/KINDS.md, read off a machine
# on 2026-11-17). Versions differ from this venv's; names are what an import needs.
IMAGE = frozenset("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs
botorch build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy
coverage cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython
diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools formulaic
frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize
hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin
jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities
linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl
meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind
narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti
nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile
nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py
nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime
onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker
prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing
pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock
pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich
sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn
sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers
statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl
tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric
torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions
typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
""".split())
# What a session carries in .whl/ (gpu_session.sh installs them there), at the versions
# the CPU suite runs: gin-config for every entry point; rapidfuzz, rouge and nltk
# (BLEU) for the CSL metrics the eval-only rows score with.
CARRIED = {'gin-config': '0.5.0', 'rapidfuzz': '3.14.6', 'rouge': '1.0.1', 'nltk': '3.10.4'}
# The image's CPython and platforms, for `pip download`.
_PIP_TARGET = ['--python-version', '3.12', '--implementation', 'cp', '--platform',
               'manylinux_2_28_x86_64', '--platform', 'manylinux_2_27_x86_64', '--platform',
               'manylinux_2_17_x86_64', '--platform', 'manylinux2014_x86_64', '--platform',
               'any']

_SITECUSTOMIZE = '''"""Python as on the GPU image: the venv's site-packages is replaced by
benchmarks/gpu_image.py's copy of links (written by it; the variables are its --env)."""
import os
import sys

_real = os.path.realpath(os.environ['GPU_IMAGE_REAL_SITE'])
sys.path[:] = [os.environ['GPU_IMAGE_SITE'] if os.path.realpath(p) == _real else p
               for p in sys.path]
'''


def _name(distribution: str) -> str:
  return re.sub(r'[-_.]+', '-', distribution).lower()


def available() -> frozenset[str]:
  """The distributions installed here that a session carries or the image has, with
  what the image's require as installed here (their needs at this venv's versions).
  A carried wheel's own needs are not added: they travel only where CARRIED names them."""
  installed = {_name(d.metadata['Name']): d for d in importlib.metadata.distributions()}
  todo = [n for n in IMAGE if n in installed]
  seen: set[str] = set()
  while todo:
    name = todo.pop()
    if name in seen:
      continue
    seen.add(name)
    for text in installed[name].requires or []:
      requirement, _, marker = text.partition(';')
      if 'extra' in marker:
        continue
      needed = _name(re.split(r'[\s<>=!~\[(]', requirement.strip(), maxsplit=1)[0])
      if needed in installed:
        todo.append(needed)
  return frozenset(seen | set(CARRIED))


def top_level_entries() -> dict[str, set[str]]:
  """site-packages entries -> the distributions with files in them (from each RECORD:
  `Distribution.files` takes seconds over TensorFlow's)."""
  owners: dict[str, set[str]] = {}
  for dist in importlib.metadata.distributions():
    name = _name(dist.metadata['Name'])
    for line in (dist.read_text('RECORD') or '').splitlines():
      owners.setdefault(line.split(',', 1)[0].split('/', 1)[0], set()).add(name)
  return owners


def write_env(directory: pathlib.Path) -> dict[str, str]:
  """Builds `directory` (site-packages of links, sitecustomize) and returns the
  environment variables that start this venv's Python as on the image."""
  real = pathlib.Path(sysconfig.get_paths()['purelib'])
  keep = available()
  owners = top_level_entries()
  site = directory / 'site-packages'
  shutil.rmtree(site, ignore_errors=True)  # built afresh: this venv may have changed
  site.mkdir(parents=True)
  for entry in real.iterdir():
    owned = owners.get(entry.name)
    if entry.suffix == '.pth' or (owned is not None and not owned & keep):
      continue  # .pth files already ran at start-up, from the real directory
    (site / entry.name).symlink_to(entry)
  (directory / 'sitecustomize.py').write_text(_SITECUSTOMIZE)
  return {'PYTHONPATH': str(directory), 'GPU_IMAGE_SITE': str(site),
          'GPU_IMAGE_REAL_SITE': str(real)}


def download(directory: pathlib.Path) -> None:
  """The carried wheels, built for the image's CPython, into `directory`."""
  for name, version in CARRIED.items():
    subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '--only-binary=:all:',
                    *_PIP_TARGET, '-d', str(directory), f'{name}=={version}'], check=True)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--download', type=pathlib.Path, help='write the carried wheels here')
  parser.add_argument('--env', type=pathlib.Path, help='build an image-like Python here')
  args = parser.parse_args(argv)
  if args.download:
    download(args.download)
  if args.env:
    for key, value in write_env(args.env).items():
      print(f'export {key}={value}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
