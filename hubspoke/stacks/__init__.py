"""Deployment units: each module builds one kind of stack from config (see hubspoke.topology for the order)."""
