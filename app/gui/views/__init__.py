"""Widgets: they forward what the user does to services and draw what services report."""
