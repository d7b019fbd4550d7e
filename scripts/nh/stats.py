"""The engine's statistics document (docs/statistics.md), as the scripts read it: one value by
its dotted key, or the whole document as one level of dotted keys.  Standard library only: the
guest gets this file beside nh/table.py."""
import json


def get(doc, key, default=None):
    """doc["a"]["b"] for key "a.b"; @default when any part is absent."""
    for part in key.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return default
        doc = doc[part]
    return doc


def flatten(doc, prefix=""):
    """A statistics document as one level: {"a": {"b": 1}} -> {"a.b": 1}; lists become JSON
    text.  The keys are those of docs/statistics.md."""
    flat = {}
    for k, v in doc.items():
        key = prefix + str(k)
        if isinstance(v, dict):
            flat.update(flatten(v, key + "."))
        elif isinstance(v, list):
            flat[key] = json.dumps(v)
        else:
            flat[key] = v
    return flat


def numbers(doc):
    """flatten(@doc) without its text and booleans: {"a.b": number}, the counters and gauges."""
    return {k: v for k, v in flatten(doc).items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}
