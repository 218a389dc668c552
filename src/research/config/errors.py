"""The one exception type a user's config mistake becomes."""


class ConfigError(ValueError):
    """A config value or override a user got wrong; its message is a single line."""
