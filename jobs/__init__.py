"""spark-submit entry points: parse arguments, load the configuration, build
the session, call the library. Nothing else belongs here."""
