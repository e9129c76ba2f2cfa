"""The error a rank's set-up raises; its message says what to change."""


class StrategyError(Exception):
    """The strategy cannot be set up on this rank; the message says what to change."""
