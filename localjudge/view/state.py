"""What the view's routes share: the configuration, the open runs, the alignments started from the browser,
and the request helpers every route uses (the run a path names, an integer query parameter, judge domains)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..labels.store import Domain, judge_domain
from ..store import queries
from .runs import RunHandle, Runs

MAX_BODY_BYTES = 256 << 10  # a label body: a 10,000-character comment escaped as \uXXXX is 60 KB


class ViewConfig:
    """What the app serves and how it is guarded."""

    def __init__(
        self,
        run_dirs: list[Path],
        runs_root: Path | None = None,
        api_key: str | None = None,
        allowed_hosts: set[str] | None = None,
        align_model: str | None = None,
        align_options: dict[str, Any] | None = None,
        max_connections: int = 512,
        header_timeout: float = 10.0,
        body_timeout: float = 30.0,
        max_body_bytes: int = MAX_BODY_BYTES,
    ):
        self.run_dirs, self.runs_root, self.api_key = run_dirs, runs_root, api_key
        self.allowed_hosts = allowed_hosts or set()
        self.align_model, self.align_options = align_model, align_options or {"n_threads": 1}
        self.csrf_token = secrets.token_urlsafe(24)
        # what a client may hold (http_limits): open connections, seconds for headers and for a body, body bytes
        self.max_connections, self.header_timeout, self.body_timeout = max_connections, header_timeout, body_timeout
        self.max_body_bytes = max_body_bytes


@dataclass
class ViewState:
    """One app's shared state: its config, the runs on show, and each (run, judge)'s alignment started from
    the browser (`{"state": "running" | "done" | "failed", ...}`)."""

    config: ViewConfig
    runs: Runs
    aligns: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def open(cls, config: ViewConfig) -> ViewState:
        """The state of an app serving `config`'s runs."""
        return cls(config, Runs(config.run_dirs, config.runs_root))

    @property
    def csrf(self) -> str:
        """The token every page embeds and every POST must send back."""
        return self.config.csrf_token

    def run_of(self, request: Any) -> RunHandle:
        """The run the path's `{rid}` names (KeyError: a 404)."""
        return self.runs.get(request.path_params["rid"])

    def domains(self, run: RunHandle) -> dict[str, Domain]:
        """Each judge's label domain, from its first 20 results (cached on the run)."""
        out: dict[str, Domain] = {}
        for j in run.judges():
            key = ("domain", j)
            if key in run._cache:
                out[j] = run._cache[key]
                continue
            with run.conn() as c:
                ris = queries.judge_rows(c, run.run_id(), j, limit=20)
            dom = judge_domain(run.results_of_cells(j, ris))
            if dom is not None:
                out[j] = run._cache[key] = dom
        return out
