"""Generators of shipped judge catalog files (localjudge/judges/builtin, templates, serve's ragas prompts)."""


def controls_block(
    answer: str | None, context: str | None = None, reference: str | None = None, conversation: str | None = None
) -> str:
    """The `[controls]` table a generated judge file ends with: which variables negative controls swap
    (localjudge/report/controls.py), with the comment the hand-written judge files carry."""
    lines = ["", "# what negative controls swap between rows (report/controls.py); not part of the judge's version", "[controls]"]
    named = (("answer", answer), ("context", context), ("reference", reference), ("conversation", conversation))
    lines += [f'{k} = "{v}"' for k, v in named if v]
    return "\n".join(lines) + "\n"
