"""OpenAI-compatible routes: each translates its wire format onto the one inference path."""
