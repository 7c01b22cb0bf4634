"""tfbs-spark core: configuration, storage URIs, Spark sessions and the CLI."""

__version__ = "0.1.0"
