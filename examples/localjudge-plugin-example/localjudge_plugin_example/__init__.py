"""An example localjudge plugin: the `keyword:` backend, the `thumbs` format and the `thumbs_keywords` judge.

Nothing here is imported by localjudge until a command names one of them (entry points, docs/plugins.md).
"""

__version__ = "0.1.0"
