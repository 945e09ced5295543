"""The tests' XLA flags: added once, never over the caller's, only where XLA knows them."""

import os

import xla_test_flags


def test_flags_add_what_is_missing_and_keep_what_is_set():
  got = xla_test_flags.flags(4, '--xla_backend_optimization_level=2 --xla_dump_to=/tmp/x')
  known = [f for f in ('--xla_cpu_use_fusion_emitters=false',
                        '--xla_cpu_parallel_codegen_split_count=1')
           if xla_test_flags._jaxlib_knows(f)]  # pylint: disable=protected-access
  assert got.split() == ['--xla_backend_optimization_level=2', '--xla_dump_to=/tmp/x',
                         '--xla_force_host_platform_device_count=4'] + known
  assert xla_test_flags.flags(8, xla_test_flags.flags(8)) == xla_test_flags.flags(8)


def test_this_process_runs_under_them():
  # conftest.py set them before JAX started; XLA refuses unknown flags, so reaching
  # this line means this jaxlib took every one.
  assert set(xla_test_flags.flags(8).split()) <= set(os.environ['XLA_FLAGS'].split())
  assert not xla_test_flags._jaxlib_knows('--xla_no_such_flag_anywhere=1')  # pylint: disable=protected-access
