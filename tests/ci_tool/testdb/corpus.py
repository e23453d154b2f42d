"""Where the corpus tests find TensorRT-LLM's real test-db files and waives.txt, which this repository does
not hold (they are TensorRT-LLM's, and public): $TRTLLM_CORPUS, else `../shared/corpus/trtllm` beside the
checkout. Without them those tests skip, saying where they looked and how to point them elsewhere; the CI
host has them, and `.ci/run` fails on any skip but a GPU test's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CORPUS_ENV = "TRTLLM_CORPUS"
ROOT = Path(__file__).resolve().parents[3]
CORPUS = Path(os.environ.get(CORPUS_ENV) or ROOT.parent / "shared" / "corpus" / "trtllm")
TEST_DB = CORPUS / "test-db"
WAIVES = CORPUS / "waives.txt"


def needs_corpus(path: Path) -> pytest.MarkDecorator:
    """Skip unless `path` (a part of the corpus) is there."""
    return pytest.mark.skipif(
        not path.exists(),
        reason=f"TensorRT-LLM's corpus is not on this machine: no {path} "
        f"(set ${CORPUS_ENV} to a folder holding its test-db/ and waives.txt)",
    )
