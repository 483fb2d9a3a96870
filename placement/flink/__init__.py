"""Talking to Flink and building for it: the REST client, its configuration files, finding a Flink home, submitting
jars, and compiling Java against an installation's own jars."""
