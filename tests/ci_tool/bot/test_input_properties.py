"""Property: whatever an allowlist or an event payload holds, the bot reads a value or raises BotError, and a
read event always gets a decision, never another exception."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.bot.authorize import Allowlist, parse_allowlist
from ci_tool.bot.event import Decision, decide, read_event
from ci_tool.errors import BotError
from ci_tool.json_file import parse_json

FIXTURES = Path(__file__).parent / "fixtures"
EVENTS = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(FIXTURES.glob("event_*.json"))]
ALLOWLIST = parse_allowlist((FIXTURES / "allowlist.yml").read_text(encoding="utf-8"))

# The fields read_event reads, and values of every JSON type to put there.
PATHS = [
    ("action",), ("comment",), ("comment", "body"), ("comment", "user"), ("comment", "user", "login"),
    ("comment", "user", "type"), ("comment", "author_association"), ("comment", "id"), ("sender", "login"),
    ("repository", "full_name"), ("issue",), ("issue", "number"), ("issue", "state"), ("issue", "labels"),
    ("issue", "pull_request"), ("changes", "body", "from"),
]  # fmt: skip
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(
        ["/bot run", "/bot help", "/bot kill", "created", "edited", "OWNER", "Bot", "open", "\ufeff/bot"]
    ),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["name", "x"]), children),
    max_leaves=8,
)


@st.composite
def payloads(draw: st.DrawFn) -> object:
    payload = copy.deepcopy(draw(st.sampled_from(EVENTS)))
    for path in draw(st.lists(st.sampled_from(PATHS), max_size=3)):
        target = payload
        for key in path[:-1]:
            target = target.setdefault(key, {}) if isinstance(target, dict) else {}
        if isinstance(target, dict):
            target[path[-1]] = draw(json_values)
    return payload


def _decide(payload: object) -> None:
    try:
        event = read_event(payload, file="event.json")
    except BotError as error:
        assert "\n" not in str(error)
        return
    assert isinstance(decide(event, ALLOWLIST), Decision)


@settings(max_examples=600, deadline=None)
@given(payloads())
def test_any_payload_is_read_and_decided_or_raises_our_error(payload: object) -> None:
    _decide(payload)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_json_value_is_read_or_raises_our_error(value: object) -> None:
    _decide(parse_json(json.dumps(value), file="event.json", error=BotError))


ALLOWLIST_PIECES = [
    "run:", "kill_skip:", "runn:", "-", "[", "]", "{", "}", ",", ":", "alice", "Alice", "@alice", "bad--name",
    "1234", "'1234'", "a" * 40, "~", "null", "true", "07", "1:30", "!!int x", "!!binary aGk=", '"\\0"', '"a\\nb"',
    "&a x", "*a", "[" * 1200, "]" * 1200, "\n", "\n  ", " ", "#", "\t", "\ufeff", "\x85", "\u2028",
]  # fmt: skip
allowlists = st.lists(st.sampled_from(ALLOWLIST_PIECES) | st.text(max_size=4), max_size=16).map(" ".join)


@settings(max_examples=800, deadline=None)
@given(allowlists)
def test_any_allowlist_parses_or_raises_our_error(text: str) -> None:
    try:
        allowlist = parse_allowlist(text)
    except BotError as error:  # one line, or a count and then each problem on a line of its own
        assert len(str(error).splitlines()) == 1 + len(error.problems)
        return
    assert isinstance(allowlist, Allowlist)
    assert all(login == login.lower() for login in allowlist.run | allowlist.kill_skip)
