"""Reading and writing the gate's JSON files with errors a user can act on.

Whatever a file holds gives a value or a UsageError: bytes that are not UTF-8, nesting deeper than
Python's recursion allows, integers of thousands of digits, and NaN or Infinity (not JSON, though
Python's parser takes them, and they would pass every numeric check)."""
import json
import math
from pathlib import Path

from .errors import UsageError, shown


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {shown(text)} is out of range")
    return value


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def load_json(path, what):
    """The parsed contents of PATH; `what` names the file's role in the message when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: {what} not found") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read the {what}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: the {what} is not UTF-8 text (byte {e.start}: 0x{data[e.start]:02x})") from None
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}:{e.colno}: the {what} is not valid JSON: {e.msg}") from None
    except RecursionError:
        raise UsageError(f"{path}: the {what} is nested too deeply to be a results file") from None
    except ValueError as e:  # NaN, 1e999, an integer of more than 4300 digits
        raise UsageError(f"{path}: the {what} is not valid JSON: {e}") from None


def save_text(path, text, what):
    """Writes TEXT to PATH, creating its folder; `what` names the file in the message when it cannot."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as e:
        raise UsageError(f"{path}: cannot write the {what}: {e.strerror or e}") from None


def save_json(path, data):
    """Writes DATA to PATH (creating its folder), indented so that diffs of a baseline read well."""
    save_text(path, json.dumps(data, indent=2) + "\n", "results file")
