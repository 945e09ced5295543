"""`python -m crosstask.data fetch` against a local HTTP server serving fixtures.

The server honours Range requests and can cut a transfer short once, like a
dropped connection; one of its files is corrupt.
"""

import hashlib
import http.server
import pathlib
import subprocess
import sys
import threading

import pytest

from crosstask.data import fetch

GOOD = 'csl/benchmark/ts/dev.tsv'
BIG = 'csl/benchmark/kg/dev.tsv'
BAD = 'csl/benchmark/cls_ctg/dev.tsv'
NEW = 'csl/benchmark/cls_dcp/dev.tsv'
FILES = {GOOD: '摘要\t标题\n' * 50, BIG: 'x' * 300_000, BAD: 'the real bytes\n', NEW: 'new\n'}


class _Handler(http.server.BaseHTTPRequestHandler):
  served: dict[str, bytes] = {}
  cut_once: set[str] = set()  # Paths whose next transfer stops halfway.
  ranges: list[tuple[str, str | None]] = []

  def do_GET(self):  # pylint: disable=invalid-name
    path = self.path.lstrip('/')
    body = self.served.get(path)
    self.ranges.append((path, self.headers.get('Range')))
    if body is None:
      self.send_error(404)
      return
    start = 0
    if self.headers.get('Range'):
      start = int(self.headers['Range'].split('=')[1].split('-')[0])
      if start >= len(body):
        self.send_error(416)
        return
      self.send_response(206)
      self.send_header('Content-Range', f'bytes {start}-{len(body) - 1}/{len(body)}')
    else:
      self.send_response(200)
    self.send_header('Content-Length', str(len(body) - start))
    self.end_headers()
    if path in self.cut_once:
      self.cut_once.discard(path)
      self.wfile.write(body[start:start + (len(body) - start) // 2])
      self.wfile.flush()
      self.close_connection = True
      return
    self.wfile.write(body[start:])

  def log_message(self, *args):
    pass


@pytest.fixture
def server(tmp_path):
  corrupt = {BAD: b'tampered bytes\n'}
  _Handler.served = {p: corrupt.get(p, t.encode()) for p, t in FILES.items()}
  _Handler.cut_once, _Handler.ranges = set(), []
  httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
  thread = threading.Thread(target=httpd.serve_forever, daemon=True)
  thread.start()
  base = f'http://127.0.0.1:{httpd.server_address[1]}'
  registry = tmp_path / 'registry.tsv'
  rows = ['# benchmark\tpath\turl\tsize\tsha256']
  for path, text in FILES.items():
    data = text.encode()
    sha = 'unknown' if path == NEW else hashlib.sha256(data).hexdigest()
    rows.append('\t'.join(['demo', path, f'{base}/{path}', str(len(data)), sha]))
  registry.write_text('\n'.join(rows) + '\n')
  yield registry
  httpd.shutdown()
  thread.join()


def _spec(registry, path):
  return next(s for s in fetch.read_registry(registry) if s.path == path)


def test_good_file_lands_in_the_reader_layout(server, tmp_path):
  dest = fetch.fetch_file(_spec(server, GOOD), tmp_path / 'root', registry=server)
  assert dest == tmp_path / 'root' / GOOD and dest.read_text() == FILES[GOOD]
  lines = []
  fetch.fetch_file(_spec(server, GOOD), tmp_path / 'root', registry=server, echo=lines.append)
  assert 'already here' in lines[0]


def test_corrupted_file_is_refused_and_not_kept(server, tmp_path):
  root = tmp_path / 'root'
  with pytest.raises(fetch.ChecksumError, match=rf'{BAD}: sha256 of the download .* expects'):
    fetch.fetch_file(_spec(server, BAD), root, registry=server)
  assert not (root / BAD).exists() and not (root / (BAD + '.part')).exists()


def test_interrupted_download_resumes_with_a_range_request(server, tmp_path):
  root = tmp_path / 'root'
  _Handler.cut_once.add(BIG)
  with pytest.raises(fetch.DownloadInterrupted, match='next run resumes'):
    fetch.fetch_file(_spec(server, BIG), root, registry=server)
  part = root / (BIG + '.part')
  assert 0 < part.stat().st_size < len(FILES[BIG]) and not (root / BIG).exists()
  dest = fetch.fetch_file(_spec(server, BIG), root, registry=server)
  assert dest.read_text() == FILES[BIG]
  assert _Handler.ranges[-1] == (BIG, f'bytes={len(FILES[BIG]) // 2}-')


def test_unknown_checksum_needs_the_record_flag(server, tmp_path):
  root = tmp_path / 'root'
  with pytest.raises(fetch.UnknownChecksumError, match='--record-checksums'):
    fetch.fetch_file(_spec(server, NEW), root, registry=server)
  assert not (root / NEW).exists()  # Not trusted, so not where readers look.
  fetch.fetch_file(_spec(server, NEW), root, registry=server, record_checksums=True)
  assert (root / NEW).read_text() == 'new\n'
  assert _spec(server, NEW).sha256 == hashlib.sha256(b'new\n').hexdigest()
  assert _Handler.ranges[-1] == (NEW, 'bytes=4-')  # The kept part was complete already.


def test_cli_fetches_all_reports_failures_and_manual_steps(server, tmp_path):
  root = tmp_path / 'root'
  res = subprocess.run([sys.executable, '-m', 'crosstask.data', 'fetch', 'demo', '--to',
                        str(root), '--registry', str(server)],
                       capture_output=True, text=True, timeout=120,
                       cwd=pathlib.Path(__file__).resolve().parents[2])
  assert res.returncode == 1
  assert (root / GOOD).is_file() and (root / BIG).is_file()
  assert f'FAILED    {BAD}' in res.stdout and 'ERROR:' in res.stderr
  lines = []
  with pytest.raises(fetch.ChecksumError):  # The first failure is raised at the end.
    fetch.fetch('demo', root, registry=server, echo=lines.append)
  assert [l.split()[0] for l in lines] == ['ok', 'ok', 'FAILED', 'FAILED']
  assert 'no checksum is recorded' in lines[3]
  with pytest.raises(ValueError, match="Unknown benchmark 'nope'"):
    fetch.fetch('nope', root, registry=server)
  manual = []
  fetch.fetch('citesum', root, registry=server, echo=manual.append)
  assert any('yuningm/citesum' in m and str(root / 'citesum') in m for m in manual)


def test_package_registry_is_well_formed():
  specs = fetch.read_registry()
  assert {'csl', 'clue', 'citesum', 'lot', 'scirepeval'} <= set(fetch.benchmarks())
  assert all(s.url.startswith('https://') for s in specs)
  assert len({s.path for s in specs}) == len(specs)
  assert sum(s.sha256 is not None for s in specs) > 100


def test_manual_steps_name_the_files_the_readers_read():
  """A researcher who follows `data fetch`'s MANUAL advice gets files the readers find
  (it once said citesum/validation.jsonl where the reader reads citesum/val.json)."""
  from crosstask.tasks.citesum import readers as citesum
  (_, where, how), = fetch.MANUAL['citesum']
  assert where.startswith('citesum/{' + ','.join(citesum.CITESUM_FILES.values())
                          .replace('.json', '') + '}.json')
  assert 'as val.json' in how and citesum.CITESUM_FILES['validation'] == 'val.json'
