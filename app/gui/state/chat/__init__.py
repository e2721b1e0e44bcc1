"""Conversations without Qt: records, the SQLite history with its migrations, the session
state machine and the ordered chat list."""
