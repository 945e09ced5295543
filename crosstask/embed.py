"""`python -m crosstask.embed --gin_file=scirepeval/embed.gin ...`: official embeddings JSONL."""

from crosstask.runtime import gin_utils
from crosstask.tasks.scirepeval import embed_job


def main() -> None:
  gin_utils.run_main(embed_job.embed, what='embed_script.embed',
                     job='infer')


if __name__ == '__main__':
  main()
