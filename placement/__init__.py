"""placement — plan, prove and apply Flink operator placement across a server and edge task managers."""

__version__ = "0.1.0"
