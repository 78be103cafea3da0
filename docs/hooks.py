"""MkDocs hooks (declared under `hooks:` in mkdocs.yml): pages whose content is generated at build time,
so they cannot drift from the code.

- `judges-catalog.md`: the marker `<!-- judge-catalog -->` is replaced by the catalog rendered from the
  built-in judge TOML files through `localjudge.judges` (the same objects `localjudge judges show` prints).
- `contributing.md`: the marker `<!-- include CONTRIBUTING.md -->` is replaced by the repository's
  CONTRIBUTING.md, its top heading dropped (the page has its own).

A page that lost its marker fails the build (strict or not, with a one-line PluginError): a generated page must never be empty.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

CATALOG_MARKER = "<!-- judge-catalog -->"
CONTRIBUTING_MARKER = "<!-- include CONTRIBUTING.md -->"
ROOT = Path(__file__).resolve().parent.parent


def _fence(text: str) -> str:
    """A backtick fence longer than any backtick run inside `text`, so a prompt cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_catalog(judges_dir: str | None = None) -> str:
    """The judge catalog as Markdown: a summary table, then one section per judge with its variables,
    output format, pass threshold, source and prompt templates verbatim."""
    from localjudge.judges import list_judges

    judges = list_judges(judges_dir, plugins=False)  # the catalog is the built-in judges, whatever plugins are installed
    out = [
        f"{len(judges)} judges, generated from `localjudge/judges/builtin/*.toml` when this site was built.",
        "",
        "| judge | kind | output format | variables (optional in [ ]) | source |",
        "|---|---|---|---|---|",
    ]
    for j in judges:
        fmt = ", ".join(f.kind if f is not None else "verdict_list" for f in j.formats)
        variables = ", ".join([f"`{v}`" for v in j.required_variables] + [f"[`{v}`]" for v in j.optional_variables])
        src = j.spec.source.project if j.spec.source else "user"
        out.append(f"| [`{j.name}`](#{j.name}) | {j.kind} | {fmt} | {variables} | {_cell(src)} |")
    for j in judges:
        info = j.info()
        out += ["", f"## {j.name}", "", _cell(j.description), ""]
        out.append(f"- kind: `{j.kind}`; version `{j.version}`; pass threshold: score >= {j.pass_threshold}")
        for f in j.formats:
            out.append(f"- output format: `{f.describe() if f is not None else 'verdict_list(n = number of statements)'}`")
        if j.spec.source:
            s = j.spec.source
            url = f" ([{s.url}]({s.url}))" if s.url else ""
            out.append(f"- source: {s.project}, licence {s.license or 'unknown'}{url}")
            if s.notes:
                out.append(f"- notes: {_cell(s.notes)}")
        out += ["", "| variable | required | aliases | description |", "|---|---|---|---|"]
        for v in info["variables"]:
            aliases = ", ".join(f"`{a}`" for a in v["aliases"])
            choices = f" (one of {', '.join(map(str, v['choices']))})" if "choices" in v else ""
            out.append(
                f"| `{v['name']}` | {'yes' if v['required'] else 'no'} | {aliases} | {_cell(v['description'] + choices)} |"
            )
        templates = j.prompt_templates()
        for i, stage in enumerate(templates):
            title = f"Prompt, call {i + 1} of {len(templates)}" if len(templates) > 1 else "Prompt"
            out += ["", f"**{title}**"]
            for role, text in stage:
                fence = _fence(text)
                out += ["", f"`{role}`:", "", f"{fence}text", text.strip("\n"), fence]
    return "\n".join(out) + "\n"


def render_contributing() -> str:
    """CONTRIBUTING.md without its top heading."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    return re.sub(r"\A# [^\n]*\n+", "", text)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the generated pages; leave every other page as written."""
    from mkdocs.exceptions import PluginError

    src = page.file.src_uri
    if src == "judges-catalog.md":
        if CATALOG_MARKER not in markdown:
            raise PluginError(f"docs/{src} lost its {CATALOG_MARKER} marker: the catalog would not be generated")
        return markdown.replace(CATALOG_MARKER, render_catalog())
    if src == "contributing.md":
        if CONTRIBUTING_MARKER not in markdown:
            raise PluginError(f"docs/{src} lost its {CONTRIBUTING_MARKER} marker: CONTRIBUTING.md would not be included")
        return markdown.replace(CONTRIBUTING_MARKER, render_contributing())
    return markdown
