"""The one error type the gate reports as a usage error (exit 2, a message, no traceback)."""


class UsageError(Exception):
    """A missing or malformed file, a bad option, a tool that is not built: the user's to fix."""
