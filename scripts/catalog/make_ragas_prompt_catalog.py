"""Dev script: write localjudge/serve/core/ragas_prompts.json, the fixed text of RAGAS 0.4's collection-metric prompts
(`ragas.prompt.metrics.base_prompt.BasePrompt.to_string`) that serve's judge catalog recognises (serve/core/catalog.py).

Each prompt renders as one user message: instruction, output schema, examples, then `input: <the input as JSON>`
and `\\nOutput: `. The file keeps, per prompt, the text before the input JSON and the text after it (found by
rendering the prompt's own first example and cutting at its input JSON). Only prompts with examples are kept
(their fixed text is long enough to be a fingerprint). Run it again after a RAGAS upgrade;
tests/test_serve_catalog_tools.py checks the file against the installed package."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "localjudge" / "serve" / "core" / "ragas_prompts.json"
# the prompts of the metrics serve has been measured with (docs/serve.md's clients table)
PROMPTS = [
    ("faithfulness.statements", "ragas.metrics.collections.faithfulness.util", "StatementGeneratorPrompt"),
    ("faithfulness.nli", "ragas.metrics.collections.faithfulness.util", "NLIStatementPrompt"),
]


def cut(prompt) -> tuple[str, str]:
    """The prompt's fixed text before and after its input JSON, from its own first example."""
    data = prompt.examples[0][0]
    text = prompt.to_string(data)
    js = data.model_dump_json(indent=4, exclude_none=True)
    i = text.rindex(js)
    return text[:i], text[i + len(js) :]


def entries() -> list[dict[str, str]]:
    """The catalog file's entries, from the installed ragas."""
    import importlib

    import ragas

    out = []
    for name, module, cls in PROMPTS:
        before, after = cut(getattr(importlib.import_module(module), cls)())
        out.append({"judge": f"ragas.{name}", "source": f"{module}.{cls}", "before": before, "after": after})
    return [{"ragas": ragas.__version__}, *out]


def main() -> int:
    OUT.write_text(json.dumps(entries(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
