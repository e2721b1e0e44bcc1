"""Anthropic-compatible routes (``/v1/messages``): each translates Anthropic's wire format onto
the one inference path, so Anthropic's SDKs and coding agents can use local models."""
