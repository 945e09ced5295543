"""`python -m crosstask.data fetch <benchmark> --to DIR [--record-checksums]`."""

from crosstask.data import fetch

if __name__ == '__main__':
  raise SystemExit(fetch.main())
