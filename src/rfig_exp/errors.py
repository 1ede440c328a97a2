"""Errors raised for bad user input, before anything is compiled."""


class ConfigError(ValueError):
    """A config value is unknown or impossible. The message names the config key."""
