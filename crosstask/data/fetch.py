"""Downloads a benchmark's public files into the data-root layout, each one verified.

TFDS-style: `registry.tsv` (in this package) lists, per file, the benchmark, its
path under the data root, its URL, size and SHA-256. A download resumes from its
`.part` file with an HTTP Range request, and is moved into place only when its
SHA-256 matches. A file whose checksum is not known yet is kept as `.part` and
refused, unless `record_checksums` is set: then its checksum is written to the
registry on this first download, and checked on every later one.
"""

import dataclasses
import hashlib
import http.client
import os
import pathlib
import sys
import urllib.error
import urllib.request
from typing import Callable, Sequence

REGISTRY = pathlib.Path(__file__).resolve().parent / 'registry.tsv'
UNKNOWN = 'unknown'
CHUNK = 1 << 16

# Sources that cannot be fetched from a plain URL: where to get them, where they go.
MANUAL = {
    'citesum': [
        ('CiteSum (Hugging Face hub dataset yuningm/citesum; fields src, tgt, paper_id, '
         'title, discipline)',
         'citesum/{train,val,test}.json (JSON lines)',
         'e.g. datasets.load_dataset("yuningm/citesum") and write each split (validation '
         'as val.json) with to_json(..., lines=True, force_ascii=False)'),
    ],
    'lot': [
        ('LOT full data (ClozeT, SenPos, PlotCom, OutGen; thu-coai/LOT-LongLM links them, '
         'not on GitHub)', 'lot/{clozet,senpos,plotcom,outgen}/{train,val,test}.jsonl',
         'download the archive linked from the LOT-LongLM README and unpack it there'),
    ],
    'scirepeval': [
        ('SciDocs / SciRepEval evaluation sets (Hugging Face hub allenai/scirepeval and '
         'allenai/scidocs)', 'scirepeval/<task>/...',
         'datasets.load_dataset("allenai/scirepeval", "<task>") per task, saved as JSON lines'),
    ],
}


class ChecksumError(ValueError):
  """A downloaded file's SHA-256 differs from the registry's (the file is not kept)."""


class UnknownChecksumError(ValueError):
  """A file has no recorded checksum and recording was not asked for."""


class DownloadInterrupted(OSError):
  """The transfer stopped early; the `.part` file resumes on the next run."""


@dataclasses.dataclass(frozen=True)
class FileSpec:
  benchmark: str
  path: str  # Under the data root, as the readers expect it.
  url: str
  size: int | None
  sha256: str | None  # None: not known yet.


def read_registry(registry: os.PathLike | str = REGISTRY) -> list[FileSpec]:
  specs = []
  for lineno, line in enumerate(pathlib.Path(registry).read_text('utf-8').splitlines(), 1):
    if not line.strip() or line.startswith('#'):
      continue
    cols = line.split('\t')
    if len(cols) != 5:
      raise ValueError(f'{registry}:{lineno}: expected 5 tab-separated columns (benchmark, '
                       f'path, url, size, sha256), got {len(cols)}')
    bench, path, url, size, sha = cols
    if sha != UNKNOWN and (len(sha) != 64 or any(c not in '0123456789abcdef' for c in sha)):
      raise ValueError(f'{registry}:{lineno}: field sha256 {sha!r} is not 64 hex digits')
    specs.append(FileSpec(bench, path, url, None if size == UNKNOWN else int(size),
                          None if sha == UNKNOWN else sha))
  return specs


def record_checksum(registry: os.PathLike | str, spec: FileSpec, size: int, sha: str) -> None:
  """Writes a first download's size and SHA-256 into its registry row (atomically)."""
  registry = pathlib.Path(registry)
  lines = registry.read_text('utf-8').splitlines(keepends=True)
  for i, line in enumerate(lines):
    cols = line.rstrip('\n').split('\t')
    if not line.startswith('#') and len(cols) == 5 and cols[:3] == [spec.benchmark, spec.path,
                                                                     spec.url]:
      lines[i] = '\t'.join(cols[:3] + [str(size), sha]) + '\n'
  tmp = registry.with_suffix('.tmp')
  tmp.write_text(''.join(lines), 'utf-8')
  os.replace(tmp, registry)


def sha256_of(path: os.PathLike | str) -> str:
  h = hashlib.sha256()
  with open(path, 'rb') as f:
    for block in iter(lambda: f.read(CHUNK), b''):
      h.update(block)
  return h.hexdigest()


