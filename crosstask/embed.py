"""`python -m crosstask.embed --gin_file=scirepeval/embed.gin ...`: official embeddings JSONL."""

from crosstask.runtime import embed_lib, gin_utils


def main() -> None:
  gin_utils.run_main(embed_lib.embed, what='embed_script.embed')


if __name__ == '__main__':
  main()
