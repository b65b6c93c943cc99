"""Tests of the models room: backends, the embedded server, the tiny model, `run`/`serve`/`model init`."""
