from __future__ import annotations

import pytest

from ci_tool.run.signatures import Signature, failure_excerpt, failure_signature, normalize


@pytest.mark.parametrize(
    ("message", "normalized"),
    [
        ("block 17 at 0x11000", "block <n> at <hex>"),
        ("pool /tmp/pytest-of-u/pytest-3/test_a0/kv is full", "pool <tmp> is full"),
        ("in /home/u/repo/src/kvengine/pool.py", "in <path>"),
        ("see src/kvengine/pool.py line 12", "see <path> line <n>"),
        ("id 3f2a9c1e5b7d done", "id <hex> done"),
        ("loss -2.5e-3 != 1.25", "loss <n> != <n>"),
        ("took   3 s\n more", "took <n> s more"),
        ("test_case_7 failed", "test_case_7 failed"),
    ],
    ids=["number-and-address", "pytest-tmp", "absolute-path", "relative-path", "hex-id", "floats", "spaces", "names"],
)
def test_normalize(message: str, normalized: str) -> None:
    assert normalize(message) == normalized


@pytest.mark.parametrize(
    ("kind", "message", "text", "signature"),
    [
        ("IndexError", "IndexError: block 17 out of range", "", Signature("IndexError", "block <n> out of range")),
        ("", "ValueError: bad 3", "", Signature("ValueError", "bad <n>")),
        (
            "",
            "",
            "x = 1\nE   RuntimeError: CUDA error: out of memory\nf.py:3: RuntimeError",
            Signature("RuntimeError", "CUDA error: out of memory"),
        ),
        ("AssertionError", "AssertionError: broken\nassert 2 == 3", "", Signature("AssertionError", "broken")),
        ("Crash", "Crash: exited with code 3", "", Signature("Crash", "exited with code <n>")),
        ("", "assert 3 == 4", "", Signature("Failure", "assert <n> == <n>")),
        ("KeyError", "", "", Signature("KeyError", "")),
    ],
    ids=["typed", "type-from-message", "type-from-report", "first-line-only", "crash", "untyped", "no-message"],
)
def test_failure_signature(kind: str, message: str, text: str, signature: Signature) -> None:
    assert failure_signature(kind, message, text) == signature


def test_same_bug_different_numbers_share_a_signature() -> None:
    first = failure_signature("IndexError", "IndexError: block 17 at 0x11000 for /tmp/pool-17/kv")
    second = failure_signature("IndexError", "IndexError: block 4242 at 0x1092000 for /tmp/pool-4242/kv")
    assert first == second
    assert str(first) == "IndexError: block <n> at <hex> for <tmp>"


@pytest.mark.parametrize(
    ("text", "excerpt"),
    [
        (
            "    def test():\n>       f()\nE       ValueError: x\nE       more\n\nf.py:3: ValueError\ntrailer",
            "E       ValueError: x\nE       more\nf.py:3: ValueError",
        ),
        (
            'a\nb\n  File "t.py", line 2, in test\n    time.sleep(9)\n+++++++++ Timeout +++++++++\n',
            'a\nb\n  File "t.py", line 2, in test\n    time.sleep(9)',
        ),
    ],
    ids=["pytest-e-lines", "tail-without-banner"],
)
def test_failure_excerpt(text: str, excerpt: str) -> None:
    assert failure_excerpt(text) == excerpt
