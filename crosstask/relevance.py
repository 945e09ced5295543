"""`python -m crosstask.relevance --gin_file=scirepeval/relevance.gin ...`: rank pairs by P(yes)."""

from crosstask.runtime import gin_utils, relevance_lib


def main() -> None:
  gin_utils.run_main(relevance_lib.rank, what='relevance_script.rank')


if __name__ == '__main__':
  main()