def _download(url: str, part: pathlib.Path, timeout: float) -> None:
  """Appends the rest of `url` to `part`, asking only for the bytes it lacks."""
  have = part.stat().st_size if part.exists() else 0
  request = urllib.request.Request(url, headers={'User-Agent': 'crosstask-fetch'})
  if have:
    request.add_header('Range', f'bytes={have}-')
  try:
    response = urllib.request.urlopen(request, timeout=timeout)
  except urllib.error.HTTPError as e:
    if e.code == 416 and have:  # Nothing left to send: the part is complete.
      return
    raise OSError(f'{url}: HTTP {e.code} {e.reason}') from e
  except (urllib.error.URLError, OSError) as e:
    raise DownloadInterrupted(f'{url}: {e}; rerun to resume') from e
  with response:
    mode = 'ab' if have and response.status == 206 else 'wb'  # 200: no Range support.
    expected = response.headers.get('Content-Length')
    received = 0
    problem = None
    try:
      with open(part, mode) as f:
        for block in iter(lambda: response.read(CHUNK), b''):
          f.write(block)
          received += len(block)
    except (http.client.IncompleteRead, ConnectionError, TimeoutError) as e:
      problem = repr(e)
    if problem is None and expected is not None and received < int(expected):
      problem = f'connection closed after {received} of {expected} bytes'
    if problem:
      raise DownloadInterrupted(
          f'{url}: transfer interrupted ({problem}); {part} ({part.stat().st_size} bytes) is '
          'kept and the next run resumes from there')


def fetch_file(spec: FileSpec, root: os.PathLike | str, *, record_checksums: bool = False,
               registry: os.PathLike | str = REGISTRY, timeout: float = 60.0,
               echo: Callable[[str], None] = print) -> pathlib.Path:
  """Downloads one file (resuming), checks its SHA-256, then moves it into place."""
  dest = pathlib.Path(root) / spec.path
  if dest.exists() and spec.sha256 and sha256_of(dest) == spec.sha256:
    echo(f'ok        {spec.path} (already here, checksum matches)')
    return dest
  dest.parent.mkdir(parents=True, exist_ok=True)
  part = dest.with_name(dest.name + '.part')
  resumed = part.exists() and part.stat().st_size > 0
  _download(spec.url, part, timeout)
  got = sha256_of(part)
  size = part.stat().st_size
  if spec.sha256 is None:
    if not record_checksums:
      raise UnknownChecksumError(
          f'{spec.path}: no checksum is recorded for {spec.url} in {registry}, so the download '
          f'(kept as {part}, sha256 {got}) is not trusted. Check it, then rerun with '
          '--record-checksums to record it.')
    record_checksum(registry, spec, size, got)
    echo(f'recorded  {spec.path} sha256 {got} ({size} bytes) in {registry}')
  elif got != spec.sha256:
    part.unlink()  # A corrupt file must not be resumed from either.
    raise ChecksumError(
        f'{spec.path}: sha256 of the download from {spec.url} is {got} ({size} bytes), the '
        f'registry {registry} expects {spec.sha256} ({spec.size} bytes). The file was '
        'deleted; rerun to download it again, or fix the registry if the source changed.')
  os.replace(part, dest)
  echo(f'{"resumed" if resumed else "fetched":9s} {spec.path} ({size} bytes, sha256 ok)')
  return dest


def benchmarks(registry: os.PathLike | str = REGISTRY) -> list[str]:
  return sorted({s.benchmark for s in read_registry(registry)} | set(MANUAL))


def fetch(benchmark: str, root: os.PathLike | str, *, record_checksums: bool = False,
          registry: os.PathLike | str = REGISTRY, echo: Callable[[str], None] = print
          ) -> list[pathlib.Path]:
  """Every registered file of `benchmark` under `root`; prints the manual steps left.

  All files are attempted; the first failure is raised at the end, so one bad
  file does not stop the others.
  """
  known = benchmarks(registry)
  if benchmark not in known:
    raise ValueError(f'Unknown benchmark {benchmark!r}; known: {", ".join(known)}.')
  done, errors = [], []
  for spec in (s for s in read_registry(registry) if s.benchmark == benchmark):
    try:
      done.append(fetch_file(spec, root, record_checksums=record_checksums, registry=registry,
                             echo=echo))
    except (OSError, ValueError) as e:
      echo(f'FAILED    {spec.path}: {e}')
      errors.append(e)
  for what, where, how in MANUAL.get(benchmark, []):
    echo(f'MANUAL    {what}\n          put it at {pathlib.Path(root) / where}\n          how: {how}')
  if errors:
    raise errors[0]
  return done


def main(argv: Sequence[str] | None = None) -> int:
  import argparse
  parser = argparse.ArgumentParser(
      prog='python -m crosstask.data',
      description='Download a benchmark\'s public files, verified by SHA-256, into the '
                  'layout the readers expect (set CROSSTASK_DATA_DIR to the same folder).')
  sub = parser.add_subparsers(dest='command', required=True)
  f = sub.add_parser('fetch', help='download and verify one benchmark')
  f.add_argument('benchmark', help=f'one of: {", ".join(benchmarks())}')
  f.add_argument('--to', required=True, help='the data root to fill')
  f.add_argument('--record-checksums', action='store_true',
                 help='record the SHA-256 of files whose checksum is unknown (first download)')
  f.add_argument('--registry', default=str(REGISTRY), help='the checksum registry (TSV)')
  args = parser.parse_args(argv)
  try:
    fetch(args.benchmark, args.to, record_checksums=args.record_checksums,
          registry=args.registry)
  except (OSError, ValueError) as e:
    print(f'ERROR: {e}', file=sys.stderr)
    return 1
  return 0
