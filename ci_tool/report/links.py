"""Where a build's HTML report is published, as the PR's final CI report links it: a URL template with
`{job}`, `{number}` and `{build_url}` (the Jenkins build's own URL), e.g.

    https://ci-reports.example.com/{job}/{number}/report.html      a static host or Pages branch
    {build_url}artifact/report.html                                an artifact of the build itself

Pure: the template is checked once, where it is configured, and filled for each build. A credential in it
(a `user:token@`, a `?token=`) is refused: the link is posted in the public CI report.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from ci_tool.errors import ReportError
from ci_tool.url_secrets import credentials_in

PLACEHOLDERS = ("job", "number", "build_url")
_EXAMPLE = "https://HOST/{job}/{number}/report.html or {build_url}artifact/report.html"


@dataclass(frozen=True)
class ReportUrl:
    template: str

    def for_build(self, job: str, number: int, build_url: str) -> str:
        return self.template.format(job=job, number=number, build_url=build_url)


def parse_report_url(template: str, *, where: str) -> ReportUrl:
    """The checked template; `where` names the option or variable it came from, for the message. The link
    goes into a public CI report: a template with a credential in it (url_secrets.py) is refused, and the
    message does not show it."""
    secrets = credentials_in(template)
    if secrets:
        raise ReportError(
            f"{where}: expected a URL anyone may read, found one with {' and '.join(secrets)} (not shown: the "
            "final CI report is posted where everyone reads it)",
            hint="publish the reports where the link alone opens them, without a user, token or key in the URL",
        )
    try:
        fields = [name for _, name, spec, conversion in string.Formatter().parse(template) if name is not None]
    except ValueError as problem:  # a lone `{` or `}`
        raise ReportError(
            f"{where}: expected a URL template, found {template!r} ({problem})", hint=f"write {_EXAMPLE}"
        ) from None
    unknown = [name for name in fields if name not in PLACEHOLDERS]
    if unknown:
        raise ReportError(
            f"{where}: expected placeholders among {', '.join('{' + p + '}' for p in PLACEHOLDERS)}, "
            f"found {{{unknown[0]}}} in {template!r}",
            hint=f"write {_EXAMPLE}",
        )
    if "number" not in fields and "build_url" not in fields:
        raise ReportError(
            f"{where}: expected {{number}} or {{build_url}} in the report URL, found {template!r}, "
            "which names the same page for every build",
            hint=f"write {_EXAMPLE}",
        )
    if not (template.startswith(("https://", "http://")) or template.startswith("{build_url}")):
        raise ReportError(f"{where}: expected an http(s) URL, found {template!r}", hint=f"write {_EXAMPLE}")
    return ReportUrl(template)
