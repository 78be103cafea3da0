"""Command line: a thin click group over the Python API, one module per command group.

    localjudge judge NAME --field input=... [--model SPEC]  one judgement, typed JSON out   (judge.py)
    localjudge parse FORMAT < text                          parse any text with the same layer (judge.py)
    localjudge trace --trace FILE --instructions TEXT       judge an agent trace with tools  (trace.py)
    localjudge run DATA --judge NAME ...                    batch evaluation, resumable      (run.py)
    localjudge judges list | show NAME                      the judge catalog                (judges.py)
    localjudge models list | info | verify | pull | add | options   the model registry and backends (models.py)
    localjudge report RUN / agree RUN                       HTML report, agreement with labels (report.py)
    localjudge controls RUN_DIR [--sample N]                negative controls, without labels (controls.py)
    localjudge align JUDGE --labels FILE                    calibrate a judge on human labels  (align.py)
    localjudge serve [--model SPEC] [--port 8000]           OpenAI-compatible judge server   (serve.py)
    localjudge view [RUN_DIR ...] [--runs-root DIR]         review and label runs in a browser (view.py)
    localjudge labels export | import                       human labels of a run directory  (labels.py)

Shared options live in options.py. Errors: every `LocalJudgeError` prints one line and exits with
its class's `exit_code` (errors.py), here and nowhere else; --debug shows the traceback instead.
"""

from __future__ import annotations

from typing import Any

import click

from ..errors import LocalJudgeError


class _Group(click.Group):
    """Turns library errors into one-line messages with documented exit codes (the one mapping)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LocalJudgeError as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"Error: {e}", err=True)
            ctx.exit(e.exit_code)


@click.group(cls=_Group)
@click.version_option(package_name="localjudge")
@click.option("--debug", is_flag=True, help="Show full tracebacks.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """localjudge: LLM-as-a-judge on your own machine, outputs valid by construction."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _register() -> None:
    from .align import align_cmd
    from .controls import controls_cmd
    from .judge import judge_cmd, parse_cmd
    from .judges import judges_group
    from .labels import labels_group
    from .models import models_group
    from .report import agree_cmd, report_cmd
    from .run import run_cmd
    from .serve import serve_cmd
    from .trace import trace_cmd
    from .view import view_cmd

    for cmd in (
        judge_cmd,
        parse_cmd,
        trace_cmd,
        run_cmd,
        judges_group,
        models_group,
        report_cmd,
        agree_cmd,
        controls_cmd,
        align_cmd,
        serve_cmd,
        view_cmd,
        labels_group,
    ):
        main.add_command(cmd)


_register()

__all__ = ["main"]
