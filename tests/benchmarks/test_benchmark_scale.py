"""scale.py's search for the largest batch, against a fake compile (no libtpu needed)."""

import scale


def _fake_compile(limit_rows, calls):
  """Per-chip memory linear in rows per chip, with a little curvature; 16 GiB chips."""
  def compile_once(model, topology, batch, lengths, opts, bindings):
    del model, topology, lengths, opts, bindings
    calls.append(batch)
    rows = batch / 8
    gib = 0.5 + 15.25 * rows / limit_rows
    common = {'global_batch': batch, 'hbm_gib': 16.0, 'params_gib': 0.2,
              'opt_state_gib': 0.01, 'compile_s': 1.0}
    if rows <= limit_rows:
      return {**common, 'fits': True, 'per_chip_gib': gib}
    # XLA:TPU's refusal names the temporaries only.
    return {**common, 'fits': False, 'per_chip_gib': gib - 0.21,
            'error': 'RESOURCE_EXHAUSTED: Ran out of memory on HBM'}
  return compile_once


def test_grid_has_three_significant_bits():
  assert [r for r in range(1, 50) if scale.on_grid(r)] == [
      1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48]
  assert scale.grid_floor(45.7) == 40 and scale.grid_above(40) == 48


def test_search_ends_on_neighbouring_fit_and_miss_from_any_start():
  opts = scale.Options('fsdp', 'full', 'flash', True, None, max_batch=4096, timeout_s=1)
  for limit in (1, 13, 45, 100):
    expected = scale.grid_floor(limit)
    for start in (1, 8, 40, 300):
      calls = []
      result = scale.largest_batch('m', 'v5e-8', (512, 512), opts, [], 8, False,
                                   start_rows=start, compile_fn=_fake_compile(limit, calls))
      assert result['fits'] and result['global_batch'] == expected * 8, (limit, start)
      assert result['miss_batch'] == scale.grid_above(expected) * 8
      assert result['compiles'] == len(calls) <= 6


def test_search_stops_at_max_batch_and_reports_no_fit():
  opts = scale.Options('fsdp', 'full', 'flash', True, None, max_batch=256, timeout_s=1)
  capped = scale.largest_batch('m', 'v5e-8', (512, 512), opts, [], 8, False, start_rows=4,
                               compile_fn=_fake_compile(1000, []))
  assert capped['global_batch'] == 256 and capped['miss_batch'] is None
  none = scale.largest_batch('m', 'v5e-8', (512, 512), opts, [], 8, False, start_rows=4,
                             compile_fn=_fake_compile(0.5, []))
  assert not none['fits'] and none['global_batch'] == 8 and none['miss_batch'] is None
