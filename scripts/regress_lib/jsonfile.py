"""Reading and writing the gate's JSON files with errors a user can act on."""
import json
from pathlib import Path

from .errors import UsageError


def load_json(path, what):
    """The parsed contents of PATH; `what` names the file's role in the message when it cannot be read."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise UsageError(f"{path}: {what} not found") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read the {what}: {e.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}:{e.colno}: the {what} is not valid JSON: {e.msg}") from None


def save_text(path, text, what):
    """Writes TEXT to PATH, creating its folder; `what` names the file in the message when it cannot."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as e:
        raise UsageError(f"{path}: cannot write the {what}: {e.strerror}") from None


def save_json(path, data):
    """Writes DATA to PATH (creating its folder), indented so that diffs of a baseline read well."""
    save_text(path, json.dumps(data, indent=2) + "\n", "results file")
