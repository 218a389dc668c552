"""Config composition and validation; imports neither torch nor Lightning so the CLI stays fast."""

from research.config.resolvers import register_resolvers

register_resolvers()
