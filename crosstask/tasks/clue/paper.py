"""Published CLUE and FewCLUE numbers, to print beside a run.

Sources (test accuracy %, CMRC 2018 = EM on the CLUE 2k test):
* CLUE README (CLUEbenchmark/CLUE), classification "v1" and MRC boards: the
  paper's baseline models. Quote them as "CLUE README": the COLING paper's
  Table 2 is not the same table.
* FewCLUE README (CLUEbenchmark/FewCLUE at cdc4520): test_public accuracy; PET
  and ori-PtuningB rows are means over k = 0..4.
"""

CLUE_COLUMNS = ("afqmc", "tnews", "iflytek", "cmnli", "cluewsc2020", "csl",
                "cmrc2018", "chid", "c3")

# model -> task -> score; "classification" and "mrc" are the README's board scores.
CLUE_README = {
    "BERT-base": (73.70, 56.58, 60.29, 79.69, 62.0, 80.36, 71.60, 82.04, 64.50, 68.77, 72.71),
    "BERT-wwm-ext": (74.07, 56.84, 59.43, 80.42, 61.1, 80.63, 73.95, 82.90, 68.50, 68.75, 75.12),
    "ERNIE-base": (73.83, 58.33, 58.96, 80.29, 60.8, 79.1, 74.7, 82.28, 64.10, 68.55, 73.69),
    "RoBERTa-large": (74.02, 57.86, 62.55, 81.70, 72.7, 81.36, 78.50, 84.50, 67.55, 71.70, 76.85),
    "XLNet-mid": (70.50, 56.24, 57.85, 81.25, 64.4, 81.26, 66.95, 83.47, 67.68, 68.58, 72.70),
    "ALBERT-tiny": (69.92, 53.35, 48.71, 70.61, 58.5, 74.56, 53.35, 43.53, 50.26, 62.61, 49.05),
    "RoBERTa-wwm-ext": (74.04, 56.94, 60.31, 80.51, 67.8, 81.0, 75.20, 83.62, 66.50, 70.10,
                        75.11),
    "RoBERTa-wwm-large": (76.55, 58.61, 62.98, 82.12, 74.6, 82.13, 77.95, 85.37, 73.82, 72.83,
                          79.05),
}
CLUE_README = {model: dict(zip(CLUE_COLUMNS + ("classification", "mrc"), row))
               for model, row in CLUE_README.items()}

FEWCLUE_COLUMNS = ("eprstmt", "bustm", "ocnli", "csldcp", "tnews", "cluewsc", "iflytek",
                   "csl", "chid")
FEWCLUE_README = {
    "Human": (82.49, 90.0, 88.0, 90.3, 68.0, 71.0, 98.0, 66.0, 84.0, 87.1),
    "FineTuningB": (39.35, 61.9, 54.1, 33.6, 25.6, 40.5, 50.3, 22.6, 50.5, 15.0),
    "PET": (57.44, 86.66, 56.04, 44.02, 51.69, 54.47, 57.52, 46.01, 59.35, 61.21),
    "ori-PtuningB": (59.91, 88.26, 60.92, 41.90, 56.02, 54.23, 58.11, 57.63, 62.91, 59.27),
    "EFL": (55.91, 84.9, 71.8, 66.2, 45.0, 52.1, 53.0, 42.7, 56.6, 30.9),
    "Zero-shot-R": (44.61, 85.2, 50.6, 40.3, 12.6, 25.3, 50.0, 27.7, 52.2, 57.6),
}
FEWCLUE_README = {method: dict(zip(("score",) + FEWCLUE_COLUMNS, row))
                  for method, row in FEWCLUE_README.items()}
