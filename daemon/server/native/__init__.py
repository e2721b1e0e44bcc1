"""Ollama-compatible native routes (``/api/*``): each translates onto the one inference path
or the model store."""
