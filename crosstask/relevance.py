"""`python -m crosstask.relevance --gin_file=scirepeval/relevance.gin ...`: rank pairs by P(yes)."""

from crosstask.runtime import gin_utils
from crosstask.tasks.scirepeval import relevance_job


def main() -> None:
  gin_utils.run_main(relevance_job.rank, what='relevance_script.rank',
                     job='infer')


if __name__ == '__main__':
  main()
