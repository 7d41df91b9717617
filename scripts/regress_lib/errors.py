"""The one error type the gate reports as a usage error (exit 2, a message, no traceback), and how
names from the files it reads are shown in messages: every message is one line, whatever a file holds."""
import re

MAX_MESSAGE = 1000  # characters of one message, as the C++ tools' (core/message_text.hpp)
MAX_NAME = 60       # characters of a name quoted in one

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class UsageError(Exception):
    """A missing or malformed file, a bad option, a tool that is not built: the user's to fix."""


def _escape(text):
    """Control characters as \\n, \\t or \\xNN; the rest as it is."""
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return _CONTROL.sub(lambda m: named.get(m.group(), f"\\x{ord(m.group()):02x}"), text)


def shown(name, limit=MAX_NAME):
    """A name (or any value) from a file for a message: controls escaped, cut after LIMIT characters with '...'."""
    text = name if isinstance(name, str) else repr(name)
    return _escape(text[:limit]) + ("..." if len(text) > limit else "")


def one_line(message, limit=MAX_MESSAGE):
    """A whole message on one line of about LIMIT characters: controls escaped; when longer, its start and its
    end (the reason) around the number of characters left out."""
    text = _escape(message)
    if len(text) <= limit:
        return text
    head, tail = limit * 3 // 4, limit // 5
    return f"{text[:head]} ... ({len(text) - head - tail} characters left out) ... {text[-tail:]}"
